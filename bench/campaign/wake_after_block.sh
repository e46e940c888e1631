#!/usr/bin/env bash
# How much later a blocked thread wakes after a long block than after a
# short one, on this machine, in this condition: a thread blocks in poll()
# on a pipe that another thread writes after 0.2, 1, 2, 4, 8 or 16 ms
# (interleaved, 480 waits each), with plain blocks and with the wait sliced
# into 500 us blocks as the demo's tiers do (nabla-tier --wait-slice). A
# tier waiting for a downstream call across a delayed link blocks longer
# while the delay is high, so each such wait pays this excess on top of the
# delay: a gradient reads g + (waits that span the delay) x excess / delta-l
# (docs/method.md, "Where the demo's bias under load came from"). Quiet by
# default; with NABLA_BENCH_BESIDE=build a -j2 build of the project runs
# beside it. About 2 minutes (2.5 with the build's start).
# Reproduce with:
#   bash bench/campaign/wake_after_block.sh build
#   NABLA_BENCH_BESIDE=build bash bench/campaign/wake_after_block.sh build
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
# shellcheck source=../beside_build.bash
. "$src/bench/beside_build.bash"
cmake --build "$build" --target wake_bench >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-wake-XXXXXX")
cleanup() {
  stop_beside_build
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM
start_beside_build "$src" "$work"
load=$(cut -d' ' -f1 /proc/loadavg)
steal=$(cpu_steal_jiffies)
# Plain blocks, then blocks sliced at 500 us as the demo's tiers wait, twice.
rounds=${NABLA_BENCH_WAKE_ROUNDS:-60}
for pass in 1 2; do
  for slice in 0 500; do
    echo "pass $pass, $([ "$slice" = 0 ] && echo "plain blocks" || echo "blocks sliced at $slice us"):"
    "$build/bench/campaign/wake_bench" "$slice" "$rounds" 200 1000 2000 4000 8000 16000
  done
done
echo "condition: $condition; load average $load -> $(cut -d' ' -f1 /proc/loadavg);" \
  "steal $(steal_percent_since "$steal")%"
