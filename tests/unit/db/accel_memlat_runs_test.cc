// Runs of `nabla accel` and `nabla memlat` in the history: the migration
// that admits their kinds rebuilds `runs` and keeps every row and view that
// refers to it; the rows the two commands write come back through the typed
// reads; the constraints refuse what cannot be a result.
#include <gtest/gtest.h>

#include <string>

#include "nabla/db/migrations.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "run_start.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

using testing::a_run;
using testing::kT0;

// The step that creates accel_results: found by its text, so the test holds
// whatever number the migration ends up with.
std::size_t accel_step() {
  const auto steps = builtin_migrations();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].find("CREATE TABLE accel_results") != std::string_view::npos) return i;
  }
  ADD_FAILURE() << "no migration creates accel_results";
  return steps.size();
}

std::int64_t count(Database& db, const std::string& sql) {
  return std::get<std::int64_t>(query(db, sql).rows[0][0]);
}

TEST(AccelMemlatRuns, MigrationKeepsEveryRunAndWhatRefersToIt) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("old.db"));
  const std::size_t step = accel_step();
  ASSERT_EQ(migrate(db, builtin_migrations().first(step)), static_cast<int>(step));
  db.exec(
      "INSERT INTO campaigns (id, name, created_ns) VALUES (1, 'c', 1);"
      "INSERT INTO runs (id, campaign_id, kind, status, tool_version, started_ns, ended_ns, "
      "pid, pid_start_ticks, boot_id) VALUES (1, 1, 'run', 'complete', 't', 1, 2, 1, 1, 'b');"
      "INSERT INTO runs (id, kind, tool_version, seed, started_ns, pid, pid_start_ticks, "
      "boot_id) VALUES (2, 'load', 't', 9, 3, 1, 1, 'b');"
      "INSERT INTO links (id, run_id, proto, src_host, dst_host) VALUES (1, 1, 'tcp', 'a', 'b');"
      "INSERT INTO transaction_types (id, name) VALUES (7, 'get');"
      "INSERT INTO samples (run_id, send_ns, latency_ns, type_id, ts_source) "
      "VALUES (2, 3, 10, 7, 1);"
      "INSERT INTO gradients (run_id, link_id, type_id, value) VALUES (1, 1, 7, 1.5);"
      "INSERT INTO memlat (run_id, t_ns, interval_ns, latency_ns, cycles, ref_cycles, "
      "outstanding, requests, target) VALUES (2, 4, 1, 90, 1, 1, 1, 1, 'system');");
  EXPECT_EQ(migrate(db), static_cast<int>(schema_version()) - static_cast<int>(step));
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(count(db, "SELECT seed FROM runs WHERE id = 2"), 9);
  EXPECT_EQ(count(db, "SELECT count(*) FROM run_summary WHERE samples = 1 OR gradients = 1"), 2);
  EXPECT_EQ(count(db, "SELECT count(*) FROM latest_gradients"), 1);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM sqlite_schema WHERE name IN "
                  "('runs_by_campaign', 'runs_by_status')"),
            2);
  EXPECT_EQ(count(db, "SELECT count(*) FROM memlat WHERE imc_latency_ns IS NULL"), 1);
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());
  EXPECT_EQ(query(db, "PRAGMA integrity_check").rows[0][0], Value(std::string("ok")));
  EXPECT_EQ(count(db, "PRAGMA foreign_keys"), 1);
  // The new kinds are accepted; an unknown one still is not.
  const std::string insert =
      "INSERT INTO runs (kind, tool_version, started_ns, pid, pid_start_ticks, boot_id) VALUES ";
  EXPECT_NO_THROW(db.exec(insert + "('accel', 't', 5, 1, 1, 'b'), ('memlat', 't', 5, 1, 1, 'b')"));
  EXPECT_THROW(db.exec(insert + "('other', 't', 5, 1, 1, 'b')"), Error);
  // Cascades still reach through the rebuilt table.
  db.exec("DELETE FROM runs WHERE id = 2");
  EXPECT_EQ(count(db, "SELECT count(*) FROM samples"), 0);
  EXPECT_EQ(count(db, "SELECT count(*) FROM memlat"), 0);
  db.exec("DELETE FROM campaigns WHERE id = 1");
  EXPECT_EQ(count(db, "SELECT count(*) FROM gradients"), 0);
}

AccelResult sync_on_chip(std::int64_t run) {
  AccelResult r;
  r.run_id = run;
  r.strategy = "on-chip";
  r.design = "sync";
  r.cycles = 2e9;
  r.alpha = 0.165844;
  r.accel_factor = 6;
  r.offloads_per_s = 298951;
  r.o0 = 10;
  r.l_cycles = 3;
  r.speedup = 1.1578;
  r.latency_reduction = 1.1578;
  return r;
}

TEST(AccelMemlatRuns, AccelRowsWrittenAndReadBack) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("a.db"), kT0);
  const std::int64_t run = store.begin_run(a_run(kT0, RunKind::kAccel));
  AccelResult flags = sync_on_chip(run);
  AccelResult kernel = flags;
  kernel.kernel = "compression";
  kernel.design = "async";
  kernel.cycles_per_byte = 5.63;
  kernel.beta = 1;
  kernel.min_bytes_speedup = 512;  // min_bytes_latency stays NULL: never
  store.add_accel_result(flags);
  store.add_accel_result(kernel);
  AccelProjection p;
  p.run_id = run;
  p.gradient_run_id = run;
  p.link = "app->db";
  p.type_id = store.transaction_type_id("GET /");
  p.added_delay_ns = 250'000;
  p.baseline_ns = 1e6;
  p.predicted_ns = 1.3e6;
  p.ci_low_ns = 1.2e6;
  p.ci_high_ns = 1.4e6;
  store.add_accel_projection(p);
  store.finish_run(run, RunStatus::kComplete, kT0 + 1);

  const auto rows = run_accel_results(store.database(), run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].kernel.has_value());
  EXPECT_EQ(rows[0].speedup, 1.1578);
  EXPECT_FALSE(rows[0].cycles_per_byte.has_value());
  EXPECT_EQ(rows[1].kernel, "compression");
  EXPECT_EQ(rows[1].design, "async");
  EXPECT_EQ(rows[1].min_bytes_speedup, 512);
  EXPECT_FALSE(rows[1].min_bytes_latency.has_value());
  const auto projections = run_accel_projections(store.database(), run);
  ASSERT_EQ(projections.size(), 1u);
  EXPECT_EQ(projections[0].type, "GET /");
  EXPECT_EQ(projections[0].projection.predicted_ns, 1.3e6);
  EXPECT_EQ(projections[0].projection.gradient_run_id, run);
  EXPECT_EQ(find_run(store.database(), run)->kind, RunKind::kAccel);

  AccelResult bad = flags;
  bad.alpha = 1.5;
  EXPECT_THROW(store.add_accel_result(bad), Error);
  bad = flags;
  bad.design = "threads";
  EXPECT_THROW(store.add_accel_result(bad), Error);
  AccelProjection none = p;
  none.predicted_ns.reset();  // without a prediction, a reason is required
  EXPECT_THROW(store.add_accel_projection(none), Error);
}

TEST(AccelMemlatRuns, MemlatProbeAndControllerColumnsWrittenAndReadBack) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("m.db"), kT0);
  const std::int64_t run = store.begin_run(a_run(kT0, RunKind::kMemlat));
  store.add_memlat_probe_point({run, 16 * 1024, 0, 1.2, false});
  store.add_memlat_probe_point({run, 64 << 20, 1, 95.5, true});
  MemlatSample s{run, kT0 + 1, 1'000, 90.5, 2.1, 2.1e9, 2.1e9, 1.4e8, 1e6, "system"};
  s.rpq_occupancy = 3e7;
  s.rpq_inserts = 1e6;
  s.imc_clockticks = 1.2e9;
  s.imc_latency_ns = 39;
  store.add_memlat_sample(s);
  const auto points = run_memlat_probe(store.database(), run);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].buffer_bytes, 16 * 1024);
  EXPECT_FALSE(points[0].huge_pages);
  EXPECT_EQ(points[1].load_threads, 1);
  EXPECT_EQ(points[1].latency_ns, 95.5);
  EXPECT_TRUE(points[1].huge_pages);
  const auto intervals = run_memlat(store.database(), run);
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0].imc_latency_ns, 39);
  EXPECT_EQ(intervals[0].rpq_inserts, 1e6);
  EXPECT_EQ(intervals[0].imc_clockticks, 1.2e9);
  EXPECT_THROW(store.add_memlat_probe_point({run, 0, 0, 1.2, false}), Error);
  EXPECT_THROW(store.add_memlat_probe_point({run, 4096, 0, 0, false}), Error);
}

}  // namespace
}  // namespace nabla::db
