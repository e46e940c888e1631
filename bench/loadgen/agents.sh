#!/usr/bin/env bash
# `nabla load --agent` (nabla-loadd load agents) against its baselines, every
# figure and its baseline measured in this one run, all on 127.0.0.1
# (~2 minutes):
#   (a) merged percentiles: p50 and p99 (with their CIs) of three agents,
#       symmetric + throughput + latency and then three symmetric, against
#       ONE symmetric agent at the same total rate, on a real memcached. The
#       one-agent run is made twice (first and last), so the drift between
#       two identical runs is beside the ratios. Figures: merged/one-agent and
#       whether the CIs overlap.
#   (b) control overhead: the agent's CPU time (utime+stime from
#       /proc/PID/stat, before/after) for the one-agent run against the CPU
#       time of plain `nabla load` (no agent: the local engine) at the same
#       rate and duration (getrusage of the child), and the coordinator's own
#       CPU time beside it. The control bytes each way of that run are
#       counted on the agent's port (an iptables rule without a target in
#       OUTPUT, counting only, deleted on exit; skipped without iptables),
#       and divided by the samples the agent handed back: bytes per sample.
#   (c) latency floor: p50/p99 of `sockperf ping-pong --tcp --full-rtt`, of
#       `nabla load --target sockperf://` and of the same through one
#       latency agent, against the same `sockperf server` at a low rate
#       (as loadgen.sh's (b) does for the plain engine).
# Every run has the same --max-duration and a CI target no run reaches, so a
# run lasts the whole duration unless the controller gives up earlier (its
# rounds keep failing their checks on a busy machine); the verdict is n/a,
# the percentiles and CIs are kept. The CPU ratio is per request sent.
# The agents use the key made here with `nabla key new`, listen on free
# loopback ports, and with memcached and sockperf are stopped by pid on exit.
# This machine has 2 cores: agents on loopback share them with memcached and
# with each other, so (a) shows that merging is right, not scale-out
# (docs/benchmarks.md, "Load agents").
# Reproduce with:
#   bash bench/loadgen/agents.sh build
# Knobs: NABLA_BENCH_AGENT_RATE (total requests/s, 5000),
# NABLA_BENCH_AGENT_DURATION (each run, 15s), NABLA_BENCH_AGENT_CONNS
# (connections per agent, 4).
set -euo pipefail
. "$(dirname "$0")/servers.bash"
build=$(cd "${1:-build}" && pwd)
cmake --build "$build" --target nabla nabla-loadd >/dev/null
nabla=$build/coordinator/nabla
loadd=$build/loadd/nabla-loadd
for tool in memcached sockperf python3; do
  command -v "$tool" >/dev/null || { echo "agents bench: $tool not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
rate=${NABLA_BENCH_AGENT_RATE:-5000}
dur=${NABLA_BENCH_AGENT_DURATION:-15s}
conns=${NABLA_BENCH_AGENT_CONNS:-4}
hz=$(getconf CLK_TCK)
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

bench_work nabla-agents-bench
ipt=()  # the counting rules in force, removed on exit
bench_cleanup_extra() {
  local r
  for r in "${ipt[@]}"; do
    # shellcheck disable=SC2086
    iptables -w -D OUTPUT $r 2>/dev/null || true
  done
}
echo "agents bench: start, load average $(loadavg) on $(nproc) CPUs"

"$nabla" key new "$work/key" >/dev/null
mport=$(free_port)
mc_user=(); [ "$(id -u)" -eq 0 ] && mc_user=(-u nobody)
memcached -l 127.0.0.1 -p "$mport" -U 0 "${mc_user[@]}" &
pids+=($!)
wait_listen "$mport"
target=memcache://127.0.0.1:$mport

# An agent refuses root unless told; the bench runs as root for its iptables
# counters, and its agents only load this machine's memcached.
root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-root)
aport=(); apid=()
for i in 0 1 2; do
  aport[i]=$(free_port)
  "$loadd" --listen "127.0.0.1:${aport[i]}" --key-file "$work/key" --log-level warn \
    "${root_flag[@]}" > "$work/agent$i.log" 2>&1 &
  pids+=($!); apid[i]=$!
  wait_listen "${aport[i]}"
done
agent() { echo "127.0.0.1:${aport[$1]}/$2"; }

# cpu_ticks PID: the process's utime + stime so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
agents_ticks() { local t=0 i; for i in 0 1 2; do t=$((t + $(cpu_ticks "${apid[i]}"))); done; echo "$t"; }

# timed OUT CPUFILE CMD...: runs CMD with stdout to OUT, writes its CPU
# seconds (user + system, getrusage of the child) to CPUFILE.
timed() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
out, cpu, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "w") as f:
    subprocess.run(cmd, stdout=f, stdin=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(cpu, "w").write("%.3f" % (r.ru_utime + r.ru_stime))
PY
}

# run NAME [--agent A ...]: one memcached run; $work/NAME.json, NAME.cpu
# (the coordinator's or plain engine's CPU s), NAME.agents_cpu (the three
# agents' CPU s), NAME.load (load average at its start).
run() {
  local name=$1; shift
  loadavg > "$work/$name.load"
  local before; before=$(agents_ticks)
  timed "$work/$name.json" "$work/$name.cpu" \
    "$nabla" load --target "$target" --rate "$rate" --connections "$conns" --threads 1 \
    --percentile 99 --ci-width 1ns --max-duration "$dur" --json "$@" "${key[@]}"
  python3 -c "print('%.3f' % (($(agents_ticks) - $before) / $hz))" > "$work/$name.agents_cpu"
}
key=(--key-file "$work/key")

# Counting rules for the one-agent run: agent -> coordinator (its replies,
# the sample pages) and coordinator -> agent (the requests).
count_rules=("-o lo -p tcp --sport ${aport[0]} -m comment --comment nabla-agents-bench-$$-out"
             "-o lo -p tcp --dport ${aport[0]} -m comment --comment nabla-agents-bench-$$-in")
counting=0
if command -v iptables >/dev/null; then
  counting=1
  for r in "${count_rules[@]}"; do
    # shellcheck disable=SC2086
    if iptables -w -A OUTPUT $r 2>/dev/null; then ipt+=("$r"); else counting=0; fi
  done
fi
# counted SUFFIX: bytes counted so far by the rule whose comment ends in SUFFIX.
counted() {
  iptables -w -L OUTPUT -n -v -x 2>/dev/null | awk -v c="nabla-agents-bench-$$-$1 " '$0 ~ c {print $2; exit}'
}

# ---------------------------------------------------------------- the runs
if [ "$counting" = 1 ]; then out0=$(counted out); in0=$(counted in); fi
run one --agent "$(agent 0 symmetric)"
if [ "$counting" = 1 ]; then
  echo $(( $(counted out) - out0 )) $(( $(counted in) - in0 )) > "$work/one.bytes"
fi
run mixed --agent "$(agent 0 symmetric)" --agent "$(agent 1 throughput)" --agent "$(agent 2 latency)"
run sym3 --agent "$(agent 0 symmetric)" --agent "$(agent 1 symmetric)" --agent "$(agent 2 symmetric)"
key=()
run plain
key=(--key-file "$work/key")
run one2 --agent "$(agent 0 symmetric)"

# Latency floor: sockperf's own client, the plain engine and one latency
# agent, each against the same sockperf server, 2000 msg/s, 1 connection,
# 30-byte messages (14-byte header + nabla's 16-byte payload; -m 30).
sport=$(free_port)
sockperf server --tcp -i 127.0.0.1 -p "$sport" > "$work/sockperf-server.out" 2>&1 &
pids+=($!)
wait_listen "$sport"
floor() {  # floor NAME [--spin D | --agent A --key-file K]
  local name=$1; shift
  loadavg > "$work/$name.load"
  "$nabla" load --target "sockperf://127.0.0.1:$sport" --rate 2000 --connections 1 --threads 1 \
    --percentile 50,99 --ci-width 1ns --max-duration 4s --json "$@" > "$work/$name.json" || true
}
loadavg > "$work/sockperf.load"
sockperf ping-pong --tcp --full-rtt -i 127.0.0.1 -p "$sport" -t 4 --mps=2000 -m 30 > "$work/sockperf.out" 2>&1 || true
# The plain engine with the fixed spin of loadgen.sh's floor; an agent times
# its own sends (its self-calibrated timer: --spin is not sent to agents).
floor floor_plain --spin 100us
floor floor_agent --agent "$(agent 2 latency)" --key-file "$work/key"

# ---------------------------------------------------------------- figures
python3 - "$work" "$rate" "$dur" "$conns" "$nabla" <<'PY'
import json, os, re, sys
work, rate, dur, conns, nabla = sys.argv[1:6]
def load(n): return json.load(open(os.path.join(work, n + ".json")))
def text(n, ext): return open(os.path.join(work, n + "." + ext)).read().strip()
def pct(j, p, key="percentiles"):
    for e in j[key]:
        if e["p"] == p: return e
    return None
def us(v): return "-" if v is None else "%.1f" % (v / 1000)
def ci(e):
    if e is None: return "-"
    return "%s [%s, %s]" % (us(e["value_ns"]), us(e.get("ci_low_ns")), us(e.get("ci_high_ns")))
def overlap(a, b):
    if None in (a, b) or a.get("ci_low_ns") is None or b.get("ci_low_ns") is None: return "no CI"
    return "yes" if a["ci_low_ns"] <= b["ci_high_ns"] and b["ci_low_ns"] <= a["ci_high_ns"] else "NO"
def late(j): return 100.0 * j["late_sends"] / max(j["sent"], 1)

runs = {"one": "1 symmetric agent (baseline)", "mixed": "symmetric + throughput + latency",
        "sym3": "3 symmetric agents", "one2": "1 symmetric agent again (drift)"}
base = load("one")
print("(a) merged percentiles, memcached on 127.0.0.1, %s requests/s in total, %s each run, "
      "%s connections per agent (the latency agent: 1), 1 thread each; us, [95%% CI]" % (rate, dur, conns))
for n in ["one", "mixed", "sym3", "one2"]:
    j = load(n)
    p50, p99 = pct(j, 50.0), pct(j, 99.0)
    line = "    %-34s p50 %-22s p99 %-24s handed back %7d  thr %6.0f/s  late %.1f%%  verdict %s  (load average %s)" % (
        runs[n], ci(p50), ci(p99), sum(a["samples"] for a in j["agents"]), j["throughput_rps"], late(j),
        j["verdict"], text(n, "load"))
    print(line)
    # After failed calibration rounds the controller stops early, and its
    # percentiles are those of the last calibration round (every sample):
    # say which, as the runs compared may differ.
    if any(x.startswith("calibration failed") for x in j["notes"]):
        print("        percentiles from: the last calibration round only (calibration failed), %.1f s run" % j["elapsed_s"])
    else:
        print("        percentiles from: %d kept samples at 1:%d of the measured rounds, %.1f s run" % (
            j["kept"], j["stride"], j["elapsed_s"]))
    if n != "one":
        b50, b99 = pct(base, 50.0), pct(base, 99.0)
        print("        / one agent: p50 %.2f (CIs overlap: %s), p99 %.2f (CIs overlap: %s)" % (
            p50["value_ns"] / b50["value_ns"], overlap(p50, b50), p99["value_ns"] / b99["value_ns"], overlap(p99, b99)))
    if j["agents"]:
        print("        agents: " + "; ".join("%s %s share %.0f/s sent %d samples %d timer p99 %s late %d" % (
            a["agent"].split(":")[-1], a["kind"], a["share_rps"], a["sent"], a["samples"],
            us(a["timer_lateness_p99_ns"]) + "us", a["late_sends"]) for a in j["agents"]))
    if j["reasons"]:
        print("        first reason: " + j["reasons"][0][:200])
print("    reproduce: nabla-loadd --listen 127.0.0.1:P --key-file K (x3); %s load --target memcache://127.0.0.1:M "
      "--rate %s --connections %s --threads 1 --percentile 99 --ci-width 1ns --max-duration %s --json "
      "--agent 127.0.0.1:P1/symmetric [--agent 127.0.0.1:P2/throughput --agent 127.0.0.1:P3/latency] --key-file K"
      % (nabla, rate, conns, dur))

one, plain = load("one"), load("plain")
a_cpu, c_cpu, p_cpu = float(text("one", "agents_cpu")), float(text("one", "cpu")), float(text("plain", "cpu"))
print("(b) control overhead: CPU seconds (user + system) at %s requests/s for %s, the same flags" % (rate, dur))
print("    plain nabla load (local engine):    %.2f s CPU, %.1f us per request sent (%d sent in %.1f s; load average %s)" % (
    p_cpu, 1e6 * p_cpu / max(plain["sent"], 1), plain["sent"], plain["elapsed_s"], text("plain", "load")))
print("    one symmetric agent, agent process: %.2f s CPU, %.1f us per request sent (%d sent in %.1f s; load average %s)" % (
    a_cpu, 1e6 * a_cpu / max(one["sent"], 1), one["sent"], one["elapsed_s"], text("one", "load")))
print("    one symmetric agent, coordinator:   %.2f s CPU" % c_cpu)
# A run ends early when the controller gives up (its rounds keep failing
# their checks), so the runs' lengths differ: the ratio is per request sent.
per = lambda cpu, j: cpu / max(j["sent"], 1)
print("    ratio per request sent, agent / plain: %.2f; (agent + coordinator) / plain: %.2f  "
      "(per second of run: %.2f and %.2f cores)" % (
      per(a_cpu, one) / per(p_cpu, plain), per(a_cpu + c_cpu, one) / per(p_cpu, plain),
      a_cpu / one["elapsed_s"], p_cpu / plain["elapsed_s"]))
for n in ["mixed", "sym3"]:
    print("    (%s: the three agents %.2f s CPU, coordinator %.2f s)" % (runs[n], float(text(n, "agents_cpu")), float(text(n, "cpu"))))
bpath = os.path.join(work, "one.bytes")
if os.path.exists(bpath):
    out_b, in_b = map(int, open(bpath).read().split())
    samples = sum(a["samples"] for a in one["agents"])
    rounds = max(1, sum(a["rounds"] for a in one["agents"]))
    print("    control traffic of the one-agent run (IP bytes on the agent's port): agent -> coordinator %d B "
          "(%.1f B per sample, %d samples), coordinator -> agent %d B (%.0f B per round, %d rounds)" % (
          out_b, out_b / max(samples, 1), samples, in_b, in_b / rounds, rounds))
else:
    print("    control traffic: not counted (no iptables)")

def sp(p):
    m = re.search(r"percentile %s\.000 =\s*([0-9.]+)" % p, open(os.path.join(work, "sockperf.out")).read())
    return float(m.group(1)) if m else None
s50, s99 = sp(50), sp(99)
fp, fa = load("floor_plain"), load("floor_agent")
print("(c) latency floor on 127.0.0.1 at 2000 msg/s, 1 TCP connection, 30-byte messages, full round trip (us)")
print("    sockperf ping-pong --tcp --full-rtt -> sockperf server: p50 %s  p99 %s  (load average %s)" % (
    s50, s99, text("sockperf", "load")))
for name, j in [("plain nabla load sockperf://", fp), ("one latency agent, sockperf://", fa)]:
    n50, n99 = pct(j, 50.0)["value_ns"] / 1000, pct(j, 99.0)["value_ns"] / 1000
    f50 = pct(j, 50.0, "in_flight_percentiles")
    print("    %-31s from intended send: p50 %.1f  p99 %.1f; in flight p50 %s; %s stamps, %s send timer (lead %s us); sent %d, late %.1f%%  (load average %s)" % (
        name, n50, n99, us(f50["value_ns"]) if f50 else "-", j["timestamp_source"], j["send_timer"]["mode"],
        us(j["send_timer"]["lead_ns"]), j["sent"], late(j),
        text("floor_plain" if j is fp else "floor_agent", "load")))
a50, p50_ = pct(fa, 50.0)["value_ns"] / 1000, pct(fp, 50.0)["value_ns"] / 1000
if s50 is not None:
    print("    p50 difference latency agent - sockperf: %+.1f us; latency agent - plain engine: %+.1f us" % (a50 - s50, a50 - p50_))
print("    reproduce: sockperf server --tcp -i 127.0.0.1 -p S & sockperf ping-pong --tcp --full-rtt -i 127.0.0.1 -p S -t 4 --mps=2000 -m 30;")
print("               %s load --target sockperf://127.0.0.1:S --rate 2000 --connections 1 --percentile 50,99 --ci-width 1ns "
      "--max-duration 4s --json [--spin 100us | --agent 127.0.0.1:P/latency --key-file K]" % nabla)
PY
echo "agents bench: end, load average $(loadavg)"
