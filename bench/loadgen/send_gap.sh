#!/usr/bin/env bash
# The load generator's own share of what it reports, against real servers on
# 127.0.0.1: for redis, memcached and nginx at 2k, 5k and 10k requests/s,
# `nabla load` with default flags (self-calibrated send timer) beside
# `--spin 0` (sleep only) and `--spin 100us` (a fixed window), each printing
#   gap = sojourn p50 - in-flight p50
# (sojourn: receive - intended send; in-flight: receive - actual send), i.e.
# how much of the median the client's own send lateness adds. Target for the
# default: gap <= 5 us. Also printed: the client's timer lateness p50/p99, the
# lead it chose and the share of the load thread's time spent polling.
# Each server is started here on a free port and stopped by pid on exit.
# Reproduce with:
#   bash bench/loadgen/send_gap.sh build
set -euo pipefail
. "$(dirname "$0")/servers.bash"
build=$(cd "${1:-build}" && pwd)
cmake --build "$build" --target nabla >/dev/null
nabla=$build/coordinator/nabla
for tool in nginx redis-server memcached python3; do
  command -v "$tool" >/dev/null || { echo "send-gap bench: $tool not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
rates=${NABLA_BENCH_GAP_RATES:-2000 5000 10000}
modes=${NABLA_BENCH_GAP_MODES:-auto 0 100us}

bench_work nabla-send-gap

# Servers on the last CPU, the load generator on CPU 0 (when there are two).
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
  server_pin=(taskset -c "$((ncpu - 1))"); cpus_flag=(--cpus 0)
else
  server_pin=(); cpus_flag=()
fi

rport=$(free_port)
"${server_pin[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize no --logfile "$work/redis.log" &
pids+=($!)
mport=$(free_port)
mc_user=(); [ "$(id -u)" -eq 0 ] && mc_user=(-u nobody)
"${server_pin[@]}" memcached -l 127.0.0.1 -p "$mport" -U 0 -t 1 "${mc_user[@]}" &
pids+=($!)
nport=$(free_port)
nginx_conf "$work/nginx" "$nport"
"${server_pin[@]}" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
pids+=($!)
for port in "$rport" "$mport" "$nport"; do wait_listen "$port"; done

targets=("redis redis://127.0.0.1:$rport" "memcached memcache://127.0.0.1:$mport"
         "nginx http://127.0.0.1:$nport/")
echo "send gap = sojourn p50 - in-flight p50 (target for default flags: <= 5 us); 4 connections,"
echo "1 thread, ~4 s per row (--max-duration 4s), percentiles over every kept sample"
printf '%-10s %6s %-8s %9s %9s %8s %15s %8s %8s %s\n' server rate spin sojourn in-flight gap \
  "timer p50/p99" lead polled verdict
for t in "${targets[@]}"; do
  read -r name url <<<"$t"
  for rate in $rates; do
    for mode in $modes; do
      out=$work/$name-$rate-$mode.json
      "$nabla" load --target "$url" --rate "$rate" --connections 4 --threads 1 \
        --percentile 99 --ci-width 10ms --max-duration 4s --spin "$mode" "${cpus_flag[@]}" \
        --json >"$out" 2>"$work/err" || true
      python3 - "$out" "$name" "$rate" "$mode" <<'EOF'
import json, sys
path, name, rate, mode = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception as e:
    print(f"{name:<10} {rate:>6} {mode:<8} failed: {e}")
    sys.exit(0)
p = j if "percentiles" in j else (j.get("points") or j.get("results") or [j])[0]
soj = {x["p"]: x["value_ns"] for x in p.get("sojourn_percentiles", p["percentiles"])}
fl = {x["p"]: x["value_ns"] for x in p["in_flight_percentiles"]}
timer = p["lateness_ns"]["timer"] or {"p50": 0, "p99": 0}
st = p["send_timer"]
us = lambda ns: ns / 1e3
print(f"{name:<10} {rate:>6} {mode:<8} {us(soj[50]):8.1f}u {us(fl[50]):8.1f}u {us(soj[50] - fl[50]):7.1f}u "
      f"{us(timer['p50']):6.1f}/{us(timer['p99']):6.1f}u {us(st['lead_ns']):7.1f}u "
      f"{100 * st['polled_fraction']:7.1f}% {p['verdict']}")
EOF
    done
  done
done
