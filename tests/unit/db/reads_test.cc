// The typed reads on a real SQLite file written through db::Store: every
// field comes back under its name, NULL columns as nullopt, unknown runs as
// no rows, and each function's documented order.
#include "nabla/db/reads.hh"

#include <gtest/gtest.h>

#include "nabla/db/store.hh"
#include "run_start.hh"
#include "temp_dir.hh"

namespace nabla::db {
namespace {

using testing::a_run;
using testing::kT0;
constexpr std::int64_t kS = 1'000'000'000;

Link a_link(std::int64_t run_id, std::string src, std::string dst, int dst_port) {
  Link l;
  l.run_id = run_id;
  l.src_host = std::move(src);
  l.src_comm = "nabla-tier";
  l.src_pid = 100;
  l.dst_host = std::move(dst);
  l.dst_comm = "nabla-tier";
  l.dst_port = dst_port;
  return l;
}

// A complete campaign run: two links, a training and two active phases (the
// second link's without samples), gradients, and a load run's tail results.
class ReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.emplace(Store::open(dir_.file("r.db"), kT0));
    Store& s = *store_;
    run_ = s.begin_run(a_run(kT0));
    app_db_ = s.add_link(a_link(run_, "app", "db", 8082));
    Link bare;  // no processes known: NULL pid and comm
    bare.run_id = run_;
    bare.proto = "udp";
    bare.src_host = "web";
    bare.src_port = 5353;
    bare.dst_host = "app";
    web_app_ = s.add_link(bare);
    view_ = s.transaction_type_id("/view");
    auth_ = s.transaction_type_id("/auth");
    add_phases_and_samples();
    add_gradients();
    s.finish_run(run_, RunStatus::kComplete, kT0 + 10 * kS);
    load_ = s.begin_run(a_run(kT0 + 20 * kS, RunKind::kLoad));
    add_tail_results();
  }

  void add_phases_and_samples() {
    Store& s = *store_;
    Phase training;
    training.run_id = run_;
    training.started_ns = kT0;
    training.ended_ns = kT0 + kS;
    training.bins = 64;
    training.chunks = 3;
    training_ = s.add_phase(training);
    Phase active;
    active.run_id = run_;
    active.kind = PhaseKind::kActive;
    active.link_id = app_db_;
    active.started_ns = kT0 + 2 * kS;
    active.amplitude_ns = 4'000'000;
    active_ = s.add_phase(active);
    active.link_id = web_app_;
    empty_active_ = s.add_phase(active);
    auto w = s.sample_writer(run_);
    // Written out of send order: reads return send order.
    w.add({training_, kT0 + 300, 3000, std::nullopt, view_, TimestampSource::kUser});
    w.add({training_, kT0 + 100, 1000, 50, view_, TimestampSource::kUser});
    w.add({training_, kT0 + 200, 2000, std::nullopt, auth_, TimestampSource::kUser});
    w.add({active_, kT0 + 2 * kS, 7000, std::nullopt, view_, TimestampSource::kUser});
    w.add({active_, kT0 + 3 * kS, 9000, std::nullopt, view_, TimestampSource::kUser});
    w.add({std::nullopt, kT0 + 4 * kS, 5000, std::nullopt, auth_, TimestampSource::kUser});
    w.flush();
  }

  void add_gradients() {
    Gradient g;
    g.run_id = run_;
    g.link_id = web_app_;  // "udp web..." sorts after "tcp app..."
    g.type_id = view_;
    g.value = 1.01;
    g.ci_low = 0.9;
    g.ci_high = 1.1;
    g.confidence = 0.99;
    g.throughput_change = -0.01;
    g.k_d = 4;
    g.bins = 64;
    store_->add_gradient(g);
    Gradient bare;  // no CI, no extras
    bare.run_id = run_;
    bare.link_id = app_db_;
    bare.type_id = view_;
    bare.value = 3.02;
    store_->add_gradient(bare);
    bare.type_id = auth_;
    bare.value = 0.01;
    bare.phase_id = active_;
    store_->add_gradient(bare);
  }

  void add_tail_results() {
    TailResult t;
    t.run_id = load_;
    t.rate_rps = 600;
    t.percentile = 99;
    t.value_ns = 3e6;
    t.type_id = view_;
    store_->add_tail_result(t);
    t.type_id = std::nullopt;  // over all types: listed first at its rate
    t.percentile = 90;
    t.source = TimestampSource::kSoftware;
    store_->add_tail_result(t);
    TailResult na;
    na.run_id = load_;
    na.rate_rps = 300;
    na.percentile = 99;
    na.ok = false;
    na.reasons_json = R"(["not iid"])";
    store_->add_tail_result(na);
  }

  Database& db() { return store_->database(); }

  testing::TempDir dir_;
  std::optional<Store> store_;
  std::int64_t run_ = 0, load_ = 0, app_db_ = 0, web_app_ = 0, view_ = 0, auth_ = 0;
  std::int64_t training_ = 0, active_ = 0, empty_active_ = 0;
};

TEST_F(ReadsTest, RunSummariesNewestFirstWithNullsForWhatIsMissing) {
  const auto runs = list_run_summaries(db(), 0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run_id, load_);
  EXPECT_EQ(runs[0].kind, RunKind::kLoad);
  EXPECT_EQ(runs[0].status, RunStatus::kRunning);
  EXPECT_EQ(runs[0].duration_s, std::nullopt);  // still running
  EXPECT_EQ(runs[0].tail_results, 3);
  const RunSummary& r = runs[1];
  EXPECT_EQ(r.run_id, run_);
  EXPECT_EQ(r.campaign, std::nullopt);
  EXPECT_EQ(r.status, RunStatus::kComplete);
  EXPECT_EQ(r.started, "2023-11-14T22:13:20Z");
  ASSERT_TRUE(r.duration_s);
  EXPECT_DOUBLE_EQ(*r.duration_s, 10.0);
  EXPECT_EQ(r.links, 2);
  EXPECT_EQ(r.samples, 6);
  EXPECT_EQ(r.gradients, 3);
  EXPECT_EQ(r.tail_results, 0);
  EXPECT_EQ(r.error, std::nullopt);
  ASSERT_EQ(list_run_summaries(db(), 1).size(), 1u);
  EXPECT_EQ(list_run_summaries(db(), 1)[0].run_id, load_);
  ASSERT_TRUE(find_run_summary(db(), run_));
  EXPECT_EQ(find_run_summary(db(), run_)->samples, 6);
  EXPECT_FALSE(find_run_summary(db(), load_ + 1));
}

TEST_F(ReadsTest, RunsByIdByStartAndNewestOfAKind) {
  const auto run = find_run(db(), run_);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->config_json, R"({"rate":1000})");
  EXPECT_EQ(run->seed, 42);
  EXPECT_EQ(run->ended_ns, kT0 + 10 * kS);
  EXPECT_FALSE(find_run(db(), load_ + 1));
  const auto runs = list_runs(db(), 0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, load_);  // started later
  const auto demo = store_->begin_run(a_run(kT0 + 30 * kS, RunKind::kDemo));
  store_->finish_run(demo, RunStatus::kFailed, kT0 + 31 * kS, "tier died");
  const auto found = newest_run_of_kind(db(), RunKind::kDemo, kT0);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, demo);
  EXPECT_EQ(found->status, RunStatus::kFailed);
  EXPECT_EQ(found->error, "tier died");
  EXPECT_FALSE(newest_run_of_kind(db(), RunKind::kDemo, kT0 + 31 * kS));  // started before
  EXPECT_FALSE(newest_run_of_kind(db(), RunKind::kAnalyze, 0));
  EXPECT_EQ(newest_run_of_kind(db(), RunKind::kLoad, 0)->id, load_);
}

TEST_F(ReadsTest, LinksByIdWithTheirGeneratedLabel) {
  const auto links = run_links(db(), run_);
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].id, app_db_);
  EXPECT_EQ(links[0].label, "tcp app/nabla-tier:0 -> db/nabla-tier:8082");
  EXPECT_EQ(links[0].link.run_id, run_);
  EXPECT_EQ(links[0].link.src_pid, 100);
  EXPECT_EQ(links[0].link.dst_port, 8082);
  EXPECT_EQ(links[1].id, web_app_);
  EXPECT_EQ(links[1].label, "udp web:5353 -> app:0");
  EXPECT_EQ(links[1].link.proto, "udp");
  EXPECT_EQ(links[1].link.src_port, 5353);
  EXPECT_EQ(links[1].link.src_comm, std::nullopt);
  EXPECT_EQ(links[1].link.dst_pid, std::nullopt);
  EXPECT_TRUE(run_links(db(), load_).empty());
}

TEST_F(ReadsTest, PhasesWithTheirSampleSpans) {
  const auto phases = run_phases(db(), run_);
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].id, training_);
  EXPECT_EQ(phases[0].phase.kind, PhaseKind::kTraining);
  EXPECT_EQ(phases[0].phase.link_id, std::nullopt);
  EXPECT_EQ(phases[0].phase.ended_ns, kT0 + kS);
  EXPECT_EQ(phases[0].phase.bins, 64);
  EXPECT_EQ(phases[0].phase.chunks, 3);
  EXPECT_EQ(phases[0].samples, 3);
  EXPECT_EQ(phases[0].first_send_ns, kT0 + 100);
  EXPECT_EQ(phases[0].last_send_ns, kT0 + 300);
  EXPECT_EQ(phases[1].id, active_);
  EXPECT_EQ(phases[1].phase.kind, PhaseKind::kActive);
  EXPECT_EQ(phases[1].phase.link_id, app_db_);
  EXPECT_EQ(phases[1].phase.amplitude_ns, 4'000'000);
  EXPECT_EQ(phases[1].phase.ended_ns, std::nullopt);
  EXPECT_EQ(phases[1].samples, 2);
  EXPECT_EQ(phases[2].id, empty_active_);
  EXPECT_EQ(phases[2].samples, 0);
  EXPECT_EQ(phases[2].first_send_ns, std::nullopt);
  EXPECT_EQ(phases[2].last_send_ns, std::nullopt);
  EXPECT_TRUE(run_phases(db(), load_).empty());
}

TEST_F(ReadsTest, GradientsByLinkLabelThenType) {
  const auto gradients = run_gradients(db(), run_);
  ASSERT_EQ(gradients.size(), 3u);
  EXPECT_EQ(gradients[0].link.label, "tcp app/nabla-tier:0 -> db/nabla-tier:8082");
  EXPECT_EQ(gradients[0].type, "/auth");
  EXPECT_EQ(gradients[0].gradient.phase_id, active_);
  EXPECT_EQ(gradients[1].type, "/view");
  EXPECT_DOUBLE_EQ(gradients[1].gradient.value, 3.02);
  EXPECT_EQ(gradients[1].gradient.ci_low, std::nullopt);
  EXPECT_EQ(gradients[1].gradient.ci_high, std::nullopt);
  EXPECT_EQ(gradients[1].gradient.phase_id, std::nullopt);
  EXPECT_EQ(gradients[1].gradient.throughput_change, std::nullopt);
  EXPECT_DOUBLE_EQ(gradients[1].gradient.confidence, 0.95);  // the column default
  const GradientRow& g = gradients[2];
  EXPECT_EQ(g.link.id, web_app_);
  EXPECT_EQ(g.link.link.src_host, "web");
  EXPECT_EQ(g.gradient.link_id, web_app_);
  EXPECT_EQ(g.gradient.type_id, view_);
  EXPECT_EQ(g.gradient.run_id, run_);
  EXPECT_DOUBLE_EQ(*g.gradient.ci_low, 0.9);
  EXPECT_DOUBLE_EQ(*g.gradient.ci_high, 1.1);
  EXPECT_DOUBLE_EQ(g.gradient.confidence, 0.99);
  EXPECT_DOUBLE_EQ(*g.gradient.throughput_change, -0.01);
  EXPECT_EQ(g.gradient.k_d, 4);
  EXPECT_EQ(g.gradient.bins, 64);
  EXPECT_TRUE(run_gradients(db(), load_).empty());
}

TEST_F(ReadsTest, SweepAmplitudesByGradientInAmplitudeOrder) {
  EXPECT_TRUE(run_gradient_amplitudes(db(), run_).empty());
  const std::int64_t gradient_id = run_gradients(db(), run_)[2].id;
  GradientAmplitude a;
  a.run_id = run_;
  a.gradient_id = gradient_id;
  a.phase_id = active_;
  a.amplitude_ns = 8'000'000;
  a.actual_amplitude_ns = 7.9e6;
  a.value = 1.9;
  a.ci_low = 1.8;
  a.ci_high = 2.0;
  store_->add_gradient_amplitude(a);
  a.amplitude_ns = 2'000'000;
  a.actual_amplitude_ns = std::nullopt;
  a.value = 1.1;
  a.ci_low = a.ci_high = std::nullopt;
  store_->add_gradient_amplitude(a);
  const auto sweeps = run_gradient_amplitudes(db(), run_);
  ASSERT_EQ(sweeps.size(), 1u);
  const auto& points = sweeps.at(gradient_id);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].amplitude_ns, 2'000'000);
  EXPECT_EQ(points[0].actual_amplitude_ns, std::nullopt);
  EXPECT_EQ(points[0].ci_low, std::nullopt);
  EXPECT_EQ(points[1].amplitude_ns, 8'000'000);
  EXPECT_DOUBLE_EQ(*points[1].actual_amplitude_ns, 7.9e6);
  EXPECT_DOUBLE_EQ(*points[1].ci_high, 2.0);
  EXPECT_EQ(points[1].phase_id, active_);
  EXPECT_EQ(points[1].run_id, run_);
  EXPECT_TRUE(run_gradient_amplitudes(db(), load_).empty());
}

TEST_F(ReadsTest, TailResultsByRateWithAllTypesFirst) {
  const auto tails = run_tail_results(db(), load_);
  ASSERT_EQ(tails.size(), 3u);
  EXPECT_DOUBLE_EQ(tails[0].result.rate_rps, 300);
  EXPECT_FALSE(tails[0].result.ok);
  EXPECT_EQ(tails[0].result.value_ns, std::nullopt);
  EXPECT_EQ(tails[0].result.reasons_json, R"(["not iid"])");
  EXPECT_EQ(tails[0].result.source, std::nullopt);
  EXPECT_EQ(tails[1].type, std::nullopt);  // all types
  EXPECT_EQ(tails[1].result.type_id, std::nullopt);
  EXPECT_DOUBLE_EQ(tails[1].result.percentile, 90);
  EXPECT_EQ(tails[1].result.source, TimestampSource::kSoftware);
  EXPECT_EQ(tails[2].type, "/view");
  EXPECT_EQ(tails[2].result.type_id, view_);
  EXPECT_TRUE(tails[2].result.ok);
  EXPECT_EQ(tails[2].result.metric, "sojourn");
  EXPECT_DOUBLE_EQ(*tails[2].result.value_ns, 3e6);
  EXPECT_TRUE(run_tail_results(db(), run_).empty());
}

TEST_F(ReadsTest, LatenciesByTypeInSendOrderOptionallyOfOnePhaseKind) {
  const auto all = latencies_by_type(db(), run_);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all.at("/view"), (std::vector<std::int64_t>{1000, 3000, 7000, 9000}));
  EXPECT_EQ(all.at("/auth"), (std::vector<std::int64_t>{2000, 5000}));  // one outside phases
  const auto training = latencies_by_type(db(), run_, PhaseKind::kTraining);
  EXPECT_EQ(training.at("/view"), (std::vector<std::int64_t>{1000, 3000}));
  EXPECT_EQ(training.at("/auth"), (std::vector<std::int64_t>{2000}));
  const auto active = latencies_by_type(db(), run_, PhaseKind::kActive);
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active.at("/view"), (std::vector<std::int64_t>{7000, 9000}));
  EXPECT_TRUE(latencies_by_type(db(), run_, PhaseKind::kBaseline).empty());
  EXPECT_TRUE(latencies_by_type(db(), load_).empty());
}

TEST_F(ReadsTest, PhaseSamplesInSendOrderWithEveryField) {
  const std::vector<Sample> training = phase_samples(db(), training_);
  ASSERT_EQ(training.size(), 3u);
  EXPECT_EQ(training[0].send_ns, kT0 + 100);
  EXPECT_EQ(training[0].latency_ns, 1000);
  EXPECT_EQ(training[0].service_ns, 50);
  EXPECT_EQ(training[0].type_id, view_);
  EXPECT_EQ(training[0].phase_id, training_);
  EXPECT_EQ(training[1].type_id, auth_);
  EXPECT_EQ(training[2].service_ns, std::nullopt);
  EXPECT_EQ(phase_samples(db(), active_).size(), 2u);
  EXPECT_TRUE(phase_samples(db(), empty_active_).empty());
}

TEST_F(ReadsTest, NodesInjectionsAndTheCampaignRow) {
  Store& s = *store_;
  const std::int64_t campaign = s.create_campaign({"c1", R"({"name":"c1"})", kT0});
  s.add_node({run_, "app", "10.0.0.2", "10.0.0.2:7311", std::nullopt});
  Injection inj;
  inj.run_id = run_;
  inj.phase_id = active_;
  inj.link_id = app_db_;
  inj.node = "app";
  inj.requested_delay_ns = 4'000'000;
  inj.period_ns = 100'000'000;
  inj.duty = 0.5;
  inj.started_ns = kT0 + 2 * kS;
  inj.actual_mean_ns = 3'900'000.5;
  s.add_injection(inj);
  Injection unlinked = inj;
  unlinked.link_id.reset();
  unlinked.actual_mean_ns.reset();
  s.add_injection(unlinked);

  const auto c = find_campaign(db(), campaign);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "c1");
  EXPECT_EQ(c->spec_json, R"({"name":"c1"})");
  EXPECT_FALSE(find_campaign(db(), campaign + 1));
  const auto nodes = run_nodes(db(), run_);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].injectd_addr, "10.0.0.2:7311");
  EXPECT_EQ(nodes[0].sniffd_addr, std::nullopt);
  const auto injections = run_injections(db(), run_);
  ASSERT_EQ(injections.size(), 2u);
  EXPECT_EQ(injections[0].link_label, "tcp app/nabla-tier:0 -> db/nabla-tier:8082");
  EXPECT_EQ(injections[0].injection.requested_delay_ns, 4'000'000);
  EXPECT_EQ(injections[0].injection.period_ns, 100'000'000);
  EXPECT_EQ(injections[0].injection.actual_mean_ns, 3'900'000.5);
  EXPECT_EQ(injections[1].link_label, std::nullopt);
  EXPECT_EQ(injections[1].injection.actual_mean_ns, std::nullopt);
  EXPECT_TRUE(run_injections(db(), load_).empty());
  EXPECT_TRUE(run_nodes(db(), load_).empty());
}

TEST_F(ReadsTest, TransactionTypeNamesById) {
  const auto names = transaction_type_names(db());
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names.at(view_), "/view");
  EXPECT_EQ(names.at(auth_), "/auth");
}

// Reads work on the read-only connection `nabla predict` and `nabla runs`
// may open.
TEST_F(ReadsTest, ReadOnlyConnectionReadsTheSame) {
  store_.reset();
  Store ro = Store::open_read_only(dir_.file("r.db"));
  EXPECT_EQ(run_gradients(ro.database(), run_).size(), 3u);
  EXPECT_EQ(list_run_summaries(ro.database(), 0).size(), 2u);
}

}  // namespace
}  // namespace nabla::db
