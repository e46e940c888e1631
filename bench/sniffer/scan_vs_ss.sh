#!/usr/bin/env bash
# Sniffer scan CPU time versus `ss -tinp` on the same 1k and 10k loopback
# sockets in a private namespace, same run (target ratio nabla/ss <= 1.0).
# Needs root.
#   usage: bench/sniffer/scan_vs_ss.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-11}
driver=$build/bench/sniffer/sniffer_scan_bench
if [ ! -x "$driver" ]; then
  cmake --build "$build" --target sniffer_scan_bench >/dev/null
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "sniffer bench: needs root (network namespace, fd limit)" >&2
  exit 1
fi
for n in 1000 10000; do
  "$driver" "$n" "$rounds"
done
echo "command: bash bench/sniffer/scan_vs_ss.sh $build $rounds"
