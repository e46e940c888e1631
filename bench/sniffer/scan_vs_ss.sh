#!/usr/bin/env bash
# Sniffer scan CPU time versus `ss -tinp` on the same 1k and 10k loopback
# sockets in a private namespace, same run (target ratio nabla/ss <= 1.0);
# then the churn row: nabla-sniffd's CPU while a client opens 2,000
# connections per second for 10 s, against `ss -tinp` polled at the same
# 200 ms interval, and how many connections the sniffer missed (target 0).
# Needs root.
#   usage: bench/sniffer/scan_vs_ss.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-11}
driver=$build/bench/sniffer/sniffer_scan_bench
churn=$build/bench/sniffer/sniffer_churn_bench
if [ ! -x "$driver" ] || [ ! -x "$churn" ]; then
  cmake --build "$build" --target sniffer_scan_bench sniffer_churn_bench >/dev/null
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "sniffer bench: needs root (network namespace, fd limit)" >&2
  exit 1
fi
for n in 1000 10000; do
  "$driver" "$n" "$rounds"
done
"$churn" "$build/sniffer/nabla-sniffd" 2000 10 200
echo "command: bash bench/sniffer/scan_vs_ss.sh $build $rounds"
