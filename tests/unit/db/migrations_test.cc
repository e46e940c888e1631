#include "nabla/db/migrations.hh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "temp_dir.hh"

namespace nabla::db {
namespace {

std::vector<std::string> tables(Database& db) {
  std::vector<std::string> names;
  for (auto& row :
       query(db, "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name")
           .rows) {
    names.push_back(std::get<std::string>(row[0]));
  }
  return names;
}

TEST(Migrations, EmptyFileBecomesCurrentSchemaAndReopenIsNoop) {
  testing::TempDir dir;
  {
    Database db = Database::open(dir.file("m.db"));
    EXPECT_EQ(db.user_version(), 0);
    EXPECT_EQ(migrate(db), schema_version());
    EXPECT_EQ(db.user_version(), schema_version());
  }
  Database db = Database::open(dir.file("m.db"), OpenMode::kReadWrite);
  EXPECT_EQ(migrate(db), 0);
  EXPECT_EQ(db.user_version(), schema_version());
  EXPECT_EQ(query(db, "PRAGMA application_id").rows[0][0], Value(kApplicationId));
  EXPECT_EQ(tables(db), (std::vector<std::string>{"accel_projections",
                                                  "accel_results",
                                                  "campaigns",
                                                  "experiment_checks",
                                                  "experiments",
                                                  "flows",
                                                  "gradient_amplitudes",
                                                  "gradients",
                                                  "injections",
                                                  "latest_gradients",
                                                  "links",
                                                  "load_agents",
                                                  "load_checks",
                                                  "memlat",
                                                  "memlat_probe",
                                                  "nodes",
                                                  "phases",
                                                  "run_summary",
                                                  "runs",
                                                  "samples",
                                                  "tail_over_time",
                                                  "tail_results",
                                                  "timestamp_sources",
                                                  "transaction_types"}));
  EXPECT_EQ(query(db, "PRAGMA integrity_check").rows[0][0], Value(std::string("ok")));
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());
  EXPECT_NO_THROW(require_current_schema(db));
}

TEST(Migrations, StepsApplyInOrderEachInItsOwnTransaction) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("m.db"));
  const std::vector<std::string_view> v2 = {"CREATE TABLE a (x INTEGER)",
                                            "INSERT INTO a VALUES (2)"};
  EXPECT_EQ(migrate(db, std::span(v2).first(1)), 1);
  EXPECT_EQ(db.user_version(), 1);
  EXPECT_EQ(migrate(db, v2), 1);  // only the new step runs
  EXPECT_EQ(db.user_version(), 2);
  EXPECT_EQ(query(db, "SELECT x FROM a").rows.size(), 1u);

  // A failing step is rolled back whole and leaves the version where it was.
  const std::vector<std::string_view> v3 = {v2[0], v2[1],
                                            "CREATE TABLE b (y); INSERT INTO nope VALUES (1)"};
  EXPECT_THROW(migrate(db, v3), Error);
  EXPECT_EQ(db.user_version(), 2);
  EXPECT_EQ(tables(db), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(db.in_transaction());
}

TEST(Migrations, NewerDatabaseIsRefusedWithAClearMessage) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("m.db"));
  migrate(db);
  db.set_user_version(schema_version() + 1);
  try {
    migrate(db);
    FAIL() << "newer schema accepted";
  } catch (const Error& e) {
    const std::string want = "database schema version " + std::to_string(schema_version() + 1) +
                             " is newer than this nabla understands (" +
                             std::to_string(schema_version()) + "); use a newer nabla";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  EXPECT_THROW(require_current_schema(db), Error);
}

TEST(Migrations, ForeignFilesAreNotTouched) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("other.db"));
  db.exec("CREATE TABLE mine (x)");
  try {
    migrate(db);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a nabla database"), std::string::npos);
  }
  EXPECT_EQ(tables(db), (std::vector<std::string>{"mine"}));
  db.set_user_version(1);  // versioned, but someone else's application id
  EXPECT_THROW(migrate(db), Error);
}

TEST(Migrations, ReadOnlyOpenNeedsCurrentSchema) {
  testing::TempDir dir;
  { Database::open(dir.file("m.db")); }
  Database ro = Database::open(dir.file("m.db"), OpenMode::kReadOnly);
  try {
    require_current_schema(ro);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("open it read-write once to migrate"), std::string::npos);
  }
}

// The migration that admits the 'response' metric rebuilds tail_results:
// every stored tail row of an older database is kept, still readable
// through tail_over_time, and the constraint still refuses unknown metrics.
TEST(Migrations, ResponseMetricKeepsEveryStoredTailResult) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("v5.db"));
  const auto steps = builtin_migrations();
  std::size_t step = steps.size();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].find("'response'") != std::string_view::npos) step = i;
  }
  ASSERT_LT(step, steps.size()) << "no migration admits the response metric";
  ASSERT_EQ(migrate(db, steps.first(step)), static_cast<int>(step));
  db.exec(
      "INSERT INTO runs (id, kind, status, tool_version, started_ns, ended_ns, pid, "
      "pid_start_ticks, boot_id) VALUES (1, 'load', 'complete', 't', 1, 2, 1, 1, 'b');"
      "INSERT INTO tail_results (run_id, metric, rate_rps, percentile, value_ns, verdict) "
      "VALUES (1, 'sojourn', 2000, 99, 1e5, 'ok'), (1, 'service', 2000, 99, 5e4, 'ok');");
  EXPECT_THROW(db.exec("INSERT INTO tail_results (run_id, metric, rate_rps, percentile, verdict) "
                       "VALUES (1, 'response', 2000, 99, 'n/a')"),
               Error);
  EXPECT_EQ(migrate(db), static_cast<int>(schema_version()) - static_cast<int>(step));
  EXPECT_EQ(query(db, "SELECT count(*) FROM tail_over_time").rows[0][0], Value(std::int64_t{2}));
  EXPECT_NO_THROW(
      db.exec("INSERT INTO tail_results (run_id, metric, rate_rps, percentile, "
              "value_ns, verdict) VALUES (1, 'response', 2000, 99, 9e4, 'ok')"));
  EXPECT_THROW(db.exec("INSERT INTO tail_results (run_id, metric, rate_rps, percentile, verdict) "
                       "VALUES (1, 'other', 2000, 99, 'n/a')"),
               Error);
  EXPECT_EQ(
      query(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'tail_results_by_run'").rows[0][0],
      Value(std::int64_t{1}));
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());
  db.exec("DELETE FROM runs WHERE id = 1");  // the cascade still reaches the rebuilt table
  EXPECT_EQ(query(db, "SELECT count(*) FROM tail_results").rows[0][0], Value(std::int64_t{0}));
}

// A version-1 database with a campaign's rows keeps every row through the
// migration that rebuilds `phases`: were foreign keys on while the old
// table is dropped, its injections and samples would be deleted with it.
TEST(Migrations, RebuildingPhasesKeepsEveryRowThatReferencesThem) {
  testing::TempDir dir;
  Database db = Database::open(dir.file("v1.db"));
  ASSERT_EQ(migrate(db, builtin_migrations().first(1)), 1);
  db.exec(
      "INSERT INTO runs (id, kind, tool_version, started_ns, pid, pid_start_ticks, boot_id) "
      "VALUES (1, 'run', 't', 1, 1, 1, 'b');"
      "INSERT INTO links (id, run_id, proto, src_host, dst_host) VALUES (1, 1, 'tcp', 'a', 'b');"
      "INSERT INTO transaction_types (id, name) VALUES (7, 'get');"
      "INSERT INTO phases (id, run_id, kind, started_ns) VALUES (1, 1, 'training', 1);"
      "INSERT INTO phases (id, run_id, kind, link_id, started_ns, k_d) "
      "VALUES (2, 1, 'active', 1, 2, 4);"
      "INSERT INTO injections (run_id, phase_id, link_id, waveform, requested_delay_ns, "
      "started_ns) "
      "VALUES (1, 2, 1, 'square', 1000, 2);"
      "INSERT INTO samples (run_id, phase_id, send_ns, latency_ns, type_id, ts_source) "
      "VALUES (1, 2, 3, 10, 7, 1), (1, 1, 1, 10, 7, 1);"
      "INSERT INTO gradients (run_id, link_id, type_id, phase_id, value) VALUES (1, 1, 7, 2, "
      "1.5);");
  EXPECT_EQ(migrate(db), schema_version() - 1);
  EXPECT_EQ(query(db, "SELECT count(*) FROM phases").rows[0][0], Value(std::int64_t{2}));
  EXPECT_EQ(query(db, "SELECT count(*) FROM injections").rows[0][0], Value(std::int64_t{1}));
  EXPECT_EQ(query(db, "SELECT count(*) FROM samples").rows[0][0], Value(std::int64_t{2}));
  EXPECT_EQ(query(db, "SELECT phase_id FROM gradients").rows[0][0], Value(std::int64_t{2}));
  EXPECT_EQ(query(db, "SELECT k_d FROM phases WHERE id = 2").rows[0][0], Value(std::int64_t{4}));
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());
  EXPECT_EQ(query(db, "PRAGMA foreign_keys").rows[0][0], Value(std::int64_t{1}));
  // The new kinds: a simultaneous phase has no single link; a step has one.
  EXPECT_NO_THROW(
      db.exec("INSERT INTO phases (run_id, kind, started_ns) VALUES (1, 'simultaneous', 5)"));
  EXPECT_THROW(db.exec("INSERT INTO phases (run_id, kind, started_ns) VALUES (1, 'step', 5)"),
               Error);
  EXPECT_THROW(db.exec("INSERT INTO phases (run_id, kind, started_ns) VALUES (1, 'active', 5)"),
               Error);
  // Cascades still work after the rebuild.
  db.exec("DELETE FROM runs WHERE id = 1");
  EXPECT_EQ(query(db, "SELECT count(*) FROM samples").rows[0][0], Value(std::int64_t{0}));
}

}  // namespace
}  // namespace nabla::db
