#!/usr/bin/env bash
# Runs every benchmark script bench/<area>/*.sh with the build directory as its
# argument. Each prints its figures as ratios against a peer or baseline
# measured in the same run, and the command that reproduces it.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for script in "$here"/*/*.sh; do
  [ -e "$script" ] || continue
  echo "=== ${script#$here/}"
  bash "$script" "$build" || { echo "benchmark failed: $script" >&2; status=1; }
done
exit $status
