// The rate-point driver's policy against fakes: a RoundRunner that returns
// synthetic rounds in virtual time, and a SQLite store in a temp file.
#include "nabla/load/driver.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nabla/db/reads.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/load/record.hh"

namespace nabla::load {
namespace {

namespace fs = std::filesystem;

// The controller's clock: moves only when a round is "run".
struct VirtualClock {
  std::int64_t now_ns = 1'000'000'000;
};

// Every round answered: Poisson sends at the requested rate from the round's
// start, each answered in 200 us plus an exponential 50 us, all on time.
loadgen::RoundRunner synthetic_runner(VirtualClock& clock, int& rounds) {
  return [&clock, &rounds](const loadgen::RoundRequest& q) {
    ++rounds;
    loadgen::RoundOutcome o;
    o.start_ns = clock.now_ns + q.lead_ns;
    loadgen::EngineResult& r = o.merged;
    r.type_names = {"/"};
    std::mt19937_64 rng(q.engine.seed);
    std::exponential_distribution<double> gap(q.engine.schedule.rate_per_s / 1e9);
    std::exponential_distribution<double> extra(1.0 / 50'000);
    for (double t = static_cast<double>(o.start_ns) + gap(rng);
         t < static_cast<double>(o.start_ns + q.duration_ns); t += gap(rng)) {
      loadgen::Sample s;
      s.intended_ns = static_cast<std::int64_t>(t);
      s.latency_ns = 200'000 + static_cast<std::int64_t>(extra(rng));
      r.samples.push_back(s);
      r.latency.record(s.latency_ns);
      r.lateness.record(0);
      r.timer_lateness.record(0);
      r.slot_wait.record(0);
    }
    r.scheduled = r.sent = r.completed = r.samples.size();
    r.by_type = {{r.completed, 0}};
    if (!r.samples.empty()) {
      r.first_intended_ns = r.samples.front().intended_ns;
      r.last_intended_ns = r.samples.back().intended_ns;
    }
    clock.now_ns = o.start_ns + q.duration_ns + 1'000'000;  // sent and drained
    return o;
  };
}

class TempDb {
 public:
  TempDb()
      : path_((fs::temp_directory_path() /
               ("nabla-load-driver-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db"))
                  .string()) {}
  ~TempDb() {
    std::error_code ec;
    fs::remove(path_, ec);
    fs::remove(path_ + "-wal", ec);
    fs::remove(path_ + "-shm", ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

DriverConfig config_of(VirtualClock& clock, int& rounds) {
  DriverConfig c;
  c.controller.engine.host = "192.0.2.1";  // never reached: the runner is the fake
  c.controller.engine.port = 80;
  c.controller.engine.connections = 4;
  c.controller.engine.max_outstanding = 4;
  c.controller.percentiles = {99.0, 50.0};
  c.controller.ci_width_ns = 1e6;
  c.controller.max_duration_ns = 20'000'000'000;
  c.rates = {500, 1000};
  c.clock = [&clock] { return clock.now_ns; };
  c.runner = synthetic_runner(clock, rounds);
  c.target = {"http", "192.0.2.1", 80, "/", ""};
  return c;
}

TEST(LoadDriver, ASweepOfTwoPointsIsStoredWithItsRows) {
  VirtualClock clock;
  int rounds = 0;
  const DriverConfig config = config_of(clock, rounds);
  TempDb file;
  std::int64_t run_id = 0;
  std::vector<double> done;
  {
    LoadRunRecorder store(file.path(), {{"command", "load"}}, 7);
    run_id = store.run_id();
    DriverHooks hooks;
    hooks.store = &store;
    hooks.point_done = [&](const RatePoint& p) { done.push_back(p.rate); };
    const LoadRunResult r = run_rate_points(config, hooks);
    ASSERT_EQ(r.points.size(), 2u);
    EXPECT_EQ(r.run_id, run_id);
    EXPECT_DOUBLE_EQ(r.points[0].config.engine.schedule.rate_per_s, 500);
    EXPECT_DOUBLE_EQ(r.points[1].result.target_rps, 1000);
    for (const RatePoint& p : r.points) {
      ASSERT_TRUE(p.samples_stored.has_value());
      EXPECT_EQ(*p.samples_stored, static_cast<std::int64_t>(p.result.kept_samples.size()));
      EXPECT_FALSE(p.result.rounds.empty());
    }
  }
  EXPECT_EQ(done, (std::vector<double>{500, 1000}));
  EXPECT_GT(rounds, 2);  // calibration and measurement, per point, all through the fake

  db::Database database = db::Database::open(file.path());
  const auto summary = db::find_run_summary(database, run_id);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->status, db::RunStatus::kComplete);
  EXPECT_EQ(summary->kind, db::RunKind::kLoad);
  std::set<double> tail_rates, check_rates;
  for (const auto& row : db::run_tail_results(database, run_id))
    tail_rates.insert(row.result.rate_rps);
  for (const auto& check : db::run_load_checks(database, run_id))
    check_rates.insert(check.rate_rps);
  EXPECT_EQ(tail_rates, (std::set<double>{500, 1000}));
  EXPECT_EQ(check_rates, (std::set<double>{500, 1000}));
  // Seven checks per point: four of the last round, three of the series.
  EXPECT_EQ(db::run_load_checks(database, run_id).size(), 14u);
}

TEST(LoadDriver, ARunnerThatThrowsStoresTheRunFailedWithTheError) {
  VirtualClock clock;
  int rounds = 0;
  DriverConfig config = config_of(clock, rounds);
  const loadgen::RoundRunner good = config.runner;
  // The second point's first round loses its agent.
  config.runner = [&, good](const loadgen::RoundRequest& q) {
    if (q.engine.schedule.rate_per_s > 500) {
      throw loadgen::AgentFailure("10.0.0.9:7313", "connection lost");
    }
    return good(q);
  };
  TempDb file;
  std::int64_t run_id = 0;
  bool stopped = false;
  std::vector<double> done;
  {
    LoadRunRecorder store(file.path(), {{"command", "load"}}, 7);
    run_id = store.run_id();
    DriverHooks hooks;
    hooks.store = &store;
    hooks.point_done = [&](const RatePoint& p) { done.push_back(p.rate); };
    hooks.on_error = [&] { stopped = true; };
    try {
      run_rate_points(config, hooks);
      ADD_FAILURE() << "a lost agent ended the run without an error";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("connection lost"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(done, (std::vector<double>{500}));
  db::Database database = db::Database::open(file.path());
  const auto summary = db::find_run_summary(database, run_id);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->status, db::RunStatus::kFailed);
  ASSERT_TRUE(summary->error.has_value());
  EXPECT_NE(summary->error->find("connection lost"), std::string::npos) << *summary->error;
  std::set<double> tail_rates;
  for (const auto& row : db::run_tail_results(database, run_id))
    tail_rates.insert(row.result.rate_rps);
  EXPECT_TRUE(tail_rates.count(500));  // the point measured before stays stored
}

TEST(LoadDriver, ATargetThatRefusesEveryConnectionFailsTheRun) {
  VirtualClock clock;
  int rounds = 0;
  DriverConfig config = config_of(clock, rounds);
  config.rates = {500};
  config.runner = [&clock](const loadgen::RoundRequest& q) {
    loadgen::RoundOutcome o;
    o.start_ns = clock.now_ns + q.lead_ns;
    o.merged.errors.connect = 4;
    o.merged.setup.first_error = "connect: Connection refused";
    clock.now_ns = o.start_ns + q.duration_ns;
    return o;
  };
  TempDb file;
  std::int64_t run_id = 0;
  {
    LoadRunRecorder store(file.path(), {{"command", "load"}}, 7);
    run_id = store.run_id();
    DriverHooks hooks;
    hooks.store = &store;
    EXPECT_THROW(run_rate_points(config, hooks), std::runtime_error);
  }
  db::Database database = db::Database::open(file.path());
  const auto summary = db::find_run_summary(database, run_id);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->status, db::RunStatus::kFailed);
  EXPECT_NE(summary->error.value_or("").find("cannot connect to 192.0.2.1:80"), std::string::npos)
      << summary->error.value_or("");
}

}  // namespace
}  // namespace nabla::load
