#!/usr/bin/env bash
# Link gradients on a real multi-host stack nobody here wrote, against an
# independent constant-delay oracle measured on the same stack.
#
# The stack (Debian's nginx and memcached, one namespace per host, built by
# `nabla testbed up`):
#   client -> proxy (nginx, upstream round robin, keep-alive) -> web1, web2
#   (nginx) -> cache (memcached, through nginx's memcached_pass, keep-alive)
# Two transaction types: /static (proxy -> web only) and /cached (proxy ->
# web -> memcached, the key preloaded with a memcached `set`). 5 hosts,
# 10 one-way links, 20 gradients. Every host runs a keyed nabla-injectd (its
# defaults, as the demo starts it) and nabla-sniffd (500 ms scans, as the demo).
#
# 1. `nabla run` (default schedule, sequential) inside the client's
#    namespace measures every gradient with its CI and its messages per
#    transaction; its "estimated time:" line is kept beside its real time.
# 2. The oracle, per measured link: an open-loop Poisson load of the
#    helper's own (same target, mix, rate and connections; `nabla load` ends
#    its run after calibration when the client cannot keep its schedule, and
#    this one owes nothing to nabla's load generator) runs while
#    `nabla inject --delay D --release sleep` (as the campaign asks)
#    holds a constant delay on the link in
#    alternate windows (PAIRS on/off pairs,
#    the order flipped every pair so a linear drift cancels). Per pair and
#    type: mean response in the on window minus the off window (a guard
#    trimmed at each window's edges); oracle gradient = mean of the pair
#    differences / the delay the injector reports it actually added; its
#    standard error from the spread of the pairs. D is the campaign's
#    amplitude for that link, held within [1 ms, 5 ms].
# 3. A table per link x type: gradient [CI], oracle +- se, within tolerance
#    (10%, or 0.1 absolute where |oracle| < 0.1), CI covers the oracle,
#    messages per transaction [CI] and whether they are >= 0, the waits-not-
#    hops flag, whether the gradient's CI excludes the message count (the
#    flag may fire only then) and whether the oracle says it should fire;
#    then the totals, the estimate against the real time and the load
#    average at start and end.
#
# Needs root. Everything runs in the testbed's namespaces, traffic only to
# their addresses; every load and injection is bounded (count and time).
# On exit (also on failure and Ctrl-C) the testbed is stopped (its
# processes, namespaces, iptables chains go with it), the processes started
# here are killed by pid, and the leftovers are checked.
# Exit 0 whatever the figures; nonzero only when the bench could not run.
#
#   usage: bench/campaign/real_stack.sh BUILD_DIR
# Knobs: NABLA_BENCH_RATE (300) requests/s over both types;
# NABLA_BENCH_PAIRS (6) on/off pairs per link; NABLA_BENCH_WINDOW (3) s per
# window; NABLA_BENCH_SEED (1); NABLA_BENCH_TRIES (3) campaign attempts
# when one fails; NABLA_BENCH_KEEP=1 keeps the work folder.
# Reproduce with:
#   bash bench/campaign/real_stack.sh build
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
nabla=$build/coordinator/nabla
injectd=$build/injector/nabla-injectd
sniffd=$build/sniffer/nabla-sniffd
if [ "$(id -u)" -ne 0 ]; then
  echo "real-stack bench: needs root (namespaces, NFQUEUE)" >&2
  exit 1
fi
for f in "$nabla" "$injectd" "$sniffd"; do
  [ -x "$f" ] || { echo "real-stack bench: $f not built" >&2; exit 1; }
done
for tool in nginx memcached python3; do
  command -v "$tool" >/dev/null || { echo "real-stack bench: $tool not installed" >&2; exit 1; }
done
rate=${NABLA_BENCH_RATE:-300}
pairs=${NABLA_BENCH_PAIRS:-6}
window=${NABLA_BENCH_WINDOW:-3}
seed=${NABLA_BENCH_SEED:-1}
tries=${NABLA_BENCH_TRIES:-3}

work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-real-stack-XXXXXX")
chmod 755 "$work"  # nginx's workers run as nobody
state=$work/testbed.json
tb_pid=
fg_pid=
pids=()
# Long steps run in the background and are waited for, so a signal to this
# script is taken at once and the step is stopped by its pid (a foreground
# child would first run to its end).
run_fg() {
  "$@" &
  fg_pid=$!
  local rc=0
  wait "$fg_pid" || rc=$?
  fg_pid=
  return "$rc"
}
cleanup() {
  set +e
  for pid in $fg_pid "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  if [ -n "$fg_pid" ]; then wait "$fg_pid" 2>/dev/null; fi
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  if [ -n "$tb_pid" ]; then
    if [ -f "$state" ]; then "$nabla" testbed down --state "$state" >/dev/null 2>&1; fi
    kill "$tb_pid" 2>/dev/null
    wait "$tb_pid" 2>/dev/null
    local left
    left=$(ip netns list | grep -c "^nb-$tb_pid-" || true)
    if [ "$left" -ne 0 ]; then echo "real-stack bench: $left namespace(s) of testbed $tb_pid left behind" >&2; fi
  fi
  if [ "${NABLA_BENCH_KEEP:-}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap "exit 130" INT TERM

# Host i (from 0) gets .i+1 of the subnet; checked against the state file.
net=10.231.0
hosts=(client proxy web1 web2 cache)
declare -A addr
for i in "${!hosts[@]}"; do addr[${hosts[$i]}]=$net.$((i + 1)); done

# nginx_conf DIR SERVER_BLOCK [HTTP_EXTRA]: one worker, no access log,
# keep-alive without practical limit, its own prefix.
nginx_conf() {
  mkdir -p "$1/logs"
  cat >"$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  default_type text/plain;
  keepalive_requests 100000000;
  keepalive_timeout 3600s;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
$3
  server {
$2
  }
}
CONF
}
nginx_conf "$work/proxy" "    listen ${addr[proxy]}:80;
    location / {
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
    }" "  upstream backends {
    server ${addr[web1]}:80;
    server ${addr[web2]}:80;
    keepalive 32;
    keepalive_requests 100000000;
    keepalive_timeout 3600s;
  }"
for web in web1 web2; do
  nginx_conf "$work/$web" "    listen ${addr[$web]}:80;
    location = /static { return 200 \"static $web\\n\"; }
    location = /cached {
      set \$memcached_key page;
      memcached_pass cache;
    }" "  upstream cache {
    server ${addr[cache]}:11211;
    keepalive 16;
    keepalive_requests 100000000;
    keepalive_timeout 3600s;
  }"
done

key=$work/nabla.key
"$nabla" key new "$key" >/dev/null
mkdir -p "$work/logs"
{
  echo "subnet = \"$net.0/24\""
  for h in "${hosts[@]}"; do
    echo "[[host]]"
    echo "name = \"$h\""
    echo "[[host.process]]"
    echo "argv = [\"$sniffd\", \"--listen\", \"{$h}:7312\", \"--key-file\", \"$key\", \"--interval\", \"500ms\"]"
    echo "output = \"$work/logs/$h-sniffd.log\""
    echo "[[host.process]]"
    echo "argv = [\"$injectd\", \"--listen\", \"{$h}:7311\", \"--key-file\", \"$key\"]"
    echo "output = \"$work/logs/$h-injectd.log\""
    case $h in
      proxy | web1 | web2)
        echo "[[host.process]]"
        echo "argv = [\"nginx\", \"-p\", \"$work/$h\", \"-c\", \"$work/$h/nginx.conf\"]"
        echo "output = \"$work/logs/$h-nginx.log\"" ;;
      cache)
        echo "[[host.process]]"
        echo "argv = [\"memcached\", \"-l\", \"{cache}\", \"-p\", \"11211\", \"-U\", \"0\", \"-u\", \"nobody\", \"-t\", \"1\"]"
        echo "output = \"$work/logs/cache-memcached.log\"" ;;
    esac
  done
} >"$work/testbed.toml"

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
bench_start=$(date +%s)
"$nabla" testbed up "$work/testbed.toml" --state "$state" --for 2h >"$work/logs/testbed.log" 2>&1 &
tb_pid=$!
for _ in $(seq 100); do
  [ -s "$state" ] && grep -q '"switch"' "$state" 2>/dev/null && break
  kill -0 "$tb_pid" 2>/dev/null || { cat "$work/logs/testbed.log" >&2; exit 1; }
  sleep 0.1
done
ns_client=$(python3 -c 'import json,sys; print(next(h["namespace"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]=="client"))' "$state")
python3 - "$state" "${hosts[@]}" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
for i, name in enumerate(sys.argv[2:]):
    got = next(h["address"] for h in st["hosts"] if h["name"] == name)
    if got != f"10.231.0.{i + 1}":
        sys.exit(f"real-stack bench: {name} got {got}, expected 10.231.0.{i + 1}")
PY
in_client() { ip netns exec "$ns_client" "$@"; }
client=(ip netns exec "$ns_client")  # for steps run by pid: no subshell between
ns_of() { python3 -c 'import json,sys; print(next(h["namespace"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]==sys.argv[2]))' "$state" "$1"; }
# The web servers and the cache: listening, seen from inside their hosts.
for hp in web1:80 web2:80 cache:11211; do
  port=${hp#*:} ns=$(ns_of "${hp%:*}")
  for _ in $(seq 150); do
    [ -n "$(ip netns exec "$ns" ss -Hltn "sport = :$port")" ] && break
    sleep 0.1
  done
  [ -n "$(ip netns exec "$ns" ss -Hltn "sport = :$port")" ] || { echo "real-stack bench: nothing listens on $hp" >&2; exit 1; }
done

# Wait for every listener, preload the cache, check both types answer.
in_client python3 - "$net" <<'PY'
import socket, sys, time
net = sys.argv[1]
# Only the daemons and the proxy are tried from here: a connection to a web
# server or the cache would be a flow, hence a link, of its own.
want = [(f"{net}.{i}", p) for i in range(1, 6) for p in (7311, 7312)] + [(f"{net}.2", 80)]
deadline = time.time() + 15
for host, port in want:
    while True:
        try:
            socket.create_connection((host, port), 0.2).close(); break
        except OSError:
            if time.time() > deadline: sys.exit(f"real-stack bench: nothing listens on {host}:{port}")
            time.sleep(0.1)
value = b"cached page\n"
s = socket.create_connection((f"{net}.5", 11211), 2)
s.sendall(b"set page 0 0 %d\r\n%s\r\n" % (len(value), value))
if s.recv(100) != b"STORED\r\n": sys.exit("real-stack bench: memcached did not store the key")
s.close()
seen = set()
for path in ("/static", "/cached"):
    for i in range(4):
        c = socket.create_connection((f"{net}.2", 80), 2)
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := c.recv(4096): data += chunk
        c.close()
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"): sys.exit(f"real-stack bench: {path}: {head[:60]!r}")
        seen.add(body.strip().decode())
print("stack answers:", ", ".join(sorted(seen)))
PY

# 1. The campaign.
{
  echo "name = \"real-stack\""
  echo "seed = $seed"
  echo "key_file = \"$key\""
  echo "db = \"$work/campaign.db\""
  for h in "${hosts[@]}"; do
    echo "[[node]]"
    echo "name = \"$h\""
    echo "address = \"${addr[$h]}\""
    echo "injectd = \"${addr[$h]}:7311\""
    echo "sniffd = \"${addr[$h]}:7312\""
  done
  echo "[workload]"
  echo "target = \"http://${addr[proxy]}:80\""
  echo "rate = $rate"
  echo "connections = 16"
  echo "mix = { \"/static\" = 1, \"/cached\" = 1 }"
  echo "[links]"
  # The preloading set is no part of the service; nor is the loopback flow
  # to port 9 a UDP injection leaves in every host (the warm-up uses TCP;
  # docs/benchmarks.md, "Real stack with an independent oracle").
  echo "exclude = [\"tcp ${addr[client]}:* -> ${addr[cache]}:11211\", \"tcp ${addr[cache]}:11211 -> ${addr[client]}:*\","
  echo "           \"udp 127.0.0.1:* -> 127.0.0.1:9\", \"tcp 127.0.0.1:* -> 127.0.0.1:9\"]"
} >"$work/campaign.toml"
echo "load average at start: $load_start"
run_load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# The first inject.start in a fresh namespace sets up the injector's chains
# and queue and can take longer than the coordinator allows on a busy
# machine (docs/benchmarks.md, "Real stack with an independent oracle"):
# one short injection on each node first, on a link nothing uses.
for h in "${hosts[@]}"; do
  in_client timeout 20 "$nabla" inject --node "${addr[$h]}:7311" --key-file "$key" \
    --link "tcp ${addr[$h]}:9 -> $net.254:9" --delay 1ms --for 200ms --lease 3 \
    >>"$work/logs/warm-inject.log" 2>&1 || true
done

# A campaign that fails on a transient (an inject.start slower than the
# coordinator's slack on a busy machine) is run again, at most $tries times.
for attempt in $(seq "$tries"); do
  t0=$(date +%s.%N)
  rc=0
  run_fg "${client[@]}" timeout 3600 "$nabla" run "$work/campaign.toml" --json >"$work/campaign.json" 2>"$work/campaign.log" || rc=$?
  t1=$(date +%s.%N)
  [ "$rc" -eq 0 ] && break
  echo "campaign attempt $attempt: exit $rc: $(grep -m1 'error' "$work/campaign.log" || tail -1 "$work/campaign.log")"
done
run_load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "campaign: exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall clock, load average $run_load_start -> $run_load_end"
if [ "$rc" -ne 0 ] && ! python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j.get("gradients") else 1)' "$work/campaign.json" 2>/dev/null; then
  tail -5 "$work/campaign.log" >&2
  echo "real-stack bench: the campaign measured nothing" >&2
  exit 1
fi

# 2. The oracle, link by link.
python3 "$here/real_stack.py" plan "$work/campaign.json" "$net" >"$work/plan.txt"
: >"$work/windows.txt"
i=0
while IFS='|' read -r label node_addr spec delay_us; do
  i=$((i + 1))
  total=$((pairs * 2 * window + 4))
  "${client[@]}" timeout $((total + 10)) python3 "$here/real_stack.py" load "${addr[proxy]}" 80 "$rate" \
    "$total" "$((seed * 100 + i))" "$work/oracle-$i.csv" 2>"$work/oracle-$i.log" &
  load_pid=$!
  pids+=("$load_pid")
  sleep 2
  for p in $(seq "$pairs"); do
    if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
    for kind in $order; do
      ws=$(date +%s%N)
      if [ "$kind" = on ]; then
        run_fg "${client[@]}" timeout $((window + 10)) "$nabla" inject --node "$node_addr:7311" --key-file "$key" \
          --link "$spec" --delay "${delay_us}us" --release sleep --for "${window}s" --lease 3 --seed "$p" --json \
          >"$work/inject-$i-$p.json" 2>"$work/inject-$i-$p.log" || true
      else
        run_fg sleep "$window"
      fi
      echo "$i|$label|$p|$kind|$ws|$(date +%s%N)" >>"$work/windows.txt"
    done
  done
  wait "$load_pid" || true
  pids=()
done <"$work/plan.txt"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. The table.
python3 "$here/real_stack.py" report "$work" "$(python3 -c "print($t1 - $t0)")"
echo "load average: $load_start at start, $load_end at end; bench $(($(date +%s) - bench_start)) s"
echo "machine: $(nproc) cores; rate $rate/s, $pairs on/off pairs of ${window} s per link"
echo "command: ${NABLA_BENCH_RATE:+NABLA_BENCH_RATE=$rate }${NABLA_BENCH_PAIRS:+NABLA_BENCH_PAIRS=$pairs }${NABLA_BENCH_WINDOW:+NABLA_BENCH_WINDOW=$window }${NABLA_BENCH_SEED:+NABLA_BENCH_SEED=$seed }bash bench/campaign/real_stack.sh $build"
