#!/usr/bin/env bash
# nabla-injectd's faults as the receiver sees them: per fault, observed /
# requested (loss and duplication rates, Gilbert–Elliott loss rate and mean
# burst, corruption dropped by the receiver, reorder share, rate limit, the
# jitter's standard deviation), median and range over NABLA_BENCH_RUNS runs
# (default 3), beside tc netem on the sender's veth when the kernel has
# sch_netem; otherwise the netem command lines are printed. Needs root.
# Reproduce with:
#   bash bench/injector/faults.sh build
set -euo pipefail
build=${1:-build}
if [ "$(id -u)" != 0 ]; then echo "fault bench: needs root, skipped"; exit 0; fi
cmake --build "$build" --target fault_bench nabla-injectd >/dev/null
"$build/bench/injector/fault_bench" --runs "${NABLA_BENCH_RUNS:-3}"
