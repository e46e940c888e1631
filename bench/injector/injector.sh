#!/usr/bin/env bash
# nabla-injectd throughput and delay accuracy, as ratios against a no-rule
# baseline and against a floor NFQUEUE consumer (accepts everything at once:
# the kernel's queue round trip alone), and beside a naive sleeping NFQUEUE
# delayer, all in one run inside private network namespaces (needs root).
# Checks of the bench itself: injector_bench --aa 1 (the throughput schedule
# with no rule in any blast: every ratio should read 1.00) and
# --qos-carryover 1 (does a released CPU latency limit change what follows).
# Reproduce with:
#   bash bench/injector/injector.sh build
# NABLA_BENCH_SECONDS (default 2: 2 s per accuracy row, 8 throughput rounds)
# and NABLA_BENCH_SPIN_US (default "50,200": one set of accuracy rows per
# --spin-us value). Every daemon runs --cpu-latency-us 0 (off by default):
# it holds a 0 us PM QoS CPU latency limit while it injects, and the
# no-rule baseline runs without one (as the
# machine runs without nabla; NABLA_BENCH_QOS_ALL=1 holds it for every row,
# which slows the baseline and flatters the ratios). With the limit a
# timerfd wake-up here is ~21 us late (p50; 53 us with halting idle), so a
# 50 us spin window covers it. The throughput daemon runs without --rt-priority (the
# daemon's default; injector_bench --throughput-rt P to change it); the
# accuracy daemons run --rt-priority 10 (--accuracy-rt P).
# The throughput daemon runs --busy-poll-us 10 (NABLA_BENCH_BUSY_POLL_US;
# the daemon's default is 0): after a pass that took packets it polls 10 us
# more before sleeping, which at these rates catches the next packet and
# saves the sender a wake-up of the daemon. Measured in 4 interleaved pairs
# of runs: 0.89-0.95 / 0.83-0.86 (out) and 0.86-0.94 / 0.98-1.07 (in)
# against 0.81-0.89 / 0.81-0.85 and 0.79-0.91 / 0.94-1.02 without; 50 us
# was no better than 0 (it takes CPU from the receiver sharing the core).
# The daemon's verdict syscalls, recv calls and wake-ups per packet are
# printed under each row (from inject.stats) to show where its time goes.
#
# tc netem is not in this kernel. On a machine that has it, the peer figure
# for the accuracy table is the same probe run against netem on the sender's
# veth end, e.g. (inside the sender namespace, replacing the injection):
#   ip netns exec <snd> tc qdisc add dev nb-snd0 root netem delay 1ms limit 100000
#   <run the same probes>; ip netns exec <snd> tc qdisc del dev nb-snd0 root
#
# NABLA_BENCH_WAVE_CHECK=1 runs only the wave check instead: a square wave on
# direction out (2 and 0.5 ms, period 240 ms, 1200 and 4800 probes/s, 10 s
# per row), the step the receiver saw (mean one-way delay of the probes sent
# in the high half minus the low half) against the daemon's
# halves.high.mean - halves.low.mean, once per release mode (spin, sleep),
# the daemon with its defaults. With NABLA_BENCH_BESIDE=build a build of the
# project runs beside it (load about 2 on 2 cores):
#   NABLA_BENCH_WAVE_CHECK=1 NABLA_BENCH_BESIDE=build bash bench/injector/injector.sh build
set -euo pipefail
build=${1:-build}
if [ "$(id -u)" != 0 ]; then echo "injector bench: needs root, skipped"; exit 0; fi
cmake --build "$build" --target injector_bench nabla-injectd >/dev/null
if [ "${NABLA_BENCH_WAVE_CHECK:-}" = 1 ]; then
  . "$(dirname "$0")/../beside_build.bash"
  work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-wave-check-XXXXXX")
  trap 'stop_beside_build; rm -rf "$work"' EXIT
  start_beside_build "$(cd "$(dirname "$0")/../.." && pwd)" "$work"
  echo "condition: $condition; load at start $(cut -d' ' -f1-3 /proc/loadavg)"
  "$build/bench/injector/injector_bench" --wave-check 1 --seconds 10
  echo "load at end $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
"$build/bench/injector/injector_bench" --seconds "${NABLA_BENCH_SECONDS:-2}" \
  --spin-us "${NABLA_BENCH_SPIN_US:-50,200}" --busy-poll-us "${NABLA_BENCH_BUSY_POLL_US:-10}"
