// Fault experiments without a campaign run: the [[experiment]] keys (the
// fault words of `nabla inject`, the windows, the SLO) with errors naming
// the key, and the verdict arithmetic with literal intervals and samples
// (pass, fail, inconclusive with the extra duration that would decide it).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "nabla/campaign/spec.hh"
#include "nabla/campaign/verdict.hh"

namespace nabla::campaign {
namespace {

constexpr const char* kHead = R"(
name = "exp"
[[node]]
name = "app"
address = "10.0.0.2"
injectd = "10.0.0.2:7311"
sniffd = "10.0.0.2:7312"
[[node]]
name = "web"
address = "10.0.0.1"
sniffd = "10.0.0.1:7312"
[workload]
target = "http://10.0.0.2:8080"
rate = 400
)";

std::string with_experiment(const std::string& body) {
  return std::string(kHead) + "[[experiment]]\nname = \"slow-db\"\n" + body;
}

std::string error_of(const std::string& text) {
  try {
    parse_campaign_spec(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ExperimentSpec, ParsesFaultWindowsAndSlo) {
  const CampaignSpec s = parse_campaign_spec(with_experiment(R"(
links = ["tcp app -> db:5432"]
nodes = ["app"]
delay = "20ms"
jitter = "1ms"
loss = "gemodel:1%,20%"
wave = "square:1s,0.25"
baseline = "2s"
fault = "3s"
recovery = "1s"
slo = { p99 = "50ms", p50 = "10ms", errors = "1%", throughput = "-5%" }
)"));
  ASSERT_EQ(s.experiments.size(), 1u);
  const ExperimentSpec& e = s.experiments[0];
  EXPECT_EQ(e.name, "slow-db");
  EXPECT_EQ(e.links, std::vector<std::string>{"tcp app -> db:5432"});
  EXPECT_EQ(e.nodes, std::vector<std::string>{"app"});
  ASSERT_TRUE(e.request.delay.has_value());
  EXPECT_EQ(e.request.delay->amplitude_ns, 20'000'000);
  EXPECT_EQ(e.request.delay->period_ns, 1'000'000'000);
  EXPECT_EQ(e.request.delay->duty, 0.25);
  ASSERT_TRUE(e.request.faults.loss.has_value());
  EXPECT_DOUBLE_EQ(e.request.faults.loss->r, 0.2);
  EXPECT_TRUE(e.request.faults.loss->wave.has_value());  // every fault follows the wave
  EXPECT_EQ(e.request.faults.jitter->amount_ns, 1'000'000);
  EXPECT_EQ(e.baseline_ns, 2'000'000'000);
  EXPECT_EQ(e.fault_ns, 3'000'000'000);
  EXPECT_EQ(e.recovery_ns, 1'000'000'000);
  ASSERT_EQ(e.slo.percentiles.size(), 2u);  // in percentile order
  EXPECT_EQ(e.slo.percentiles[0].term, "p50");
  EXPECT_EQ(e.slo.percentiles[1].bound_ns, 50'000'000);
  EXPECT_DOUBLE_EQ(*e.slo.max_error_rate, 0.01);
  EXPECT_DOUBLE_EQ(*e.slo.min_throughput_change, -0.05);
  EXPECT_TRUE(s.gradient.enabled);
  EXPECT_EQ(to_json(s)["experiments"][0]["slo"]["p99_ns"], 50'000'000);
}

TEST(ExperimentSpec, ErrorsNameTheKey) {
  const std::string ok = "links = [\"tcp app -> db:5432\"]\ndelay = \"5ms\"\n";
  EXPECT_EQ(error_of(with_experiment(ok + "slo = { p99 = \"20\" }\n"))
                .rfind("experiment[0].slo.p99: ", 0),
            0u);
  EXPECT_EQ(error_of(with_experiment(ok + "slo = { p98 = \"20ms\" }\n")),
            "unknown key experiment[0].slo.p98");
  EXPECT_EQ(error_of(with_experiment(ok)).rfind("experiment[0].slo: required", 0), 0u);
  EXPECT_EQ(error_of(with_experiment(ok + "slo = { throughput = \"5%\" }\n"))
                .rfind("experiment[0].slo.throughput: a drop with its sign", 0),
            0u);
  EXPECT_EQ(error_of(with_experiment(ok + "slo = { errors = \"1\" }\n"))
                .rfind("experiment[0].slo.errors: ", 0),
            0u);
  const std::string slo = "slo = { p99 = \"20ms\" }\n";
  // The fault words are nabla inject's, and so are their errors, under the key.
  EXPECT_EQ(error_of(with_experiment(ok + slo + "loss = \"5\"\n")).rfind("experiment[0].loss: ", 0),
            0u);
  EXPECT_EQ(error_of(with_experiment(ok + slo + "jitter_dist = \"normal\"\n")),
            "experiment[0].jitter_dist: needs --jitter");
  EXPECT_EQ(error_of(with_experiment(ok + slo + "lost = \"5%\"\n")),
            "unknown key experiment[0].lost");
  EXPECT_EQ(error_of(with_experiment("links = [\"tcp app -> db:5432\"]\n" + slo))
                .rfind("experiment[0].delay: give a delay or a fault", 0),
            0u);
  EXPECT_EQ(error_of(with_experiment("delay = \"5ms\"\n" + slo)),
            "experiment[0].links: give links or nodes");
  EXPECT_EQ(error_of(with_experiment("nodes = [\"web\"]\ndelay = \"5ms\"\n" + slo)),
            "experiment[0].nodes: node \"web\" has no injectd");
  EXPECT_EQ(error_of(with_experiment(ok + slo + "fault = \"10ms\"\n")),
            "experiment[0].fault: must be in [100ms, 1h]");
  EXPECT_EQ(error_of(std::string(kHead) + "[gradient]\nenabled = false\n"),
            "gradient.enabled: false needs at least one [[experiment]] (nothing to run)");
}

TEST(Verdict, TheIntervalAgainstTheBound) {
  EXPECT_EQ(judge({10, 19}, 20, true), Verdict::kPass);
  EXPECT_EQ(judge({21, 25}, 20, true), Verdict::kFail);
  EXPECT_EQ(judge({18, 22}, 20, true), Verdict::kInconclusive);
  EXPECT_EQ(judge({-0.02, 0.01}, -0.05, false), Verdict::kPass);
  EXPECT_EQ(judge({-0.09, -0.06}, -0.05, false), Verdict::kFail);
  EXPECT_EQ(judge({-0.06, -0.04}, -0.05, false), Verdict::kInconclusive);
}

TEST(Verdict, ExtraDurationScalesAsOneOverSqrtN) {
  // Estimate 19, bound 20, half-width 2 on the bound's side: the half-width
  // must halve, so n (and the window) must grow 4x: 3 more windows.
  EXPECT_EQ(extra_duration_ns(19, {17, 21}, 20, 1'000'000'000), 3'000'000'000);
  // Above the bound, the low side counts: (4 / 2)^2 = 4 as well.
  EXPECT_EQ(extra_duration_ns(22, {18, 23}, 20, 2'000'000'000), 6'000'000'000);
  // An estimate on the bound: no length decides it.
  EXPECT_FALSE(extra_duration_ns(20, {18, 22}, 20, 1'000'000'000).has_value());
}

TEST(Verdict, OverallIsTheWorstTerm) {
  TermCheck pass, fail, open;
  pass.verdict = Verdict::kPass;
  fail.verdict = Verdict::kFail;
  open.verdict = Verdict::kInconclusive;
  EXPECT_EQ(overall_verdict(std::vector<TermCheck>{pass, pass}), Verdict::kPass);
  EXPECT_EQ(overall_verdict(std::vector<TermCheck>{pass, open}), Verdict::kInconclusive);
  EXPECT_EQ(overall_verdict(std::vector<TermCheck>{open, fail, pass}), Verdict::kFail);
  EXPECT_EQ(parse_verdict("inconclusive"), Verdict::kInconclusive);
  EXPECT_THROW(parse_verdict("maybe"), std::invalid_argument);
}

// iid samples: the stride is 1 and the p99's CI covers the true value; a
// bound far above it passes, far below fails, at it is inconclusive with a
// longer window that would decide it (or none when exactly on it).
TEST(Verdict, WindowOfSamplesAgainstTheSlo) {
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> service(1.0 / 1e6);  // mean 1 ms, p99 4.6 ms
  std::vector<double> latencies;
  for (int i = 0; i < 4000; ++i) latencies.push_back(service(rng));
  const std::vector<PercentileBound> bounds = {{"p99", 0.99, 0}};
  const ExperimentWindow w = experiment_window(latencies, 4040, 2'000'000'000, bounds, 0.95);
  ASSERT_EQ(w.stride, std::size_t{1});
  EXPECT_EQ(w.kept, 4000u);
  ASSERT_TRUE(w.percentiles[0].ci_ns.has_value());
  EXPECT_LT(w.percentiles[0].ci_ns->low, 4.61e6);
  EXPECT_GT(w.percentiles[0].ci_ns->high, 4.61e6);
  EXPECT_NEAR(w.error_rate, 0.0099, 1e-4);
  EXPECT_LT(w.error_ci.low, 0.0099);
  EXPECT_GT(w.error_ci.high, 0.0099);

  SloSpec slo;
  slo.percentiles = {{"p99", 0.99, 20'000'000}};
  slo.max_error_rate = 0.05;
  const auto far_above = check_window("fault", w, w, slo, 0.95);
  ASSERT_EQ(far_above.size(), 2u);
  EXPECT_EQ(far_above[0].verdict, Verdict::kPass);
  EXPECT_EQ(far_above[1].verdict, Verdict::kPass);
  EXPECT_EQ(far_above[0].window, "fault");
  slo.percentiles[0].bound_ns = 1'000'000;
  slo.max_error_rate = 0.001;
  const auto far_below = check_window("fault", w, w, slo, 0.95);
  EXPECT_EQ(far_below[0].verdict, Verdict::kFail);
  EXPECT_EQ(far_below[1].verdict, Verdict::kFail);
  slo.percentiles[0].bound_ns = std::llround(w.percentiles[0].ci_ns->high - 1.0);
  const TermCheck straddling = check_window("fault", w, w, slo, 0.95)[0];
  EXPECT_EQ(straddling.verdict, Verdict::kInconclusive);
  ASSERT_TRUE(straddling.extra_ns.has_value());
  EXPECT_GT(*straddling.extra_ns, 0);

  // Too few samples for a p99 CI: inconclusive, and it says why.
  const std::vector<double> few(latencies.begin(), latencies.begin() + 50);
  const ExperimentWindow small = experiment_window(few, 50, 2'000'000'000, bounds, 0.95);
  const TermCheck c = check_window("fault", small, small, slo, 0.95)[0];
  EXPECT_EQ(c.verdict, Verdict::kInconclusive);
  EXPECT_EQ(c.note, "not iid up to 1:0 in 50 samples");
  // A p99 CI needs some hundreds of samples: several more windows.
  ASSERT_TRUE(c.extra_ns.has_value());
  EXPECT_GT(*c.extra_ns, 2'000'000'000);
}

TEST(Verdict, ThroughputAgainstTheBaselineAtTheOfferedRate) {
  ExperimentWindow baseline, same, halved;
  baseline.scheduled = same.scheduled = halved.scheduled = 2000;
  baseline.completed = same.completed = 2000;
  halved.completed = 1000;
  EXPECT_EQ(throughput_check(same, baseline, -0.05, 0.95).verdict, Verdict::kPass);
  const TermCheck drop = throughput_check(halved, baseline, -0.05, 0.95);
  EXPECT_NEAR(drop.value, -0.5, 1e-9);
  EXPECT_EQ(drop.verdict, Verdict::kFail);
  EXPECT_FALSE(drop.bound_is_max);
}

}  // namespace
}  // namespace nabla::campaign
