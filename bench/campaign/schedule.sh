#!/usr/bin/env bash
# The simultaneous schedule against the sequential one on the demo's
# testbed, same seed, same machine, one after the other: each run's wall
# time, campaign phases' time, and how many gradients PASS (the demo's
# acceptance rule). The target (docs/method.md, "Simultaneous schedule"):
# every gradient the sequential run passes also passes, in at most a third
# of the time. Needs root (the demo builds namespaces).
#   usage: bench/campaign/schedule.sh BUILD_DIR [full|quick]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
size=${2:-full}
nabla=$build/coordinator/nabla
if [ "$(id -u)" -ne 0 ]; then
  echo "schedule bench: needs root (the demo builds network namespaces)" >&2
  exit 1
fi
[ -x "$nabla" ] || cmake --build "$build" --target nabla >/dev/null
flags=()
[ "$size" = quick ] && flags+=(--quick)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for schedule in sequential simultaneous; do
  "$nabla" demo "${flags[@]}" --schedule "$schedule" --db "$work/$schedule.db" --json \
    >"$work/$schedule.json" 2>"$work/$schedule.log" || true
done
python3 - "$work" <<'PY'
import json, sqlite3, sys
work = sys.argv[1]
rows = {}
for s in ("sequential", "simultaneous"):
    j = json.load(open(f"{work}/{s}.json"))
    grads = j.get("gradients", [])
    passed = sum(1 for g in grads if g.get("pass"))
    # The campaign's own time is its stored run row; the demo's wall time
    # adds the testbed and the tail-latency step, the same for both.
    db = sqlite3.connect(f"{work}/{s}.db")
    (campaign_s,) = db.execute(
        "SELECT (ended_ns - started_ns) / 1e9 FROM runs WHERE id = ?", (j.get("run_id"),)
    ).fetchone() or (0.0,)
    phases = db.execute(
        "SELECT kind, COUNT(*), SUM(ended_ns - started_ns) / 1e9 FROM phases "
        "WHERE run_id = ? GROUP BY kind ORDER BY MIN(started_ns)", (j.get("run_id"),)
    ).fetchall()
    rows[s] = (campaign_s or 0.0, passed, len(grads), j.get("exit_code"))
    print(f"{s:13s} campaign {rows[s][0]:7.1f} s  demo wall {j.get('duration_s', 0.0):7.1f} s  "
          f"PASS {passed}/{len(grads)}  exit {rows[s][3]}")
    print("              phases: " + ", ".join(f"{k} {n}x {t:.1f} s" for k, n, t in phases))
seq, sim = rows["sequential"], rows["simultaneous"]
def passing(s):
    return {(g["link"], g["type"]) for g in json.load(open(f"{work}/{s}.json")).get("gradients", []) if g.get("pass")}
lost = sorted(passing("sequential") - passing("simultaneous"))
print(f"passed sequentially but not simultaneously: {len(lost)}")
by_key = {(g["link"], g["type"]): g for g in json.load(open(f"{work}/simultaneous.json")).get("gradients", [])}
for link, t in lost:
    g = by_key.get((link, t), {})
    print(f"  {link} {t}: truth {g.get('truth')} simultaneous {g.get('value', float('nan')):.3f} "
          f"[{g.get('ci_low', float('nan')):.3f}, {g.get('ci_high', float('nan')):.3f}] {g.get('why', '')}")
if seq[0] > 0:
    print(f"simultaneous / sequential campaign time: {sim[0] / seq[0]:.2f} (target <= 0.33)")
PY
echo "command: bash bench/campaign/schedule.sh $build $size"
