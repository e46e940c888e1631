// The demo's acceptance column and campaign parameters: check_gradient's
// rules, check_run_gradients on a database filled through db::Store, and the
// Bonferroni confidence of the full and quick campaigns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "nabla/campaign/spec.hh"
#include "nabla/coordinator/demo.hh"
#include "nabla/coordinator/load_command.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testbed::demo_campaign_toml;
using testbed::DemoCampaign;
using testbed::rubis_demo_service;
using testbed::true_gradients;
using testbed::TruthTable;
using tier::ServiceModel;

TEST(CheckGradient, TenPercentOfMaxTruthOneCiAndThroughput) {
  EXPECT_TRUE(check_gradient("l", "t", 3.0, 3.25, 3.0, 3.5, 0.01).pass);
  EXPECT_FALSE(check_gradient("l", "t", 3.0, 3.35, 3.0, 3.7, 0.0).pass);  // 11.7% off
  EXPECT_EQ(check_gradient("l", "t", 3.0, 3.35, 3.0, 3.7, 0.0).why, "off by more than 10%");
  // Zero truth: an absolute 0.1.
  EXPECT_TRUE(check_gradient("l", "t", 0.0, 0.09, 0.0, 0.2, std::nullopt).pass);
  EXPECT_FALSE(check_gradient("l", "t", 0.0, 0.11, 0.0, 0.3, std::nullopt).pass);
  // CI must contain the truth, even when the value is close.
  const GradientCheck miss = check_gradient("l", "t", 1.0, 1.05, 1.02, 1.08, 0.0);
  EXPECT_FALSE(miss.pass);
  EXPECT_EQ(miss.why, "CI misses the truth");
  EXPECT_FALSE(check_gradient("l", "t", 1.0, 1.0, std::nullopt, std::nullopt, 0.0).pass);
  // Throughput change of 5% or more fails.
  EXPECT_FALSE(check_gradient("l", "t", 1.0, 1.0, 0.9, 1.1, -0.05).pass);
  EXPECT_TRUE(check_gradient("l", "t", 1.0, 1.0, 0.9, 1.1, -0.049).pass);
  EXPECT_EQ(
      check_gradient("l", "t", 1.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt).why,
      "not measured");
  EXPECT_EQ(check_gradient("l", "t", std::nullopt, 1.0, 0.9, 1.1, 0.0).why,
            "no truth for this link");
  // A change is judged against its counting noise: 8% +- 2% could be 4%
  // (PASS), 10% +- 2% is more than 5% even at two standard errors (FAIL).
  EXPECT_TRUE(check_gradient("l", "t", 1.0, 1.0, 0.9, 1.1, -0.08, 0.02).pass);
  EXPECT_FALSE(check_gradient("l", "t", 1.0, 1.0, 0.9, 1.1, 0.10, 0.02).pass);
}

TEST(CheckRunGradients, JoinsByCampaignLabelAndReportsUnmeasuredTruth) {
  const fs::path dir =
      fs::temp_directory_path() / ("nabla-demo-check-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "d.db").string();
  {
    db::Store store = db::Store::open(path, 1'700'000'000'000'000'000);
    db::RunStart start;
    start.kind = db::RunKind::kDemo;
    start.tool_version = "test";
    start.started_ns = 1'700'000'000'000'000'000;
    const auto run = store.begin_run(start);
    db::Link l;
    l.run_id = run;
    l.src_host = "app";
    l.src_comm = "nabla-tier";
    l.dst_host = "db";
    l.dst_comm = "nabla-tier";
    l.dst_port = 8082;
    const auto link_id = store.add_link(l);
    // Training at 1000 requests/s (1001 sends 1 ms apart); the link's active
    // phase at 800/s (801 sends 1.25 ms apart): a 20% drop, 3 se beyond 5%.
    db::Phase training;
    training.run_id = run;
    training.started_ns = start.started_ns;
    const auto training_id = store.add_phase(training);
    db::Phase active;
    active.run_id = run;
    active.kind = db::PhaseKind::kActive;
    active.link_id = link_id;
    active.started_ns = start.started_ns;
    const auto active_id = store.add_phase(active);
    const auto view = store.transaction_type_id("/view");
    {
      auto w = store.sample_writer(run);
      for (int i = 0; i <= 1000; ++i) {
        w.add({training_id, start.started_ns + i * 1'000'000LL, 1'000'000, std::nullopt, view,
               db::TimestampSource::kUser});
      }
      for (int i = 0; i <= 800; ++i) {
        w.add({active_id, start.started_ns + i * 1'250'000LL, 1'000'000, std::nullopt, view,
               db::TimestampSource::kUser});
      }
      w.flush();
    }
    db::Gradient g;
    g.run_id = run;
    g.link_id = link_id;
    g.type_id = view;
    g.value = 2.9;
    g.ci_low = 2.7;
    g.ci_high = 3.1;
    g.throughput_change = 0.002;
    store.add_gradient(g);
    TruthTable truth;
    truth["tcp app -> db:8082"] = {{"/view", 3.0}, {"/auth", 0.0}};
    const auto checks = check_run_gradients(store.database(), run, truth);
    ASSERT_EQ(checks.size(), 2u);
    EXPECT_EQ(checks[0].type, "/auth");  // sorted by link, type
    EXPECT_FALSE(checks[0].pass);
    EXPECT_EQ(checks[0].why, "not measured");
    EXPECT_EQ(checks[1].link, "tcp app -> db:8082");
    EXPECT_FALSE(checks[1].pass);
    EXPECT_EQ(checks[1].why, "throughput changed by >= 5%");
    EXPECT_DOUBLE_EQ(*checks[1].value, 2.9);
    EXPECT_DOUBLE_EQ(*checks[1].throughput_change, 0.002);  // stored, shown only
    ASSERT_TRUE(checks[1].link_throughput_change);
    EXPECT_NEAR(*checks[1].link_throughput_change, -0.2, 1e-9);
    EXPECT_NEAR(checks[1].link_throughput_se, std::sqrt(1.0 / 801 + 1.0 / 1001), 1e-12);
  }
  fs::remove_all(dir);
}

TEST(DemoCampaign, QuickMeasuresTwoLinksWithBonferroniConfidence) {
  const ServiceModel m = rubis_demo_service();
  const DemoCampaign full = demo_campaign(m, false, 1);
  EXPECT_FALSE(full.only_links);
  // Non-zero truths: 4 links x 4 types at 1 (client<->web, web<->app) plus
  // app<->db:8082 for /view, /bid, /browse in both directions = 22.
  EXPECT_NEAR(full.confidence, 1 - 0.05 / 22, 1e-12);
  const DemoCampaign quick = demo_campaign(m, true, 1);
  ASSERT_TRUE(quick.only_links);
  EXPECT_EQ(*quick.only_links,
            (std::vector<std::string>{"tcp web -> app:8081", "tcp app -> db:8082"}));
  EXPECT_NEAR(quick.confidence, 1 - 0.05 / 7, 1e-12);  // 4 + 3
  EXPECT_EQ(quick.bins, 128);                          // sequential, the default
  EXPECT_EQ(demo_campaign(m, true, 1, "simultaneous").bins, 256);
  EXPECT_LT(quick.chunks, full.chunks);  // a shorter training
  EXPECT_EQ(quick.max_amplitude, "15ms");
  EXPECT_EQ(full.schedule, "sequential");
  EXPECT_EQ(full.chunks, 7);
  const DemoCampaign all_at_once = demo_campaign(m, false, 1, "simultaneous");
  EXPECT_EQ(all_at_once.schedule, "simultaneous");
  EXPECT_EQ(all_at_once.chunks, 2);  // the simultaneous schedule's own training
  EXPECT_EQ(all_at_once.bins, full.bins);
}

}  // namespace
}  // namespace nabla::coordinator

namespace nabla::coordinator {
namespace {

// The campaign file the demo writes is accepted by `nabla run`'s parser and
// carries the truth, the excludes of --quick and the Bonferroni confidence.
TEST(DemoCampaignToml, ParsesWithTheCampaignParser) {
  const ServiceModel m = rubis_demo_service();
  const std::map<std::string, std::string> addr = {
      {"client", "10.213.0.1"}, {"web", "10.213.0.2"}, {"app", "10.213.0.3"}, {"db", "10.213.0.4"}};
  const campaign::CampaignSpec full = campaign::parse_campaign_spec(
      demo_campaign_toml(m, addr, "/tmp/k", demo_campaign(m, false, 9)));
  EXPECT_EQ(full.name, "demo");
  EXPECT_EQ(full.seed, 9u);
  EXPECT_EQ(full.nodes.size(), 4u);
  EXPECT_EQ(full.workload.target, "http://10.213.0.2:8080");
  EXPECT_EQ(full.workload.mix.size(), 4u);
  EXPECT_TRUE(full.links.exclude.empty());
  EXPECT_EQ(full.gradient.bins, 256u);
  EXPECT_EQ(full.gradient.chunks, 7u);
  EXPECT_EQ(full.gradient.schedule, campaign::Schedule::kSequential);
  EXPECT_NEAR(full.gradient.confidence, 1 - 0.05 / 22, 1e-6);
  EXPECT_EQ(full.truth, true_gradients(m));
  ASSERT_TRUE(full.node_by_name("app"));
  ASSERT_TRUE(full.node_by_name("app")->injectd);

  const campaign::CampaignSpec quick = campaign::parse_campaign_spec(
      demo_campaign_toml(m, addr, "/tmp/k", demo_campaign(m, true, 9)));
  EXPECT_EQ(quick.links.exclude.size(), 6u);  // 8 one-way links, 2 measured
  EXPECT_EQ(quick.truth.size(), 2u);
  EXPECT_EQ(quick.truth.at("tcp app -> db:8082").at("/view"), 3);
  EXPECT_EQ(quick.gradient.schedule, campaign::Schedule::kSequential);
  EXPECT_EQ(quick.gradient.chunks, 5u);
  EXPECT_EQ(quick.gradient.bins, 128u);
  const campaign::CampaignSpec quick_simultaneous = campaign::parse_campaign_spec(
      demo_campaign_toml(m, addr, "/tmp/k", demo_campaign(m, true, 9, "simultaneous")));
  EXPECT_EQ(quick_simultaneous.gradient.schedule, campaign::Schedule::kSimultaneous);
  EXPECT_EQ(quick_simultaneous.gradient.chunks, 2u);
  EXPECT_EQ(quick_simultaneous.gradient.bins, 256u);
  EXPECT_EQ(quick.gradient.repeats, 0u);  // the smoke test keeps its 2 minutes
  EXPECT_EQ(full.gradient.repeats, 1u);
  EXPECT_EQ(quick.gradient.max_amplitude_ns, 15'000'000);
}

// `nabla load --json` writes the run id inside each point: one point is the
// document itself, a sweep's are in "sweep" (load_result_json plus what
// run_load adds when it stores).
TEST(DemoLoadSummary, ReadsTheRunIdWhereNablaLoadWritesIt) {
  loadgen::ControllerResult r;
  r.ok = true;
  r.target_rps = 200;
  r.throughput_rps = 199;
  loadgen::ControllerConfig c;
  c.percentiles = {99.0};
  json point = load_result_json(r, c, "user space");
  point["run_id"] = 7;
  point["samples_stored"] = 0;
  const std::string one = summarize_load(point);
  EXPECT_EQ(one.rfind("  nabla load: verdict ok at 199 requests/s", 0), 0u) << one;
  EXPECT_NE(one.find("\n    stored as run 7"), std::string::npos) << one;

  json second = point;
  second["target_rps"] = 400;
  const json sweep{{"sweep", {point, second}}};
  EXPECT_NE(summarize_load(sweep).find("\n    stored as run 7"), std::string::npos)
      << summarize_load(sweep);
  point.erase("run_id");  // without --db
  EXPECT_EQ(summarize_load(point).find("stored as run"), std::string::npos);
}

}  // namespace
}  // namespace nabla::coordinator
