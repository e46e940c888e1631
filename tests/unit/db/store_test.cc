#include "nabla/db/store.hh"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nabla/db/reads.hh"
#include "run_start.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

using testing::a_run;
using testing::kT0;

// Inserts a 'running' run owned by `who` (as another process would have).
std::int64_t run_owned_by(Store& store, const ProcessIdentity& who, std::int64_t started_ns) {
  Statement st(store.database(),
               "INSERT INTO runs (kind, tool_version, started_ns, pid, pid_start_ticks, boot_id) "
               "VALUES ('load', 'x', ?, ?, ?, ?)");
  st.bind(1, started_ns).bind(2, who.pid).bind(3, who.start_ticks).bind(4, who.boot_id);
  st.run();
  return store.database().last_insert_rowid();
}

TEST(Store, RunLifecycle) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("n.db"), kT0);
  const auto campaign = store.create_campaign({"rubis", R"({"links":"discover"})", kT0});
  RunStart start = a_run(kT0 + 5);
  start.campaign_id = campaign;
  const auto id = store.begin_run(start);

  auto run = store.get_run(id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, RunStatus::kRunning);
  EXPECT_EQ(run->campaign_id, campaign);
  EXPECT_EQ(run->config_json, R"({"rate":1000})");
  EXPECT_EQ(run->seed, 42);
  EXPECT_EQ(run->pid, ::getpid());
  EXPECT_EQ(run->ended_ns, std::nullopt);

  store.finish_run(id, RunStatus::kComplete, kT0 + 9);
  run = store.get_run(id);
  EXPECT_EQ(run->status, RunStatus::kComplete);
  EXPECT_EQ(run->ended_ns, kT0 + 9);
  EXPECT_THROW(store.finish_run(id, RunStatus::kFailed, kT0 + 10, "late"), Error);
  EXPECT_FALSE(store.get_run(id + 100));

  const auto failed = store.begin_run(a_run(kT0 + 20, RunKind::kLoad));
  EXPECT_THROW(store.finish_run(failed, RunStatus::kFailed, kT0 + 21), Error);  // needs error
  store.finish_run(failed, RunStatus::kFailed, kT0 + 21, "target load not reached");
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, failed);  // newest first
  EXPECT_EQ(runs[0].kind, RunKind::kLoad);
  EXPECT_EQ(runs[0].error, "target load not reached");
  EXPECT_EQ(store.list_runs(1).size(), 1u);
}

TEST(Store, RecordsAndTypesReferenceTheirRun) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("n.db"), kT0);
  const auto run = store.begin_run(a_run(kT0));
  store.add_node({run, "web", "10.9.0.2", "10.9.0.2:7311", "10.9.0.2:7312"});
  Link link;
  link.run_id = run;
  link.src_host = "web";
  link.src_comm = "nabla-tier";
  link.dst_host = "app";
  link.dst_comm = "nabla-tier";
  link.dst_port = 8080;
  const auto link_id = store.add_link(link);
  EXPECT_THROW(store.add_link(link), Error);  // same link twice in one run
  Flow flow;
  flow.run_id = run;
  flow.link_id = link_id;
  flow.local_addr = "10.9.0.2";
  flow.local_port = 40000;
  flow.remote_addr = "10.9.0.3";
  flow.remote_port = 8080;
  flow.first_seen_ns = kT0;
  flow.last_seen_ns = kT0 + 1;
  store.add_flow(flow);
  Phase phase{run, PhaseKind::kActive, link_id, kT0, std::nullopt, 50'000'000, 128, 9,
              8,   2'000'000};
  const auto phase_id = store.add_phase(phase);
  store.end_phase(phase_id, kT0 + 6'400'000'000);
  Injection inj;
  inj.run_id = run;
  inj.phase_id = phase_id;
  inj.link_id = link_id;
  inj.requested_delay_ns = 2'000'000;
  inj.period_ns = 800'000'000;
  inj.duty = 0.5;
  inj.started_ns = kT0;
  inj.actual_mean_ns = 2'010'000;
  store.add_injection(inj);

  const auto view = store.transaction_type_id("/view");
  EXPECT_EQ(store.transaction_type_id("/bid"), view + 1);
  EXPECT_EQ(store.transaction_type_id("/view"), view);
  Gradient g;
  g.run_id = run;
  g.link_id = link_id;
  g.type_id = view;
  g.phase_id = phase_id;
  g.value = 3.02;
  g.ci_low = 2.9;
  g.ci_high = 3.1;
  store.add_gradient(g);
  TailResult t;
  t.run_id = run;
  t.rate_rps = 2000;
  t.value_ns = 1.5e6;
  t.source = TimestampSource::kSoftware;
  store.add_tail_result(t);
  store.finish_run(run, RunStatus::kComplete, kT0 + 7'000'000'000);

  // A second connection (fresh cache) resolves the same type ids.
  Store again = Store::open(dir.file("n.db"), kT0);
  EXPECT_EQ(again.transaction_type_id("/view"), view);
  EXPECT_EQ(
      query(again.database(), "SELECT link, type, gradient FROM latest_gradients").rows,
      (std::vector<std::vector<Value>>{{std::string("tcp web/nabla-tier:0 -> app/nabla-tier:8080"),
                                        std::string("/view"), 3.02}}));
  EXPECT_EQ(query(again.database(), "SELECT ended_ns FROM phases").rows[0][0],
            Value(kT0 + 6'400'000'000));
}

// A load run's controller checks read back by rate, then in the stored
// order, NULLs kept; an unknown outcome or a p-value outside [0, 1] is
// refused, and deleting the run deletes them.
TEST(Store, LoadChecksReadBackInRateAndControllerOrder) {
  testing::TempDir dir;
  Store store = Store::open(dir.file("n.db"), kT0);
  const auto run = store.begin_run(a_run(kT0));
  auto check = [&](double rate, std::int64_t position, const char* name, const char* outcome) {
    LoadCheck c;
    c.run_id = run;
    c.rate_rps = rate;
    c.position = position;
    c.name = name;
    c.outcome = outcome;
    return c;
  };
  LoadCheck iid = check(4000, 1, "iid", "fail");
  iid.statistic = 0.4;
  iid.threshold = 0.05;
  iid.p_value = 0.001;
  iid.samples = 900;
  iid.detail = "stride 1:8";
  store.add_load_check(iid);
  store.add_load_check(check(4000, 0, "rate reached", "pass"));
  store.add_load_check(check(1000, 0, "Anderson-Darling", "not applied"));
  const auto rows = run_load_checks(store.database(), run);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "Anderson-Darling");
  EXPECT_EQ(rows[0].outcome, "not applied");
  EXPECT_FALSE(rows[0].statistic);
  EXPECT_FALSE(rows[0].samples);
  EXPECT_EQ(rows[1].name, "rate reached");
  EXPECT_EQ(rows[2].name, "iid");
  EXPECT_EQ(rows[2].statistic, 0.4);
  EXPECT_EQ(rows[2].threshold, 0.05);
  EXPECT_EQ(rows[2].p_value, 0.001);
  EXPECT_EQ(rows[2].samples, 900);
  EXPECT_EQ(rows[2].detail, "stride 1:8");
  EXPECT_THROW(store.add_load_check(check(1000, 1, "x", "maybe")), Error);
  LoadCheck bad_p = check(1000, 1, "x", "pass");
  bad_p.p_value = 1.5;
  EXPECT_THROW(store.add_load_check(bad_p), Error);
  store.database().exec("DELETE FROM runs");
  EXPECT_TRUE(run_load_checks(store.database(), run).empty());
}

TEST(Store, InterruptedRunsAreMarkedFailedOnOpen) {
  testing::TempDir dir;
  const std::string path = dir.file("n.db");
  const ProcessIdentity me = current_process();

  // A process that has exited (reaped, so its pid is free).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  std::optional<ProcessIdentity> child_id;
  for (int i = 0; i < 1000 && !child_id; ++i) child_id = lookup_process(child);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const ProcessIdentity dead{child, child_id ? child_id->start_ticks : 0, me.boot_id};
  EXPECT_FALSE(is_alive(dead));

  std::int64_t mine, parent, reused, rebooted, gone;
  {
    Store store = Store::open(path, kT0);
    mine = store.begin_run(a_run(kT0));
    auto parent_id = lookup_process(::getppid());
    ASSERT_TRUE(parent_id);
    parent = run_owned_by(store, *parent_id, kT0);  // alive: left alone
    reused = run_owned_by(store, {me.pid, me.start_ticks + 1, me.boot_id}, kT0);
    rebooted = run_owned_by(store, {me.pid, me.start_ticks, "another-boot"}, kT0);
    gone = run_owned_by(store, dead, kT0 + 50);
  }
  Store store = Store::open(path, kT0 + 10);  // recovery runs here
  EXPECT_EQ(store.get_run(mine)->status, RunStatus::kRunning);
  EXPECT_EQ(store.get_run(parent)->status, RunStatus::kRunning);
  for (auto id : {reused, rebooted, gone}) {
    EXPECT_EQ(store.get_run(id)->status, RunStatus::kFailed) << id;
  }
  EXPECT_EQ(store.get_run(gone)->error,
            "interrupted (process " + std::to_string(child) + " no longer running)");
  EXPECT_EQ(store.get_run(reused)->error,
            "interrupted (process " + std::to_string(me.pid) + " no longer running)");
  EXPECT_EQ(store.get_run(rebooted)->error,
            "interrupted (host rebooted since process " + std::to_string(me.pid) + " started it)");
  EXPECT_EQ(store.get_run(reused)->ended_ns, kT0 + 10);
  EXPECT_EQ(store.get_run(gone)->ended_ns, kT0 + 50);  // never before its start
  EXPECT_TRUE(store.recover_interrupted_runs(kT0 + 20).empty());
}

TEST(Store, ReadOnlyStoreReadsButNeverWrites) {
  testing::TempDir dir;
  const std::string path = dir.file("n.db");
  {
    Store store = Store::open(path, kT0);
    store.begin_run(a_run(kT0));
  }
  Store ro = Store::open_read_only(path);
  EXPECT_EQ(ro.list_runs().size(), 1u);
  EXPECT_THROW(ro.begin_run(a_run(kT0)), Error);
  EXPECT_THROW(Store::open_read_only(dir.file("absent.db")), Error);
}

}  // namespace
}  // namespace nabla::db
