#!/usr/bin/env bash
# Whether a real-time thread that wakes often makes ordinary threads beside
# it wake sooner, on this machine, in this condition. While a gradient
# campaign's wave is high the injector releases each delayed packet from a
# timer (a SCHED_FIFO wake-up that preempts whatever runs), and while it is
# low it passes packets at once: if those wake-ups let waiting fair-class
# threads run sooner, the service runs faster in step with the wave and
# every type of the link reads low by the same amount. Two ordinary threads
# hand a byte back and forth (300 us of sleep on each side), a SCHED_FIFO 10
# thread wakes every 500 us (twice) or 200 us (once) in alternate 1 s
# windows; the bench prints the hand-off delay on minus off with its
# standard error over 30 window pairs. Needs root. Quiet by default; with
# NABLA_BENCH_BESIDE=build a -j2 build of the project runs beside it. About
# 3.5 minutes.
# Reproduce with:
#   sudo NABLA_BENCH_BESIDE=build bash bench/campaign/rt_neighbour.sh build
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
# shellcheck source=../beside_build.bash
. "$src/bench/beside_build.bash"
if [ "$(id -u)" -ne 0 ]; then
  echo "rt_neighbour bench: needs root (SCHED_FIFO)" >&2
  exit 1
fi
cmake --build "$build" --target rt_neighbour_bench >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-rtn-XXXXXX")
cleanup() {
  stop_beside_build
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM
start_beside_build "$src" "$work"
load=$(cut -d' ' -f1 /proc/loadavg)
steal=$(cpu_steal_jiffies)
for period in 500 500 200; do
  "$build/bench/campaign/rt_neighbour_bench" 30 1000 "$period" 300
done
echo "condition: $condition; load average $load -> $(cut -d' ' -f1 /proc/loadavg);" \
  "steal $(steal_percent_since "$steal")%"
