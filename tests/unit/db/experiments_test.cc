// The experiments tables (migration 0004): a version-3 database on a real
// file keeps its rows when migrated to version 4 and then takes
// experiments; an experiment and its checks written through the Store come
// back through run_experiments by window; the constraints refuse a verdict
// or window that does not exist, and deleting the run removes them.
#include <gtest/gtest.h>

#include "nabla/db/migrations.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "run_start.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

Experiment an_experiment(std::int64_t run_id) {
  Experiment e;
  e.run_id = run_id;
  e.name = "db-slow";
  e.spec_json = R"({"delay":20000000})";
  e.links_json = R"(["tcp app -> db:5432"])";
  e.started_ns = 10;
  e.fault_start_ns = 20;
  e.fault_end_ns = 30;
  e.ended_ns = 40;
  e.verdict = "fail";
  e.mean_delay_ns = 19.5e6;
  e.observed_change_ns = 80e6;
  e.observed_ci_low_ns = 78e6;
  e.observed_ci_high_ns = 82e6;
  e.predicted_change_ns = 78e6;
  return e;
}

ExperimentCheck a_check(std::int64_t id, const std::string& window, const std::string& verdict) {
  ExperimentCheck c;
  c.experiment_id = id;
  c.window = window;
  c.term = "p99";
  c.bound = 20e6;
  c.value = 25e6;
  c.ci_low = 24e6;
  c.ci_high = 26e6;
  c.verdict = verdict;
  c.samples = 1000;
  c.scheduled = 1002;
  return c;
}

TEST(Experiments, VersionThreeMigratesAndKeepsItsRuns) {
  ::nabla::db::testing::TempDir dir;
  {
    Database db = Database::open(dir.file("v3.db"));
    ASSERT_EQ(migrate(db, builtin_migrations().first(3)), 3);
    db.exec(
        "INSERT INTO runs (id, kind, tool_version, started_ns, pid, pid_start_ticks, boot_id) "
        "VALUES (1, 'run', 't', 1, 1, 1, 'b')");
  }
  Store store = Store::open(dir.file("v3.db"), 1'000);
  EXPECT_GE(store.database().user_version(), 4);
  EXPECT_EQ(query(store.database(), "SELECT count(*) FROM runs").rows[0][0],
            Value(std::int64_t{1}));
  const std::int64_t id = store.add_experiment(an_experiment(1));
  store.add_experiment_check(a_check(id, "fault", "fail"));
  EXPECT_EQ(run_experiments(store.database(), 1).size(), 1u);
}

TEST(Experiments, RoundTripByWindowAndCascade) {
  ::nabla::db::testing::TempDir dir;
  Store store = Store::open(dir.file("e.db"), 1'000);
  const std::int64_t run = store.begin_run(::nabla::db::testing::a_run(1'000));
  const std::int64_t id = store.add_experiment(an_experiment(run));
  ExperimentCheck recovery = a_check(id, "recovery", "inconclusive");
  recovery.extra_ns = 3'000'000'000;
  recovery.ci_low = recovery.ci_high = std::nullopt;
  recovery.note = "too few samples for a CI";
  store.add_experiment_check(recovery);
  store.add_experiment_check(a_check(id, "fault", "fail"));
  store.add_experiment_check(a_check(id, "baseline", "pass"));

  const std::vector<ExperimentRow> rows = run_experiments(store.database(), run);
  ASSERT_EQ(rows.size(), 1u);
  const Experiment& e = rows[0].experiment;
  EXPECT_EQ(e.name, "db-slow");
  EXPECT_EQ(e.verdict, "fail");
  EXPECT_EQ(e.fault_start_ns, 20);
  EXPECT_EQ(e.predicted_change_ns, 78e6);
  EXPECT_FALSE(e.predicted_ci_low_ns.has_value());
  ASSERT_EQ(rows[0].checks.size(), 3u);
  EXPECT_EQ(rows[0].checks[0].window, "baseline");
  EXPECT_EQ(rows[0].checks[1].window, "fault");
  EXPECT_EQ(rows[0].checks[2].window, "recovery");
  EXPECT_EQ(rows[0].checks[2].extra_ns, 3'000'000'000);
  EXPECT_FALSE(rows[0].checks[2].ci_low.has_value());
  EXPECT_EQ(rows[0].checks[2].note, "too few samples for a CI");
  EXPECT_TRUE(run_experiments(store.database(), run + 1).empty());

  Experiment bad = an_experiment(run);
  bad.name = "other";
  bad.verdict = "maybe";
  EXPECT_THROW(store.add_experiment(bad), Error);
  EXPECT_THROW(store.add_experiment(an_experiment(run)), Error);  // the name again
  EXPECT_THROW(store.add_experiment_check(a_check(id, "later", "pass")), Error);

  store.database().exec("DELETE FROM runs");
  EXPECT_EQ(query(store.database(), "SELECT count(*) FROM experiment_checks").rows[0][0],
            Value(std::int64_t{0}));
}

}  // namespace
}  // namespace nabla::db
