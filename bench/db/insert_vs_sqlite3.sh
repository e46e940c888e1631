#!/usr/bin/env bash
# Bulk sample insert: nabla's SampleWriter versus the sqlite3 shell's
# `.import --csv`, same 1M rows, same `samples` table (schema v1: STRICT,
# foreign keys, two indexes), same pragmas (WAL, synchronous=NORMAL,
# foreign_keys=ON), same run. Both sides parse the same CSV file.
#   usage: bench/db/insert_vs_sqlite3.sh BUILD_DIR [ROWS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rows=${2:-1000000}
driver=$build/bench/db/db_insert_bench
if [ ! -x "$driver" ]; then
  cmake --build "$build" --target db_insert_bench >/dev/null
fi
command -v sqlite3 >/dev/null || { echo "db bench: sqlite3 shell not installed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-db-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
csv=$work/samples.csv
"$driver" gen "$rows" "$csv"
"$driver" init "$work/template.db"
cp "$work/template.db" "$work/sqlite3.db"
cp "$work/template.db" "$work/nabla.db"

now() { date +%s.%N; }

# Warm the page cache for both sides alike.
cat "$csv" >/dev/null

t0=$(now)
sqlite3 "$work/sqlite3.db" <<SQL
PRAGMA foreign_keys = ON;
PRAGMA synchronous = NORMAL;
.import --csv $csv samples
SQL
t1=$(now)
read -r parse_s insert_s nabla_rows < <("$driver" import "$work/nabla.db" "$csv")
t2=$(now)

# Both databases must hold the same rows.
check='SELECT count(*), sum(send_ns % 1000003), sum(latency_ns), sum(service_ns) FROM samples'
a=$(sqlite3 "$work/sqlite3.db" "$check")
b=$(sqlite3 "$work/nabla.db" "$check")
if [ "$a" != "$b" ]; then
  echo "db bench: databases differ: sqlite3 [$a] nabla [$b]" >&2
  exit 1
fi

awk -v s="$t0" -v m="$t1" -v e="$t2" -v p="$parse_s" -v i="$insert_s" -v n="$rows" 'BEGIN {
  sq = m - s; nb = e - m
  label = (n == 1000000) ? "1M" : n
  printf "db insert %s rows: nabla %.2f s (parse %.2f s + insert %.2f s), sqlite3 .import %.2f s, ratio %.2f (target >= 1.0)\n", label, nb, p, i, sq, sq / nb
}'
echo "reproduce: bash bench/db/insert_vs_sqlite3.sh $build $rows"
