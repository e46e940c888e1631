#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/tests/fuzz for SECONDS each, seeded
# from tests/fuzz/corpus/<name without fuzz_>/. New inputs go to a scratch
# directory (the checked-in corpus is never modified); crash inputs are kept in
# BUILD_DIR/fuzz-artifacts/. Exits non-zero if any fuzzer finds a crash.
#   usage: tests/fuzz/run.sh BUILD_DIR SECONDS
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

shopt -s nullglob
fuzzers=("$build"/tests/fuzz/fuzz_*)
if [[ ${#fuzzers[@]} -eq 0 ]]; then
  echo "fuzz: no fuzzers in $build/tests/fuzz (build target nabla_fuzz_targets first)" >&2
  exit 1
fi
failed=0
for fuzzer in "${fuzzers[@]}"; do
  [[ -x $fuzzer && -f $fuzzer ]] || continue
  name=$(basename "$fuzzer")
  seeds="$here/corpus/${name#fuzz_}"
  work="$scratch/$name"
  mkdir -p "$work"
  echo "fuzz: $name for ${seconds}s (seeds: $seeds)"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
        -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$work")
  [[ -d $seeds ]] && args+=("$seeds")
  if ! "$fuzzer" "${args[@]}" >"$scratch/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of its log (artifacts in $artifacts):" >&2
    tail -n 40 "$scratch/$name.log" >&2
    failed=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$scratch/$name.log" || true
  fi
done
exit $failed
