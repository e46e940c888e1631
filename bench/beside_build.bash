# Shared by the bench scripts (sourced, not run by bench/run.sh): with
# NABLA_BENCH_BESIDE=build, a build of this project (its own build tree in
# WORK/beside, cleaned and rebuilt in a loop, -j2: load about 2 on 2 cores)
# runs beside the measurements. Sets `condition` for the output and
# `beside_pid`, the loop's process group, which stop_beside_build ends.
#   usage: start_beside_build SRC_DIR WORK_DIR

beside_pid=
condition="quiet machine"

start_beside_build() {
  [ "${NABLA_BENCH_BESIDE:-}" = build ] || return 0
  cmake -S "$1" -B "$2/beside" -G Ninja -DNABLA_BUILD_TESTS=OFF >/dev/null
  set -m
  ( while :; do ninja -C "$2/beside" -t clean >/dev/null; ninja -C "$2/beside" -j2 >/dev/null 2>&1 || true; done ) &
  beside_pid=$!
  set +m
  condition="a build of the project running beside it (-j2)"
  sleep 20  # let the build reach its compile phase
}

stop_beside_build() {
  if [ -n "$beside_pid" ]; then
    kill -- -"$beside_pid" 2>/dev/null || true
    wait "$beside_pid" 2>/dev/null || true
  fi
}

# The hypervisor's steal and all CPU time so far, in jiffies ("STEAL TOTAL",
# from /proc/stat's cpu line): two readings around a measurement give the
# share of its CPU time the host took away, the part of the condition that
# no load average shows (an idle guest may be left alone while a busy one
# loses a quarter of its time).
cpu_steal_jiffies() {
  awk '/^cpu /{ t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t; exit }' /proc/stat
}

# The percentage of CPU time stolen since READING, an earlier output of
# cpu_steal_jiffies.   usage: steal_percent_since "STEAL TOTAL"
steal_percent_since() {
  cpu_steal_jiffies | awk -v before="$1" '{ split(before, b, " ");
    printf "%.1f\n", 100 * ($1 - b[1]) / (($2 - b[2]) > 0 ? $2 - b[2] : 1) }'
}
