#!/usr/bin/env bash
# The campaign schedules on the demo's testbed, same seed, same machine,
# run after run: per schedule, how many full demos pass 32/32 (the demo's
# acceptance rule), the campaign's time, its mean perturbation per type
# (the mean response in a measuring phase minus the training's, over the
# gradient rows), how close the printed time estimate came, and the share
# of CPU time the hypervisor stole over each demo (/proc/stat). The
# ratios are taken against the sequential schedule (the default) measured
# in the same bench run (docs/method.md, "Choosing the schedule"). Needs
# root (the demo builds namespaces).
#
# With NABLA_BENCH_BESIDE=build a build of this project (its own build tree
# in a temporary folder, cleaned and rebuilt in a loop, -j2: load about 2 on
# 2 cores) runs beside the demos; it is stopped by its pid on exit.
#
#   usage: bench/campaign/schedule.sh BUILD_DIR [full|quick]
# Knobs: NABLA_BENCH_RUNS (1) demos per schedule, interleaved;
# NABLA_BENCH_SCHEDULES ("sequential simultaneous"); NABLA_BENCH_KEEP=1
# keeps the work folder (every demo's JSON, database and logs). Each demo's
# result is printed as it ends, so a bench stopped early keeps its runs.
# Reproduce with:
#   bash bench/campaign/schedule.sh build full                       # quiet machine
#   NABLA_BENCH_RUNS=10 NABLA_BENCH_BESIDE=build bash bench/campaign/schedule.sh build full
set -euo pipefail
. "$(dirname "$0")/../beside_build.bash"
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
size=${2:-full}
nabla=$build/coordinator/nabla
if [ "$(id -u)" -ne 0 ]; then
  echo "schedule bench: needs root (the demo builds network namespaces)" >&2
  exit 1
fi
[ -x "$nabla" ] || cmake --build "$build" --target nabla >/dev/null
runs=${NABLA_BENCH_RUNS:-1}
read -r -a schedules <<<"${NABLA_BENCH_SCHEDULES:-sequential simultaneous}"
flags=()
[ "$size" = quick ] && flags+=(--quick)

work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-schedule-XXXXXX")
cleanup() {
  stop_beside_build
  if [ "${NABLA_BENCH_KEEP:-}" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap "exit 130" INT TERM
start_beside_build "$src" "$work"

echo "nabla demo ($size) per schedule, $condition; $runs run(s) each, interleaved"
for run in $(seq "$runs"); do
  for schedule in "${schedules[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    steal=$(cpu_steal_jiffies)
    "$nabla" demo "${flags[@]}" --schedule "$schedule" --db "$work/$schedule-$run.db" --json \
      --keep-logs "$work/$schedule-$run.logs" \
      >"$work/$schedule-$run.json" 2>"$work/$schedule-$run.log" || true
    echo "$load $(cut -d' ' -f1 /proc/loadavg) $(steal_percent_since "$steal")" >"$work/$schedule-$run.load"
    # One line per demo as it ends, so a bench stopped early keeps its runs.
    python3 - "$work/$schedule-$run" "$schedule" "$run" <<'PY' || true
import json, sys
base, schedule, run = sys.argv[1:]
try:
    j = json.load(open(base + ".json"))
except (OSError, ValueError):
    print(f"{schedule} run {run}: no result (see {base}.log)", flush=True)
    raise SystemExit
g = j.get("gradients", [])
load = open(base + ".load").read().split()
steal = float(load[2])
misses = "; ".join(f"{x['link']} {x['type']} {x.get('gradient') or 0:.3f} "
                   f"[{x.get('ci_low') or 0:.3f}, {x.get('ci_high') or 0:.3f}]"
                   for x in g if not x.get("pass"))
print(f"{schedule} run {run}: PASS {sum(1 for x in g if x.get('pass'))}/{len(g)} in "
      f"{j.get('duration_s', 0):.0f} s, load {load[0]} -> {load[1]}, steal {steal:.1f}%"
      + (f"; FAIL {misses}" if misses else ""), flush=True)
PY
  done
done

python3 - "$work" "$runs" "${schedules[@]}" <<'PY'
import json, re, sqlite3, statistics, sys
work, runs, schedules = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

def seconds(text):
    total = 0.0
    for number, unit in re.findall(r"([0-9.]+)(ns|us|ms|s|m|h)", text):
        total += float(number) * UNITS[unit]
    return total

def one(schedule, run):
    base = f"{work}/{schedule}-{run}"
    try:
        j = json.load(open(f"{base}.json"))
    except (OSError, ValueError):
        return None
    grads = j.get("gradients", [])
    out = {"passed": sum(1 for g in grads if g.get("pass")), "total": len(grads),
           "exit": j.get("exit_code"), "load": open(f"{base}.load").read().split()}
    db = sqlite3.connect(f"{base}.db")
    row = db.execute("SELECT (ended_ns - started_ns) / 1e9 FROM runs WHERE id = ?",
                     (j.get("run_id"),)).fetchone()
    out["campaign_s"] = (row[0] if row else None) or 0.0
    out["steal"] = float(out["load"][2])
    per_type = {}
    for t, p in db.execute(
            "SELECT tt.name, g.perturbation_ns FROM gradients g "
            "JOIN transaction_types tt ON tt.id = g.type_id "
            "WHERE g.run_id = ? AND g.perturbation_ns IS NOT NULL", (j.get("run_id"),)):
        per_type.setdefault(t, []).append(p)
    out["perturbation_ms"] = {t: statistics.mean(v) / 1e6 for t, v in per_type.items()}
    try:
        run_log = open(f"{base}.logs/nabla-run.log", errors="replace").read()
    except OSError:
        run_log = ""
    m = re.search(r"estimated time: ([^\n,;(]+)", run_log)
    out["estimate_s"] = seconds(m.group(1)) if m else None
    m = re.search(r"estimated time: [^\n]*; up to ([^\n,;(]+) more", run_log)
    out["bound_s"] = out["estimate_s"] + seconds(m.group(1)) if m and out["estimate_s"] else None
    out["repeats"] = run_log.count("(with the phase measured again)")
    out["misses"] = [f"{g['link']} {g['type']} {g.get('gradient', float('nan')):.3f} "
                     f"[{g.get('ci_low', float('nan')):.3f}, {g.get('ci_high', float('nan')):.3f}] "
                     f"truth {g.get('truth')}" for g in grads if not g.get("pass")]
    return out

results = {s: [r for r in (one(s, i) for i in range(1, runs + 1)) if r] for s in schedules}
for s, rs in results.items():
    print(f"\n{s}:")
    for i, r in enumerate(rs, 1):
        est = (f"estimate {r['estimate_s']:.0f} s ({r['estimate_s'] / r['campaign_s']:.2f} of real)"
               if r["estimate_s"] and r["campaign_s"] else "estimate -")
        if r["bound_s"] and r["campaign_s"]:
            est += (f", up to {r['bound_s']:.0f} s ({r['bound_s'] / r['campaign_s']:.2f}); "
                    f"{r['repeats']} phase(s) measured again")
        pert = ", ".join(f"{t} {v:.2f}" for t, v in sorted(r["perturbation_ms"].items()))
        print(f"  run {i}: PASS {r['passed']}/{r['total']} exit {r['exit']}  campaign "
              f"{r['campaign_s']:.1f} s  {est}  load {r['load'][0]} -> {r['load'][1]}  "
              f"steal {r['steal']:.1f}%")
        print(f"         mean perturbation per type (ms): {pert}")
        for miss in r["misses"]:
            print(f"         FAIL {miss}")
    full = sum(1 for r in rs if r["total"] and r["passed"] == r["total"])
    print(f"  all gradients PASS in {full} of {len(rs)} runs")

base = results.get("sequential", [])
if base:
    seq_time = statistics.median(r["campaign_s"] for r in base)
    seq_pert = {}
    for r in base:
        for t, v in r["perturbation_ms"].items():
            seq_pert.setdefault(t, []).append(v)
    for s, rs in results.items():
        if s == "sequential" or not rs:
            continue
        t = statistics.median(r["campaign_s"] for r in rs)
        print(f"\n{s} / sequential, medians of this bench run: campaign time {t / seq_time:.2f} "
              f"(target <= 0.33)")
        for typ in sorted(seq_pert):
            mine = [r["perturbation_ms"][typ] for r in rs if typ in r["perturbation_ms"]]
            if mine:
                ratio = statistics.median(mine) / statistics.median(seq_pert[typ])
                print(f"  {typ}: mean perturbation {statistics.median(mine):.2f} ms / "
                      f"{statistics.median(seq_pert[typ]):.2f} ms = {ratio:.1f} (target <= 2)")
PY
echo "command: ${NABLA_BENCH_RUNS:+NABLA_BENCH_RUNS=$runs }${NABLA_BENCH_BESIDE:+NABLA_BENCH_BESIDE=build }bash bench/campaign/schedule.sh $build $size"
