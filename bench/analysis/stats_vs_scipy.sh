#!/usr/bin/env bash
# stats_vs_scipy.sh BUILD_DIR — `nabla analyze tests` against scipy 1.10 +
# statsmodels 0.13.5 (Debian's, /usr/bin/python3) on the same CSV files in the
# same run: Anderson–Darling (expon) on the gaps of t_ns, ADF (constant, AIC
# lag search) and Spearman lag-1 on latency_ns.
#
# For each size (default 100k and 1M rows; override with
# NABLA_STATS_BENCH_ROWS="100000 1000000") it generates a deterministic
# t_ns,latency_ns file (Poisson arrivals at 100k req/s into an M/M/1 queue at
# utilisation 0.02, plus 50 us of network), times both tools end to end as a
# user runs them (process start, CSV parsing, compute, JSON out), prints every
# statistic side by side with its relative difference, the compute-only times
# of both sides, and one summary line:
#   stats 100k: nabla 0.12 s, scipy+statsmodels 189.7 s, speedup 1522.8x, max rel diff 1.5e-11 (...)
# Targets: >= 10x faster, statistics equal to 1e-6 relative. Exits non-zero
# only when a statistic disagrees (speed misses are printed, not failed).
#
# The reference side: statsmodels' default adfuller (AIC search over 0..maxlag)
# takes minutes at 100k rows and does not fit in memory at 1M (it keeps all 121
# fitted models, each with its own copy of the design; killed at 20 GB RSS).
# Above NABLA_STATS_BENCH_FULL_MAX rows (default 200000) the reference runs
# adfuller at the lag nabla chose with autolag=None — the statistic, p-value
# and nobs are still compared, and the speedup printed is then a lower bound.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
rows_list=${NABLA_STATS_BENCH_ROWS:-"100000 1000000"}
full_max=${NABLA_STATS_BENCH_FULL_MAX:-200000}
seed=42
utilization=0.02

driver=$build/bench/analysis/nabla_stats_bench
nabla=$build/coordinator/nabla
for target in nabla_stats_bench nabla; do
  cmake --build "$build" --target "$target" >/dev/null 2>&1 || true
done
[ -x "$driver" ] || { echo "stats_vs_scipy: $driver missing (build target nabla_stats_bench)" >&2; exit 1; }
nabla_cmd=("$nabla" analyze tests)
if [ ! -x "$nabla" ]; then
  # Only while the CLI does not exist yet: the driver runs the same library calls.
  echo "stats_vs_scipy: WARNING: $nabla not built; timing nabla_stats_bench instead of the CLI" >&2
  nabla_cmd=("$driver" tests)
fi

work=$(mktemp -d /tmp/nabla-stats-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b - a) / 1e9 }'; }
label() { case $1 in 1000000) echo 1M ;; 100000) echo 100k ;; *) echo "$1" ;; esac; }

status=0
for rows in $rows_list; do
  name=$(label "$rows")
  csv=$work/series_$rows.csv
  "$driver" generate "$rows" "$seed" "$utilization" "$csv"
  cat "$csv" >/dev/null  # both sides read it from the page cache

  start=$(now_ns)
  if [ "${nabla_cmd[0]}" = "$driver" ]; then
    "${nabla_cmd[@]}" "$csv" >"$work/nabla.json"
  else
    "${nabla_cmd[@]}" "$csv" --json >"$work/nabla.json"
  fi
  nabla_s=$(secs "$start" "$(now_ns)")

  "$driver" tests "$csv" >"$work/driver.json"

  ref_args=("$csv")
  if [ "$rows" -gt "$full_max" ]; then
    lag=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["adf"]["used_lag"])' \
      "$work/nabla.json")
    ref_args+=(--adf-fixed-lag "$lag")
  fi
  echo "stats $name: running scipy+statsmodels on $rows rows (${ref_args[*]:1})..." >&2
  start=$(now_ns)
  "$py" "$here/reference_tests.py" "${ref_args[@]}" >"$work/ref.json"
  ref_s=$(secs "$start" "$(now_ns)")

  "$py" "$here/compare_stats.py" "$name" "$work/nabla.json" "$nabla_s" "$work/ref.json" "$ref_s" \
    "$work/driver.json" || status=1
done
echo "reproduce: bash bench/analysis/stats_vs_scipy.sh $build   (NABLA_STATS_BENCH_ROWS=\"$rows_list\")"
exit $status
