#!/usr/bin/env bash
# `nabla load` with the README's flags against real memcached and redis on
# 127.0.0.1, run after run: does it answer, and does the client keep its
# schedule? For each server and rate, RUNS runs of
#   nabla load --target URL --rate R --connections 4 --threads 1 --percentile 99 $NABLA_BENCH_FLAGS
# and per run: the verdict and its first reason, the answer (response p99 and
# its CI), the send gap (sojourn p50 - in-flight p50: how much the client's
# own lateness adds at the median; target <= 5 us), the late sends, the
# client's timer lateness p99, the scheduler slice, the run's length and
# the share of CPU time the hypervisor stole over it (/proc/stat).
# The summary counts runs with verdict ok and with gap <= 5 us.
#
# The servers run as a user would start them (default threads, unpinned).
# With NABLA_BENCH_BESIDE=build a build of this project (its own build tree
# in a temporary folder, cleaned and rebuilt in a loop, -j2: load about 2 on
# 2 cores) runs beside the measurements; it is stopped by its pid on exit.
#
# Reproduce with:
#   bash bench/loadgen/real_servers.sh build                       # quiet machine
#   NABLA_BENCH_BESIDE=build bash bench/loadgen/real_servers.sh build
# Knobs: NABLA_BENCH_RUNS (10), NABLA_BENCH_RATES ("2000 4000 8000"),
# NABLA_BENCH_SERVERS ("memcached redis"), NABLA_BENCH_FLAGS (extra flags,
# e.g. "--slice off"), NABLA_BENCH_MAX_DURATION (the flag's default, 120s).
set -euo pipefail
. "$(dirname "$0")/servers.bash"
. "$(dirname "$0")/../beside_build.bash"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
cmake --build "$build" --target nabla >/dev/null
nabla=$build/coordinator/nabla
for tool in redis-server memcached python3; do
  command -v "$tool" >/dev/null || { echo "real-servers bench: $tool not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
runs=${NABLA_BENCH_RUNS:-10}
rates=${NABLA_BENCH_RATES:-2000 4000 8000}
servers=${NABLA_BENCH_SERVERS:-memcached redis}
read -r -a extra <<<"${NABLA_BENCH_FLAGS:-}"
max_duration=${NABLA_BENCH_MAX_DURATION:-120s}

bench_cleanup_extra() { stop_beside_build; }
bench_work nabla-real-servers
trap "exit 130" INT TERM

start_beside_build "$src" "$work"

declare -A url
if [[ " $servers " == *" memcached "* ]]; then
  mport=$(free_port)
  mc_user=(); [ "$(id -u)" -eq 0 ] && mc_user=(-u nobody)
  memcached -l 127.0.0.1 -p "$mport" -U 0 "${mc_user[@]}" &
  pids+=($!); wait_listen "$mport"; url[memcached]=memcache://127.0.0.1:$mport
fi
if [[ " $servers " == *" redis "* ]]; then
  rport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --logfile "$work/redis.log" &
  pids+=($!); wait_listen "$rport"; url[redis]=redis://127.0.0.1:$rport
fi

echo "nabla load against real servers, $condition; $runs runs per row; flags:"
echo "  --connections 4 --threads 1 --percentile 99 --max-duration $max_duration ${extra[*]:-}"
for name in $servers; do
  for rate in $rates; do
    for i in $(seq "$runs"); do
      before=$(cpu_steal_jiffies)
      "$nabla" load --target "${url[$name]}" --rate "$rate" --connections 4 --threads 1 \
        --percentile 99 --max-duration "$max_duration" --seed "$i" "${extra[@]}" --json \
        >"$work/$name-$rate-$i.json" 2>"$work/$name-$rate-$i.err" || true
      steal_percent_since "$before" >"$work/$name-$rate-$i.steal"
    done
  done
done

python3 - "$work" "$servers" "$rates" "$runs" <<'PY'
import json, os, statistics, sys
work, servers, rates, runs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
us = lambda ns: ns / 1e3
def steal_share(base):
    try:
        return float(open(base + ".steal").read())
    except (OSError, ValueError):
        return float("nan")
def pick(ps, p):
    for x in ps or []:
        if x["p"] == p: return x
    return None
print(f"{'server':<10} {'rate':>5} {'run':>3} {'verdict':<7} {'p99':>8} {'p99 CI':>19} {'gap':>6} "
      f"{'late':>6} {'timer p99':>9} {'slice':<8} {'s':>5} {'steal':>6}  first reason")
summary = []
for name in servers:
    for rate in rates:
        ok = gap_ok = 0; p99s = []; secs = []; gaps = []; steals = []
        for i in range(1, runs + 1):
            path = os.path.join(work, f"{name}-{rate}-{i}.json")
            try:
                j = json.load(open(path))
            except Exception:
                err = open(path[:-5] + ".err").read().strip().splitlines()
                print(f"{name:<10} {rate:>5} {i:>3} failed: {err[-1] if err else 'no output'}")
                continue
            resp = pick(j["percentiles"], 99)
            soj50 = pick(j.get("sojourn_percentiles", j["percentiles"]), 50)
            fl50 = pick(j["in_flight_percentiles"], 50)
            gap = us(soj50["value_ns"] - fl50["value_ns"]) if soj50 and fl50 else float("nan")
            late = 100.0 * j["late_sends"] / max(1, j["sent"])
            timer = (j["lateness_ns"]["timer"] or {}).get("p99", 0)
            st = j["send_timer"]
            slice_text = (us(st.get("slice_ns", 0)) and
                          (f"{us(st['slice_ns']):.0f}u" + ("" if st.get("slice_granted") else "!"))) or "off"
            ci = (f"[{us(resp['ci_low_ns']):.0f}, {us(resp['ci_high_ns']):.0f}]"
                  if resp and resp["ci_low_ns"] is not None else "-")
            ok += j["verdict"] == "ok"; gap_ok += gap <= 5.0
            if j["verdict"] == "ok": p99s.append(us(resp["value_ns"]))
            secs.append(j["elapsed_s"]); gaps.append(gap)
            steal = steal_share(path[:-5]); steals.append(steal)
            reason = j["reasons"][0][:70] if j["reasons"] else ""
            print(f"{name:<10} {rate:>5} {i:>3} {j['verdict']:<7} "
                  f"{(us(resp['value_ns']) if resp else float('nan')):7.1f}u {ci:>19} {gap:5.1f}u "
                  f"{late:5.2f}% {us(timer):8.1f}u {slice_text:<8} {j['elapsed_s']:5.1f} {steal:5.1f}%  {reason}")
        summary.append((name, rate, ok, gap_ok, p99s, secs, gaps, steals))
print()
print(f"{'server':<10} {'rate':>5} {'ok':>6} {'gap<=5us':>9} {'median gap':>10} {'median p99 (ok)':>16} {'median s':>9} {'steal':>11}")
for name, rate, ok, gap_ok, p99s, secs, gaps, steals in summary:
    med = f"{statistics.median(p99s):.1f}us" if p99s else "-"
    mg = f"{statistics.median(gaps):.1f}us" if gaps else "-"
    ms = f"{statistics.median(secs):.1f}" if secs else "-"
    st = f"{min(steals):.1f}-{max(steals):.1f}%" if steals else "-"
    print(f"{name:<10} {rate:>5} {ok:>3}/{runs:<2} {gap_ok:>6}/{runs:<2} {mg:>10} {med:>16} {ms:>9} {st:>11}")
PY
