#!/usr/bin/env bash
# Is the demo's high reading under load the instrument's or the service's?
# The demo's campaign beside an independent constant-delay oracle, on the
# demo's own testbed, under the same load.
#
# On a busy 2-core machine `nabla demo` read some gradients 8-12% above
# their structural truth (app -> db:8082 /view 3.2 for 3, db:8082 -> app
# /browse 1.14 for 1). Either (A) the instrument adds delay it does not
# count, or (B) the service's real gradient is above its structural one
# when the tiers share 2 cores with other work. The oracle decides: it
# knows nothing of waves, bins or spectra, only the mean response time
# with a constant delay held on the link against without it.
#
# 1. The demo's testbed, built by `nabla testbed up` from the same
#    description as `nabla demo` (testbed/demo_service.cc: hosts client,
#    web, app, db; tiers web:8080, app:8081, db:8082, audit db:8083, sleep
#    based, 32 workers, 8 for audit; nabla-injectd and nabla-sniffd at 500 ms
#    on every host, keyed).
# 2. The full demo's campaign (coordinator/demo.cc: 600 requests/s, 64
#    connections, N = 256, M = 7, 5 requests per bin, max amplitude 15 ms,
#    one repeat, per-gradient confidence 1 - 0.05/22) on the links where the
#    misses were seen: web <-> app:8081 and app <-> db:8082 (the client's
#    link and the async audit link are excluded to keep the run short).
# 3. The oracle, per link: an open-loop Poisson load of this bench's own
#    (Python, the demo's mix, rate and connections; timed from when the
#    client was ready to send, as the campaign times it) runs while
#    `nabla inject --release sleep` (as the campaign asks) holds the
#    campaign's amplitude D for the link (within [2, 15] ms) in "on"
#    windows and a 0 us delay in "off" windows, so the injector is in the
#    path in both (PAIRS on/off pairs, the order flipped every pair so a
#    linear drift cancels; 0.5 s trimmed at each window's start and 0.2 s at
#    its end). Per pair and type: mean response on minus off; oracle = mean
#    of those differences / (D actually added on - D actually added off),
#    both as the injector reports them; standard error from the pairs.
#    The entry tier's own X-Queue-Ns, X-Service-Time-Ns and X-Downstream-Ns
#    are kept and differenced the same way: where an excess over the truth
#    sits (queueing at web, its CPU time, or below it). Two probes check
#    the injector's accounting: one request at a time over the delayed link
#    itself (web -> app:8081 /auth, app -> db:8082), whose on - off step is
#    the delay a request really met, against the injector's step; and on
#    app <-> db:8082 a /view sent to app from web, whose headers give app's
#    own queue, service and downstream time.
# 4. The table: link, type, truth, campaign gradient [CI], oracle +- se,
#    the delays, and which hypothesis the row supports.
#
# Needs root. NABLA_BENCH_BESIDE=build runs a -j2 build of the project
# beside it (bench/beside_build.bash: load about 2 on 2 cores). On exit
# (also on failure and Ctrl-C) the build, the testbed (processes,
# namespaces, iptables chains) and every process started here are stopped
# by pid, and leftovers are checked. Exit 0 whatever the figures.
#
#   usage: bench/campaign/demo_oracle.sh BUILD_DIR
# Knobs: NABLA_BENCH_BESIDE=build (NABLA_BENCH_BESIDE_NICE, 19: its
# niceness); NABLA_BENCH_PAIRS (8) on/off pairs per
# link; NABLA_BENCH_WINDOW (3) s per window; NABLA_BENCH_SEED (42);
# NABLA_BENCH_SCHEDULE (sequential | simultaneous); NABLA_BENCH_ORACLE_ONLY=1
# skips the campaign (the oracle at NABLA_BENCH_ORACLE_US, 5000 us, on the
# links of NABLA_BENCH_ORACLE_LINKS, comma-separated, by default all four:
# the oracle at several steps tells a linear response from a convex one;
# NABLA_BENCH_SNIFFERS=0 leaves the sniffers out, with the oracle alone, and
# NABLA_BENCH_SNIFFERS=nice runs them at nice 19);
# NABLA_BENCH_KEEP=1 keeps the work folder.
# Reproduce with:
#   NABLA_BENCH_BESIDE=build bash bench/campaign/demo_oracle.sh build
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
nabla=$build/coordinator/nabla
tier=$build/tier/nabla-tier
injectd=$build/injector/nabla-injectd
sniffd=$build/sniffer/nabla-sniffd
if [ "$(id -u)" -ne 0 ]; then
  echo "demo-oracle bench: needs root (namespaces, NFQUEUE)" >&2
  exit 1
fi
for f in "$nabla" "$tier" "$injectd" "$sniffd"; do
  [ -x "$f" ] || { echo "demo-oracle bench: $f not built" >&2; exit 1; }
done
if [ "${NABLA_BENCH_SNIFFERS:-1}" = 0 ] && [ "${NABLA_BENCH_ORACLE_ONLY:-}" != 1 ]; then
  echo "demo-oracle bench: NABLA_BENCH_SNIFFERS=0 needs NABLA_BENCH_ORACLE_ONLY=1 (a campaign discovers its links)" >&2
  exit 2
fi
pairs=${NABLA_BENCH_PAIRS:-8}
window=${NABLA_BENCH_WINDOW:-3}
seed=${NABLA_BENCH_SEED:-42}
schedule=${NABLA_BENCH_SCHEDULE:-sequential}
rate=600
connections=64

work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-demo-oracle-XXXXXX")
state=$work/testbed.json
tb_pid=
fg_pid=
pids=()
# shellcheck source=bench/beside_build.bash
. "$here/../beside_build.bash"
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
  stop_beside_build
  if [ -n "$tb_pid" ]; then
    if [ -f "$state" ]; then "$nabla" testbed down --state "$state" >/dev/null 2>&1; fi
    kill "$tb_pid" 2>/dev/null
    wait "$tb_pid" 2>/dev/null
    local left
    left=$(ip netns list | grep -c "^nb-$tb_pid-" || true)
    if [ "$left" -ne 0 ]; then echo "demo-oracle bench: $left namespace(s) of testbed $tb_pid left behind" >&2; fi
  fi
  if [ "${NABLA_BENCH_KEEP:-}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap "exit 130" INT TERM

# Host i (from 0) gets .i+1 of the subnet, in the order of ServiceModel::hosts().
net=10.232.0
hosts=(client web app db)
declare -A addr
for i in "${!hosts[@]}"; do addr[${hosts[$i]}]=$net.$((i + 1)); done

key=$work/nabla.key
"$nabla" key new "$key" >/dev/null
mkdir -p "$work/logs"
# The tiers exactly as tier::tier_argv() starts them from rubis_demo_service()
# (seeds as DemoTestbed gives them: callees first, seed + 1, + 2, ...).
slice='"--wait-slice", "500000ns"'  # ServiceModel::wait_slice_ns of the demo
# NABLA_BENCH_SNIFFERS=nice: the sniffers at nice 19.
sniff_nice=
[ "${NABLA_BENCH_SNIFFERS:-1}" = nice ] && sniff_nice='"nice", "-n", "19", '

tier_args() {
  case $1 in
    audit) echo "\"$tier\", \"--listen\", \"{db}:8083\", \"--workers\", \"8\", \"--seed\", \"$((seed + 1))\", $slice, \"--url\", \"* service=fixed:50us mode=sleep\"" ;;
    db) echo "\"$tier\", \"--listen\", \"{db}:8082\", \"--workers\", \"32\", \"--seed\", \"$((seed + 2))\", $slice, \"--url\", \"* service=exp:100us mode=sleep\"" ;;
    app) echo "\"$tier\", \"--listen\", \"{app}:8081\", \"--workers\", \"32\", \"--seed\", \"$((seed + 3))\", $slice, \"--tier\", \"audit={db}:8083\", \"--tier\", \"db={db}:8082\", \"--url\", \"/view service=exp:200us mode=sleep call=db:serial:3\", \"--url\", \"/auth service=fixed:100us mode=sleep\", \"--url\", \"/bid service=fixed:100us mode=sleep call=db:serial:1 call=audit:async:/audit\", \"--url\", \"/browse service=fixed:100us mode=sleep call=db:parallel:4\"" ;;
    web) echo "\"$tier\", \"--listen\", \"{web}:8080\", \"--workers\", \"32\", \"--seed\", \"$((seed + 4))\", $slice, \"--tier\", \"app={app}:8081\", \"--url\", \"* service=fixed:50us mode=sleep call=app:serial:1\"" ;;
  esac
}
{
  echo "subnet = \"$net.0/24\""
  for h in "${hosts[@]}"; do
    echo "[[host]]"
    echo "name = \"$h\""
    case $h in
      db) tiers="audit db" ;;
      app | web) tiers=$h ;;
      *) tiers= ;;
    esac
    for t in $tiers; do
      echo "[[host.process]]"
      echo "argv = [$(tier_args "$t")]"
      echo "output = \"$work/logs/tier-$t.log\""
    done
    echo "[[host.process]]"
    echo "argv = [\"$injectd\", \"--listen\", \"{$h}:7311\", \"--key-file\", \"$key\", \"--log-level\", \"warn\"]"
    echo "output = \"$work/logs/$h-injectd.log\""
    if [ "${NABLA_BENCH_SNIFFERS:-1}" != 0 ]; then
      echo "[[host.process]]"
      echo "argv = [${sniff_nice}\"$sniffd\", \"--listen\", \"{$h}:7312\", \"--key-file\", \"$key\", \"--interval\", \"500ms\"]"
      echo "output = \"$work/logs/$h-sniffd.log\""
    fi
  done
} >"$work/testbed.toml"

start_beside_build "$src" "$work"
# The build runs at nice 19 (NABLA_BENCH_BESIDE_NICE), as the other work
# of the machine the misses were seen on did: it takes the idle CPU, and
# what the tiers and daemons meet is its cache and scheduling pressure.
if [ -n "$beside_pid" ]; then
  renice -n "${NABLA_BENCH_BESIDE_NICE:-19}" -g "$beside_pid" >/dev/null
  condition="$condition at nice ${NABLA_BENCH_BESIDE_NICE:-19}"
else
  # A machine shared with other work is not quiet: the load averages
  # printed at the start and the end say what else ran.
  condition="no build of the bench's own beside it"
fi
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
bench_start=$(date +%s)
"$nabla" testbed up "$work/testbed.toml" --state "$state" --for 1h >"$work/logs/testbed.log" 2>&1 &
tb_pid=$!
for _ in $(seq 100); do
  [ -s "$state" ] && grep -q '"switch"' "$state" 2>/dev/null && break
  kill -0 "$tb_pid" 2>/dev/null || { cat "$work/logs/testbed.log" >&2; exit 1; }
  sleep 0.1
done
ns_client=$(python3 -c 'import json,sys; print(next(h["namespace"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]=="client"))' "$state")
python3 - "$state" "$net" "${hosts[@]}" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
for i, name in enumerate(sys.argv[3:]):
    got = next(h["address"] for h in st["hosts"] if h["name"] == name)
    if got != f"{sys.argv[2]}.{i + 1}":
        sys.exit(f"demo-oracle bench: {name} got {got}, expected {sys.argv[2]}.{i + 1}")
PY
client=(ip netns exec "$ns_client")
ns_of() { python3 -c 'import json,sys; print(next(h["namespace"] for h in json.load(open(sys.argv[1]))["hosts"] if h["name"]==sys.argv[2]))' "$state" "$1"; }
"${client[@]}" python3 - "$net" "${NABLA_BENCH_SNIFFERS:-1}" <<'PY'
import socket, sys, time
net = sys.argv[1]
# The daemons everywhere and the entry tier only: a connection from the
# client to app or db would be a link of its own.
ports = (7311,) if sys.argv[2] == "0" else (7311, 7312)
want = [(f"{net}.{i}", p) for i in range(1, 5) for p in ports] + [(f"{net}.2", 8080)]
deadline = time.time() + 20
for host, port in want:
    while True:
        try:
            socket.create_connection((host, port), 0.2).close(); break
        except OSError:
            if time.time() > deadline: sys.exit(f"demo-oracle bench: nothing listens on {host}:{port}")
            time.sleep(0.1)
for path in ("/view", "/auth", "/bid", "/browse"):
    c = socket.create_connection((f"{net}.2", 8080), 2)
    c.sendall(f"GET {path} HTTP/1.1\r\nHost: web\r\n\r\n".encode())
    data = c.recv(4096)
    c.close()
    if not data.startswith(b"HTTP/1.1 200"): sys.exit(f"demo-oracle bench: {path}: {data[:60]!r}")
print("service answers every type")
PY

# The structural truth (testbed/demo_service.cc, true_gradients()).
links="tcp web -> app:8081,tcp app:8081 -> web,tcp app -> db:8082,tcp db:8082 -> app"
echo "$links" >"$work/links.txt"
cat >"$work/truth.json" <<'JSON'
{"tcp web -> app:8081": {"/view": 1, "/auth": 1, "/bid": 1, "/browse": 1},
 "tcp app:8081 -> web": {"/view": 1, "/auth": 1, "/bid": 1, "/browse": 1},
 "tcp app -> db:8082": {"/view": 3, "/auth": 0, "/bid": 1, "/browse": 1},
 "tcp db:8082 -> app": {"/view": 3, "/auth": 0, "/bid": 1, "/browse": 1}}
JSON

# Every node's first injection sets up its chains and queue: one short one
# on a link nothing uses, before anything is timed.
for h in "${hosts[@]}"; do
  "${client[@]}" timeout 20 "$nabla" inject --node "${addr[$h]}:7311" --key-file "$key" \
    --link "tcp ${addr[$h]}:9 -> $net.254:9" --delay 1ms --for 200ms --lease 3 \
    >>"$work/logs/warm-inject.log" 2>&1 || true
done

# 1. The campaign, as coordinator/demo.cc writes it for the full demo.
{
  echo "name = \"demo-oracle\""
  echo "seed = $seed"
  echo "key_file = \"$key\""
  for h in "${hosts[@]}"; do
    echo "[[node]]"
    echo "name = \"$h\""
    echo "address = \"${addr[$h]}\""
    echo "injectd = \"${addr[$h]}:7311\""
    echo "sniffd = \"${addr[$h]}:7312\""
  done
  echo "[workload]"
  echo "target = \"http://${addr[web]}:8080\""
  echo "rate = $rate"
  echo "connections = $connections"
  echo "threads = 1"
  echo "outstanding = 1"
  echo "interarrival = \"exp\""
  echo "timeout = \"1s\""
  echo "warmup = \"1s\""
  echo "mix = { \"/auth\" = 0.25, \"/bid\" = 0.25, \"/browse\" = 0.25, \"/view\" = 0.25 }"
  echo "[links]"
  echo "discover = true"
  echo "discover_for = \"2s\""
  echo "min_messages = 1"
  echo "exclude = [\"tcp ${addr[client]}:* -> ${addr[web]}:8080\", \"tcp ${addr[web]}:8080 -> ${addr[client]}:*\","
  echo "           \"tcp ${addr[app]}:* -> ${addr[db]}:8083\", \"tcp ${addr[db]}:8083 -> ${addr[app]}:*\","
  echo "           \"udp 127.0.0.1:* -> 127.0.0.1:9\", \"tcp 127.0.0.1:* -> 127.0.0.1:9\"]"
  echo "[gradient]"
  echo "schedule = \"$schedule\""
  echo "bins = 256"
  echo "chunks = $([ "$schedule" = simultaneous ] && echo 2 || echo 7)"
  echo "requests_per_bin = 5"
  echo "delay_scale = 30"
  echo "min_bins_per_period = 8"
  echo "max_amplitude = \"15ms\""
  echo "min_amplitude = \"200us\""
  echo "confidence = $(python3 -c 'print(1 - 0.05 / 22)')"
  echo "lease = \"3s\""
  echo "repeats = 1"
  echo "precision = 0"
  echo "[truth]"
  python3 -c '
import json, sys
for label, by_type in json.load(open(sys.argv[1])).items():
    print(json.dumps(label) + " = { " + ", ".join(f"{json.dumps(t)} = {g}" for t, g in by_type.items()) + " }")
' "$work/truth.json"
} >"$work/campaign.toml"
echo "condition: $condition"
echo "load average at start: $load_start"
if [ "${NABLA_BENCH_ORACLE_ONLY:-}" = 1 ]; then
  python3 - "$work/campaign.json" "$links" <<'PY'
import json, sys
json.dump({"links": [], "gradients": []}, open(sys.argv[1], "w"))
PY
  : >"$work/plan.txt"
  d_us=${NABLA_BENCH_ORACLE_US:-5000}
  IFS=',' read -ra ls <<<"${NABLA_BENCH_ORACLE_LINKS:-$links}"
  for l in "${ls[@]}"; do
    case $l in
      "tcp web -> app:8081") echo "$l|${addr[web]}|tcp ${addr[web]}:* -> ${addr[app]}:8081|$d_us" ;;
      "tcp app:8081 -> web") echo "$l|${addr[app]}|tcp ${addr[app]}:8081 -> ${addr[web]}:*|$d_us" ;;
      "tcp app -> db:8082") echo "$l|${addr[app]}|tcp ${addr[app]}:* -> ${addr[db]}:8082|$d_us" ;;
      "tcp db:8082 -> app") echo "$l|${addr[db]}|tcp ${addr[db]}:8082 -> ${addr[app]}:*|$d_us" ;;
      *) echo "demo-oracle bench: no such link in NABLA_BENCH_ORACLE_LINKS: $l" >&2; exit 2 ;;
    esac
  done >"$work/plan.txt"
else
  t0=$(date +%s.%N)
  rc=0
  run_fg "${client[@]}" timeout 1500 "$nabla" run "$work/campaign.toml" --json >"$work/campaign.json" 2>"$work/campaign.log" || rc=$?
  t1=$(date +%s.%N)
  echo "campaign: exit $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  if ! python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j.get("gradients") else 1)' "$work/campaign.json" 2>/dev/null; then
    tail -5 "$work/campaign.log" >&2
    echo "demo-oracle bench: the campaign measured nothing" >&2
    exit 1
  fi
  python3 "$here/demo_oracle.py" plan "$work/campaign.json" "$net" "$links" >"$work/plan.txt"
fi

# 2. The oracle, link by link.
: >"$work/windows.txt"
i=0
while IFS='|' read -r label node_addr spec delay_us; do
  i=$((i + 1))
  total=$((pairs * 2 * (window + 1) + 6))
  "${client[@]}" timeout $((total + 10)) python3 "$here/demo_oracle.py" load "${addr[web]}" 8080 "$rate" \
    "$total" "$((seed * 100 + i))" "$connections" "$work/oracle-$i.csv" 2>"$work/oracle-$i.log" &
  load_pid=$!
  pids+=("$load_pid")
  # The probe: one request at a time over the link itself, from the host on
  # its caller's side (web calls app, app calls db), to a path that calls
  # nothing further.
  case $label in
    *8081*) probe_from=web probe_to=${addr[app]}:8081 probe_path=/auth ;;
    *) probe_from=app probe_to=${addr[db]}:8082 probe_path=/probe ;;
  esac
  ip netns exec "$(ns_of "$probe_from")" timeout $((total + 10)) python3 "$here/demo_oracle.py" probe \
    "${probe_to%:*}" "${probe_to#*:}" "$probe_path" 100 "$total" "$work/probe-$i.csv" 2>"$work/probe-$i.log" &
  probe_pid=$!
  pids+=("$probe_pid")
  # On app <-> db, a second probe one tier up: /view sent to app from web,
  # whose answer carries app's own queue, service and downstream time.
  view_pid=
  case $label in
    *8082*)
      ip netns exec "$(ns_of web)" timeout $((total + 10)) python3 "$here/demo_oracle.py" probe \
        "${addr[app]}" 8081 /view 30 "$total" "$work/probe-view-$i.csv" 2>"$work/probe-view-$i.log" &
      view_pid=$!
      pids+=("$view_pid") ;;
  esac
  sleep 2
  for p in $(seq "$pairs"); do
    if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
    for kind in $order; do
      if [ "$kind" = on ]; then d=${delay_us}us; else d=0us; fi
      ws=$(date +%s%N)
      run_fg "${client[@]}" timeout $((window + 10)) "$nabla" inject --node "$node_addr:7311" --key-file "$key" \
        --link "$spec" --delay "$d" --release sleep --for "${window}s" --lease 3 --seed "$p" --json \
        >"$work/inject-$i-$p-$kind.json" 2>"$work/inject-$i-$p-$kind.log" || true
      echo "$i|$label|$p|$kind|$ws|$(date +%s%N)" >>"$work/windows.txt"
    done
  done
  kill -TERM "$load_pid" "$probe_pid" $view_pid 2>/dev/null || true
  for pid in "$load_pid" "$probe_pid" $view_pid; do wait "$pid" || true; done
  pids=()
  echo "oracle: $label done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done <"$work/plan.txt"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# 3. The table.
python3 "$here/demo_oracle.py" report "$work" "$condition"
echo "load average: $load_start at start, $load_end at end; bench $(($(date +%s) - bench_start)) s"
echo "machine: $(nproc) cores; $rate requests/s, $connections connections, schedule $schedule, $pairs on/off pairs of ${window} s per link"
echo "command: ${NABLA_BENCH_SNIFFERS:+NABLA_BENCH_SNIFFERS=$NABLA_BENCH_SNIFFERS }${NABLA_BENCH_ORACLE_ONLY:+NABLA_BENCH_ORACLE_ONLY=1 }${NABLA_BENCH_ORACLE_US:+NABLA_BENCH_ORACLE_US=$NABLA_BENCH_ORACLE_US }${NABLA_BENCH_ORACLE_LINKS:+NABLA_BENCH_ORACLE_LINKS=\"$NABLA_BENCH_ORACLE_LINKS\" }${NABLA_BENCH_BESIDE:+NABLA_BENCH_BESIDE=$NABLA_BENCH_BESIDE }${NABLA_BENCH_PAIRS:+NABLA_BENCH_PAIRS=$pairs }${NABLA_BENCH_SCHEDULE:+NABLA_BENCH_SCHEDULE=$schedule }bash bench/campaign/demo_oracle.sh $build"
