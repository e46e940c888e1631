#!/usr/bin/env bash
# nabla load over TLS and HTTP/2 beside the peers that speak them, all on
# 127.0.0.1, in one run (about 2-3 minutes):
#   (a) h2: the highest rate `nabla load --target h2://` sustains open loop
#       with < 1% late sends (binary search over 7 rates, up to 2 probes a
#       rate) over h2load's closed-loop requests/s (nghttp2-client, best of
#       2), same connections, one thread each. Target >= 1.0.
#   (b) https: the same against wrk on HTTPS (HTTP/1.1 over TLS), same
#       connections. Target >= 1.0.
#   (c) latency floor: p50 and p99 of `nabla load` at a low rate over h2c://
#       and over http:// (HTTP/1.1) against the same nginx location, and
#       their difference. Both read the kernel's stamps (over h2c a read's
#       RX stamp ends every stream the read closed).
# Concurrency: each closed-loop peer keeps exactly its window in flight
# (h2load -m STREAMS, wrk one request a connection) and so runs the server
# at saturation; an open-loop client at the same mean rate has Poisson
# bursts above that mean, and a cap equal to the peer's window would hold
# those sends back and measure the cap, not the client. So nabla gets the
# headroom the HTTP/1.1 bench gives it (bench/loadgen/loadgen.sh, K=64):
# OPEN_STREAMS streams a connection over h2 and K requests pipelined over
# HTTPS. The server's work per request is the same.
# nginx (one worker, TLS with a certificate made here, HTTP/2) is started
# here with free ports and stopped by pid on exit (trap). With
# NABLA_BENCH_BESIDE=build a build of this project runs beside it (load
# about 2 on 2 cores; bench/beside_build.bash). The run ends with the share
# of CPU time the hypervisor stole over it. Reproduce with:
#   bash bench/loadgen/protocols.sh build                          # quiet machine
#   NABLA_BENCH_BESIDE=build bash bench/loadgen/protocols.sh build
#   NABLA_BENCH_BESIDE=build NABLA_BENCH_RT_PRIORITY=10 bash bench/loadgen/protocols.sh build
# NABLA_BENCH_RT_PRIORITY=P runs every client, peers and nabla alike, and
# nginx SCHED_FIFO at priority P (nabla by --rt-priority, the others by
# chrt), as a user of a shared machine would: beside a build the fair
# scheduler otherwise holds the client off its core for milliseconds, and
# the < 1% late criterion measures the build, not the client (root).
set -euo pipefail
. "$(dirname "$0")/servers.bash"
. "$(dirname "$0")/../beside_build.bash"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
cmake --build "$build" --target nabla >/dev/null
nabla=$build/coordinator/nabla
for tool in nginx wrk h2load openssl python3; do
  command -v "$tool" >/dev/null || { echo "protocols bench: $tool not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
conns=${NABLA_BENCH_CONNS:-4}
streams=${NABLA_BENCH_STREAMS:-32}
open_streams=${NABLA_BENCH_OPEN_STREAMS:-256}
outstanding=${NABLA_BENCH_OUTSTANDING:-64}
late=${NABLA_BENCH_LATE_THRESHOLD:-200us}
spin=${NABLA_BENCH_PROBE_SPIN:-200us}

bench_cleanup_extra() { stop_beside_build; }
bench_work nabla-protocols-bench
trap "exit 130" INT TERM
start_beside_build "$src" "$work"
steal_before=$(cpu_steal_jiffies)
echo "nabla load over TLS and HTTP/2, $condition (load average $(cut -d' ' -f1 /proc/loadavg))"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$work/key.pem" -out "$work/cert.pem" -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
tport=$(free_port); cport=$(free_port); hport=$(free_port)
mkdir -p "$work/nginx/logs"
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  http2_max_concurrent_streams 1024;
  ssl_certificate $work/cert.pem;
  ssl_certificate_key $work/key.pem;
  server {
    listen 127.0.0.1:$tport ssl http2;
    listen 127.0.0.1:$cport http2;
    listen 127.0.0.1:$hport;
    location / { return 200 "ok\n"; }
  }
}
CONF
ncpu=$(nproc)
rt=${NABLA_BENCH_RT_PRIORITY:-0}
if [ "$rt" != 0 ]; then rt_run=(chrt -f "$rt"); rt_flag=(--rt-priority "$rt"); else rt_run=(); rt_flag=(); fi
[ "$rt" = 0 ] || echo "every client and nginx SCHED_FIFO at priority $rt"
if [ "$ncpu" -ge 2 ]; then
  server_pin=(taskset -c "$((ncpu - 1))"); client_pin=(taskset -c 0); cpus_flag=(--cpus 0)
else
  server_pin=(); client_pin=(); cpus_flag=()
fi
"${server_pin[@]}" "${rt_run[@]}" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" &
pids+=($!)
for p in "$tport" "$cport" "$hport"; do wait_listen "$p"; done

# probe TARGET RATE FLAGS...: "late_fraction achieved/target"
probe() {
  local target=$1 rate=$2; shift 2
  "$nabla" load --target "$target" --rate "$rate" --connections "$conns" --threads 1 \
    --max-duration 2s --late-threshold "$late" --spin "$spin" "${cpus_flag[@]}" "${rt_flag[@]}" "$@" \
    --json > "$work/probe.json" 2>/dev/null || { echo "1 0"; return; }
  json "$work/probe.json" "'%.5f %.4f' % (j['late_sends'] / max(j['sent'], 1), j['throughput_rps'] / j['target_rps'])"
}
# sustains TARGET RATE FLAGS...: true when one of up to two probes has < 1%
# late sends and carries >= 98% of the rate (the second only if the first
# fails, as each peer gets its best of two: one host stall of ~20 ms makes
# a 2 s probe 1% late whatever the client does).
sustains() {
  local target=$1 rate=$2 frac ratio attempt; shift 2
  for attempt in 1 2; do
    read -r frac ratio < <(probe "$target" "$rate" "$@")
    echo "    probe $rate/s (try $attempt): late $(python3 -c "print('%.2f' % (100 * $frac))")%, achieved/target $ratio" >&2
    python3 -c "import sys; sys.exit(0 if $frac < 0.01 and $ratio > 0.98 else 1)" && return 0
  done
  return 1
}
# highest TARGET PEER_RPS FLAGS...: binary search over 7 rates up to 2x the
# peer's rate.
highest() {
  local target=$1 peer=$2; shift 2
  local lo=0 hi rate
  hi=$(python3 -c "print(int(float('$peer') * 2))")
  rate=$(python3 -c "print(int(float('$peer')))")
  for _ in 1 2 3 4 5 6 7; do
    if sustains "$target" "$rate" "$@"; then lo=$rate; else hi=$rate; fi
    rate=$(( (lo + hi) / 2 ))
  done
  echo "$lo"
}

# ------------------------------------------------------------------- (a) h2
h2load_rate() {
  "${client_pin[@]}" "${rt_run[@]}" h2load -t1 -c"$conns" -m"$streams" -D 3 "https://127.0.0.1:$tport/" 2>/dev/null |
    awk '/^finished in/ {gsub(",", "", $4); print $4}'
}
h2_peer=$(python3 -c "print(max(float('$(h2load_rate)'), float('$(h2load_rate)')))")
h2_ours=$(highest "h2://127.0.0.1:$tport/" "$h2_peer" --streams-per-connection "$open_streams" --insecure)
echo "(a) h2 (TLS) on nginx, $conns connections, 1 thread; h2load -m$streams, nabla up to $open_streams streams a connection"
echo "    h2load closed loop: $(printf '%.0f' "$h2_peer") requests/s; nabla load open loop (<1% late): $h2_ours requests/s"
echo "    ratio $(python3 -c "print('%.2f' % ($h2_ours / $h2_peer))") (target >= 1.0)"

# ---------------------------------------------------------------- (b) https
wrk_rate() {
  "${client_pin[@]}" "${rt_run[@]}" wrk -t1 -c"$conns" -d3s "https://127.0.0.1:$tport/" | awk '/Requests\/sec/ {print $2}'
}
https_peer=$(python3 -c "print(max(float('$(wrk_rate)'), float('$(wrk_rate)')))")
https_ours=$(highest "https://127.0.0.1:$tport/" "$https_peer" --outstanding "$outstanding" --insecure)
echo "(b) https on nginx, $conns connections, 1 thread; wrk one request in flight a connection, nabla up to $outstanding pipelined"
echo "    wrk closed loop: $(printf '%.0f' "$https_peer") requests/s; nabla load open loop (<1% late): $https_ours requests/s"
echo "    ratio $(python3 -c "print('%.2f' % ($https_ours / $https_peer))") (target >= 1.0)"

# ------------------------------------------------------- (c) latency floor
floor() {
  "$nabla" load --target "$1" --rate 2000 --connections 1 --threads 1 --max-duration 3s \
    --late-threshold "$late" "${cpus_flag[@]}" "${rt_flag[@]}" --json > "$work/floor.json" 2>/dev/null || true
  json "$work/floor.json" "' '.join('%.1f' % (p['value_ns'] / 1000) for p in j['percentiles'] if p['p'] in (50, 99))"
}
read -r h2c_p99 h2c_p50 < <(floor "h2c://127.0.0.1:$cport/")
read -r h1_p99 h1_p50 < <(floor "http://127.0.0.1:$hport/")
echo "(c) latency floor at 2000 requests/s, 1 connection: p50 / p99 in us"
echo "    h2c:      $h2c_p50 / $h2c_p99"
echo "    HTTP/1.1: $h1_p50 / $h1_p99"
echo "    h2c - HTTP/1.1 at p50: $(python3 -c "print('%.1f' % ($h2c_p50 - $h1_p50))") us"
echo "host steal over the run: $(steal_percent_since "$steal_before")% of CPU time (load average $(cut -d' ' -f1 /proc/loadavg))"
