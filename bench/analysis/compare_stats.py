#!/usr/bin/python3
"""Compares `nabla analyze tests --json` with reference_tests.py on one file.

    compare_stats.py LABEL NABLA.json NABLA_WALL_S REF.json REF_WALL_S [DRIVER.json]

Prints every statistic side by side with its relative difference, the
compute-only times (nabla's from nabla_stats_bench's JSON, when given), and one
summary line. Exits 1 when a statistic differs by more than 1e-6 relative (a
correctness failure); speed below target is reported, not failed.
"""
import json
import math
import sys

SPEED_TARGET = 10.0
DIFF_TARGET = 1e-6
KEYS = [
    "anderson_darling.statistic",
    "anderson_darling.critical_values",
    "adf.statistic",
    "adf.p_value",
    "adf.used_lag",
    "spearman.rho",
    "spearman.p_value",
]


def lookup(doc, dotted):
    """Nested ({"adf": {"p_value": ..}}) or flat ({"adf.p_value": ..}) JSON."""
    if dotted in doc:
        return doc[dotted]
    node = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(dotted)
        node = node[part]
    return node


def rel_diff(a, b):
    if a is None or b is None:
        return 0.0 if a is None and b is None else math.inf
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def fmt(v):
    if isinstance(v, list):
        return "[" + ", ".join("%.6g" % x for x in v) + "]"
    if isinstance(v, float):
        return "%.12g" % v
    return str(v)


def main(label, nabla_path, nabla_wall, ref_path, ref_wall, driver_path=None):
    with open(nabla_path) as f:
        nabla = json.load(f)
    with open(ref_path) as f:
        ref = json.load(f)
    nabla_wall, ref_wall = float(nabla_wall), float(ref_wall)

    worst = 0.0
    print("  %-34s %-24s %-24s %s" % ("statistic", "nabla", "scipy/statsmodels", "rel diff"))
    for key in KEYS:
        mine, theirs = lookup(nabla, key), lookup(ref, key)
        if isinstance(theirs, list):
            diffs = [rel_diff(a, b) for a, b in zip(mine, theirs)]
            diff = max(diffs) if len(mine) == len(theirs) else math.inf
        else:
            diff = rel_diff(mine, theirs)
        worst = max(worst, diff)
        note = ""
        if key == "adf.used_lag" and ref["adf"].get("lag_search") == "fixed":
            note = "  (reference lag fixed to nabla's; AIC search not run, see reference_tests.py)"
        print("  %-34s %-24s %-24s %.1e%s" % (key, fmt(mine), fmt(theirs), diff, note))

    secs = ref["seconds"]
    print("  compute only, scipy+statsmodels: parse %.3f s, AD %.3f s, ADF %.3f s, Spearman %.3f s"
          % (secs["parse"], secs["anderson_darling"], secs["adf"], secs["spearman"]))
    if driver_path:
        with open(driver_path) as f:
            mine = json.load(f)["seconds"]
        print("  compute only, nabla (same library, nabla_stats_bench): parse %.3f s, AD %.3f s, "
              "ADF %.3f s, Spearman %.3f s; compute speedup %.0fx, ADF speedup %.0fx"
              % (mine["parse"], mine["anderson_darling"], mine["adf"], mine["spearman"],
                 secs["compute"] / max(mine["compute"], 1e-9),
                 secs["adf"] / max(mine["adf"], 1e-9)))
    speedup = ref_wall / max(nabla_wall, 1e-9)
    fixed = ref["adf"].get("lag_search") == "fixed"
    if fixed:
        # The reference did one ADF regression instead of maxlag + 1: the ratio
        # is a lower bound, and the speed target does not apply to it.
        missed = worst > DIFF_TARGET
        speed_note = "speed target n/a: reference ran 1 of %d ADF fits" % (
            lookup(nabla, "adf.max_lag") + 1 if "max_lag" in nabla.get("adf", {}) else 0)
    else:
        missed = speedup < SPEED_TARGET or worst > DIFF_TARGET
        speed_note = "target >=%gx" % SPEED_TARGET
    print("stats %s: nabla %.2f s, scipy+statsmodels%s %.1f s, speedup %s%.1fx, max rel diff %.1e "
          "(%s, <=%g)%s"
          % (label, nabla_wall, " (ADF at nabla's lag only)" if fixed else "", ref_wall,
             ">=" if fixed else "", speedup, worst, speed_note, DIFF_TARGET,
             "  ** TARGET MISSED **" if missed else ""))
    return 0 if worst <= DIFF_TARGET else 1


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
