// A whole campaign against the fakes (fake_environment.hh), unprivileged and
// in virtual time: the normal path recovers the fake service's known
// gradients and stores every phase; a cancel mid-phase, a failed lease
// renewal and a refused inject.start each stop every injection and store
// the run as failed with what was measured.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "fake_environment.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/common/clock.hh"
#include "nabla/db/sqlite.hh"

namespace nabla::campaign {
namespace {

using fake::FakeClock;
using fake::FakeDaemons;
using fake::FakeService;
using fake::FakeServiceModel;

constexpr const char* kSpec = R"(
name = "fake"
seed = 7
[[node]]
name = "web"
address = "10.0.0.1"
injectd = "127.0.0.1:7311"
sniffd = "127.0.0.1:7312"
[[node]]
name = "app"
address = "10.0.0.2"
injectd = "127.0.0.1:7321"
sniffd = "127.0.0.1:7322"
[[node]]
name = "db"
address = "10.0.0.3"
injectd = "127.0.0.1:7331"
sniffd = "127.0.0.1:7332"
[workload]
target = "http://10.0.0.2:9002"
rate = 2000
mix = { "/a" = 0.5, "/b" = 0.5 }
warmup = "100ms"
[links]
discover_for = "1s"
[gradient]
schedule = "sequential"
bins = 64
chunks = 4
lease = "1s"
)";

// kSpec with every link measured in the same phases.
std::string simultaneous_spec(const std::string& bins) {
  std::string spec = kSpec;
  spec.replace(spec.find("schedule = \"sequential\""), 23, "schedule = \"simultaneous\"");
  spec.replace(spec.find("bins = 64"), 9, "bins = " + bins);
  return spec;
}

// The links the fake sniffers show, as the campaign injects them.
const std::string kWebToApp = "tcp 10.0.0.1:* -> 10.0.0.2:9002";
const std::string kAppToWeb = "tcp 10.0.0.2:9002 -> 10.0.0.1:*";
const std::string kAppToDb = "tcp 10.0.0.2:* -> 10.0.0.3:5432";
const std::string kDbToApp = "tcp 10.0.0.3:5432 -> 10.0.0.2:*";

class CampaignFakes : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = ::testing::TempDir() + "campaign-fakes-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    daemons_.flows["web"] = {
        fake::tcp_flow_end("10.0.0.1", 0, 10, "client", "10.0.0.2", 9002, "outbound")};
    daemons_.flows["app"] = {
        fake::tcp_flow_end("10.0.0.2", 9002, 20, "app", "10.0.0.1", 0, "inbound"),
        fake::tcp_flow_end("10.0.0.2", 0, 20, "app", "10.0.0.3", 5432, "outbound")};
    daemons_.flows["db"] = {
        fake::tcp_flow_end("10.0.0.3", 5432, 30, "db", "10.0.0.2", 0, "inbound")};
  }
  void TearDown() override {
    for (const std::string& f : {db_path_, db_path_ + "-wal", db_path_ + "-shm"}) {
      ::unlink(f.c_str());
    }
  }

  CampaignOutcome run(const std::string& spec = kSpec, LoadRunner* load = nullptr) {
    db::Store store = db::Store::open(db_path_, common::realtime_ns());
    CampaignOptions options;
    options.cancel = &cancel_;
    options.log = &log_;
    options.progress = progress_;
    return run_campaign(parse_campaign_spec(spec), store, options,
                        CampaignEnvironment{clock_, load != nullptr ? *load : service_, daemons_});
  }

  // kWebToApp's gradients within 4 standard errors and 10% of the truth.
  static void expect_web_to_app_undamaged(const CampaignOutcome& o);

  std::int64_t count(const std::string& sql) {
    db::Database db = db::Database::open(db_path_, db::OpenMode::kReadOnly);
    db::Statement st(db, sql);
    EXPECT_TRUE(st.step());
    return st.column_int64(0);
  }
  std::string run_status() {
    db::Database db = db::Database::open(db_path_, db::OpenMode::kReadOnly);
    db::Statement st(db, "SELECT status || ': ' || COALESCE(error, '') FROM runs");
    EXPECT_TRUE(st.step());
    return st.column_text(0);
  }

 public:
  static FakeServiceModel model() {
    FakeServiceModel m;
    m.base_ns = {2'000'000, 3'000'000};
    m.noise_ns = 300'000;
    m.gradients = {{kWebToApp, {1.0, 1.0}},
                   {kAppToWeb, {1.0, 1.0}},
                   {kAppToDb, {3.0, 0.0}},
                   {kDbToApp, {3.0, 0.0}}};
    return m;
  }

 protected:
  std::string db_path_;
  std::ostringstream log_;  // the campaign's notes
  std::function<void(const CampaignProgress&)> progress_;
  std::atomic<int> cancel_{0};
  FakeClock clock_;
  FakeDaemons daemons_{clock_};
  FakeService service_{daemons_, model()};
};

TEST_F(CampaignFakes, NormalPathRecoversTheServiceGradients) {
  const auto wall_start = std::chrono::steady_clock::now();
  const std::int64_t fake_start_ns = clock_.now_ns();
  const CampaignOutcome o = run();
  // The campaign spans more fake time than the wall-time bound, so staying
  // under it shows it never slept for real (the bound leaves room for a
  // loaded CI machine).
  EXPECT_GT(clock_.now_ns() - fake_start_ns, std::int64_t{8'000'000'000});
  EXPECT_LT(std::chrono::steady_clock::now() - wall_start, std::chrono::seconds(8));
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_FALSE(o.interrupted);
  ASSERT_EQ(o.types, (std::vector<std::string>{"/a", "/b"}));
  ASSERT_EQ(o.links.size(), 4u);
  ASSERT_EQ(o.measurements.size(), 4u);
  const FakeServiceModel truth = model();
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    const CampaignLink& l = o.links[i];
    ASSERT_TRUE(l.measurable) << l.label << ": " << l.note;
    ASSERT_EQ(truth.gradients.count(l.spec), 1u) << l.spec;
    const LinkMeasurement& m = o.measurements[i];
    EXPECT_EQ(m.label, l.label);
    // The campaign divides by the delay the injector reports, not the one
    // it asked for.
    EXPECT_TRUE(m.delta_l_measured);
    EXPECT_NEAR(m.delta_l_ns, daemons_.actual_fraction * std::llround(m.amplitude_ns), 1.0);
    ASSERT_EQ(m.gradients.size(), 2u);
    for (std::size_t t = 0; t < 2; ++t) {
      const analysis::GradientEstimate& e = m.gradients[t].estimate;
      const double expected = truth.gradients.at(l.spec)[t];
      EXPECT_GT(e.standard_error, 0) << l.label << " " << o.types[t];
      EXPECT_LT(e.standard_error, 0.15) << l.label << " " << o.types[t];
      EXPECT_NEAR(e.value, expected, 4 * e.standard_error) << l.label << " " << o.types[t];
    }
  }
  EXPECT_EQ(daemons_.injections().size(), 8u);  // an adaptive and an active phase per link
  EXPECT_EQ(daemons_.running(), 0u);
  for (const auto& inj : daemons_.injections()) EXPECT_FALSE(inj.abandoned) << inj.id;

  EXPECT_EQ(run_status(), "complete: ");
  EXPECT_EQ(count("SELECT COUNT(*) FROM links"), 4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 9);  // training + 2 per link
  EXPECT_EQ(count("SELECT COUNT(*) FROM injections"), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients"), 8);
  EXPECT_GT(count("SELECT COUNT(*) FROM samples"), 10'000);
}

// The estimates against the campaign's (virtual) time: the printed one,
// made after discovery, and the one revised once training chose k_d, each
// within 10% of what the campaign then took (read from the progress line's
// time left, which both set).
TEST_F(CampaignFakes, TimeEstimatesAreWithinTenPercent) {
  std::optional<std::pair<std::int64_t, std::int64_t>> at_training, at_links;  // (now, left)
  progress_ = [&](const CampaignProgress& p) {
    if (p.phase == "training" && !at_training) at_training = {{clock_.now_ns(), p.left_ns}};
    if (p.phase == "adaptive" && !at_links) at_links = {{clock_.now_ns(), p.left_ns}};
  };
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  const std::int64_t end = clock_.now_ns();
  ASSERT_TRUE(at_training && at_links);
  for (const auto& [now, left] : {*at_training, *at_links}) {
    const double took = static_cast<double>(end - now);
    EXPECT_NEAR(static_cast<double>(left), took, 0.1 * took) << log_.str();
  }
  EXPECT_NE(log_.str().find("estimated time left: "), std::string::npos) << log_.str();
}

// Every active phase measured again (repeat_noise_ratio = 0 makes each one
// "noisier" than the training): the estimate without repeats falls short,
// its printed upper end is within 10% of what the campaign took, and each
// repeat notes the time left it adds, which the progress line follows.
TEST_F(CampaignFakes, TimeEstimateBoundsTheRepeatedPhases) {
  std::string spec = kSpec;
  spec += "repeat_noise_ratio = 0\n";
  std::optional<std::pair<std::int64_t, std::int64_t>> at_training, last;  // (now, left)
  progress_ = [&](const CampaignProgress& p) {
    if (p.phase == "training" && !at_training) at_training = {{clock_.now_ns(), p.left_ns}};
    last = {{clock_.now_ns(), p.left_ns}};
  };
  const CampaignOutcome o = run(spec);
  ASSERT_TRUE(o.complete) << o.error;
  ASSERT_TRUE(at_training && last);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'active'"),
            2 * static_cast<std::int64_t>(o.links.size()));
  const double took = static_cast<double>(clock_.now_ns() - at_training->first);
  EXPECT_LT(static_cast<double>(o.budget_ns), 0.9 * took);
  EXPECT_NEAR(static_cast<double>(o.budget_if_repeated_ns), took, 0.1 * took) << log_.str();
  const double end_left = static_cast<double>(clock_.now_ns() - last->first);
  EXPECT_NEAR(static_cast<double>(last->second), end_left, 0.1 * took) << log_.str();
  EXPECT_NE(log_.str().find("more if every active phase is measured again"), std::string::npos);
  EXPECT_NE(log_.str().find("(with the phase measured again)"), std::string::npos) << log_.str();
}

// A node that stalls in an active phase holds packets for seconds: the
// injector's delta-l then reads 25% high while the requests those packets
// carried fail and leave the samples, so the phase's gradient would read
// 0.8 of the truth with a CI that does not say so. The phase is measured
// again and left out, and the gradient is the undamaged phase's.
TEST_F(CampaignFakes, AStalledActivePhaseIsMeasuredAgainAndLeftOut) {
  int web_to_app_stops = 0;
  daemons_.on_stop = [&](const fake::FakeInjection& inj, InjectionStats& s) {
    if (inj.request.link_spec != kWebToApp) return;
    if (++web_to_app_stops != 2) return;  // the first is the adaptive sub-phase's
    s.high.mean_ns *= 1.25;
    s.actual_max_ns = 2e9;
  };
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(web_to_app_stops, 3);  // adaptive, the stalled active phase, its repeat
  EXPECT_NE(log_.str().find("a packet was held 2s, longer than the request timeout 1s in the "
                            "active phase; measuring it again"),
            std::string::npos)
      << log_.str();
  EXPECT_NE(log_.str().find("active phase 1 of 2 left out"), std::string::npos) << log_.str();
  expect_web_to_app_undamaged(o);
}

// The same with the packet held just under the request timeout, so that
// hardly a request failed: the hold alone moves delta-l by over 1%.
TEST_F(CampaignFakes, APacketHeldThroughAStallUnderTheTimeoutDamagesThePhaseToo) {
  int web_to_app_stops = 0;
  daemons_.on_stop = [&](const fake::FakeInjection& inj, InjectionStats& s) {
    if (inj.request.link_spec != kWebToApp || ++web_to_app_stops != 2) return;
    s.high.mean_ns *= 1.2;
    s.actual_max_ns = 0.99e9;
  };
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(web_to_app_stops, 3);
  EXPECT_NE(log_.str().find("a packet was held 990ms, enough alone to move delta-l by"),
            std::string::npos)
      << log_.str();
  expect_web_to_app_undamaged(o);
}

// A wave's own jitter is no stall: a packet held a few amplitudes long.
TEST_F(CampaignFakes, APacketHeldAFewAmplitudesIsNoDamage) {
  daemons_.on_stop = [&](const fake::FakeInjection&, InjectionStats& s) {
    s.actual_max_ns = 4 * s.high.mean_ns;
  };
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(log_.str().find("left out"), std::string::npos) << log_.str();
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'active'"),
            static_cast<std::int64_t>(o.links.size()));
}

void CampaignFakes::expect_web_to_app_undamaged(const CampaignOutcome& o) {
  const FakeServiceModel truth = model();
  int found = 0;
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    if (o.links[i].spec != kWebToApp) continue;
    ++found;
    ASSERT_FALSE(o.measurements[i].gradients.empty());
    for (std::size_t t = 0; t < o.measurements[i].gradients.size(); ++t) {
      const analysis::GradientEstimate& e = o.measurements[i].gradients[t].estimate;
      EXPECT_NEAR(e.value, truth.gradients.at(kWebToApp)[t], 4 * e.standard_error);
      EXPECT_GT(e.value, 0.9 * truth.gradients.at(kWebToApp)[t]);
    }
  }
  EXPECT_EQ(found, 1);
}

// Every link in the same two phases, each at its own frequency: the same
// gradients, in less (virtual) time than one link after another.
TEST_F(CampaignFakes, SimultaneousScheduleRecoversTheGradientsInLessTime) {
  const std::int64_t sequential_start = clock_.now_ns();
  ASSERT_TRUE(run().complete);
  const std::int64_t sequential_ns = clock_.now_ns() - sequential_start;
  TearDown();
  const std::size_t sequential_injections = daemons_.injections().size();

  const std::string spec = simultaneous_spec("64");
  const std::int64_t start = clock_.now_ns();
  const CampaignOutcome o = run(spec);
  const std::int64_t simultaneous_ns = clock_.now_ns() - start;
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_LT(simultaneous_ns, sequential_ns);
  ASSERT_EQ(o.measurements.size(), 4u);
  const FakeServiceModel truth = model();
  std::set<int> frequencies;
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    const LinkMeasurement& m = o.measurements[i];
    EXPECT_TRUE(m.simultaneous);
    frequencies.insert(m.k_d);
    EXPECT_TRUE(m.delta_l_measured);
    for (std::size_t t = 0; t < 2; ++t) {
      const analysis::GradientEstimate& e = m.gradients[t].estimate;
      const double expected = truth.gradients.at(o.links[i].spec)[t];
      EXPECT_GT(e.standard_error, 0) << m.label << " " << o.types[t];
      EXPECT_LT(e.standard_error, 0.15) << m.label << " " << o.types[t];
      EXPECT_NEAR(e.value, expected, 4 * e.standard_error) << m.label << " " << o.types[t];
    }
  }
  EXPECT_EQ(frequencies.size(), 4u);  // one frequency per link
  // Links that do not interact: no gradient is said to depend on the others.
  for (const LinkMeasurement& m : o.measurements) {
    for (const TypeGradient& g : m.gradients) {
      ASSERT_TRUE(g.interaction) << m.label << " " << g.type;
      EXPECT_FALSE(g.depends_on_other_links) << m.label << " " << g.type;
    }
  }
  // Each link's first amplitude is the one its first phase injected.
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    const fake::FakeInjection& first = daemons_.injections().at(sequential_injections + i);
    EXPECT_EQ(first.request.link_spec, o.links[i].spec);
    EXPECT_EQ(first.request.amplitude_ns, std::llround(o.measurements[i].training_amplitude_ns));
  }
  // Two phases, each injecting all four links at once.
  EXPECT_EQ(daemons_.injections().size() - sequential_injections, 8u);
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'simultaneous'"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM injections"), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients WHERE schedule = 'simultaneous'"), 8);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT k_d) FROM gradients"), 4);
}

// Links that interact: a request's response also rises by c times the
// product of the delays on web -> app and app -> db (and on their response
// directions). The default sequential schedule delays one link at a time,
// so it reads every gradient at the undisturbed operating point, the
// others at no added delay; the simultaneous one reads g_j + c * Δl_l / 2,
// the gradient with the other link at its mean injected delay
// (docs/method.md, "Choosing the schedule"), and moves the mean response
// further from the training's.
TEST_F(CampaignFakes, InteractingLinksSequentialScheduleReadsTheUndisturbedGradients) {
  FakeServiceModel interacting = model();
  constexpr double kC = 6e-7;  // response ns per ns of one delay per ns of the other
  interacting.interactions = {{kWebToApp, kAppToDb, {kC, kC}}, {kAppToWeb, kDbToApp, {kC, kC}}};
  const std::map<std::string, std::string> partner = {
      {kWebToApp, kAppToDb}, {kAppToDb, kWebToApp}, {kAppToWeb, kDbToApp}, {kDbToApp, kAppToWeb}};
  FakeService sequential_service{daemons_, interacting};
  const CampaignOutcome seq = run(kSpec, &sequential_service);
  ASSERT_TRUE(seq.complete) << seq.error;
  TearDown();
  FakeService simultaneous_service{daemons_, interacting};
  const CampaignOutcome sim = run(simultaneous_spec("64"), &simultaneous_service);
  ASSERT_TRUE(sim.complete) << sim.error;
  ASSERT_EQ(seq.measurements.size(), 4u);
  ASSERT_EQ(sim.measurements.size(), 4u);

  auto delta_l_of = [](const CampaignOutcome& o, const std::string& spec) {
    for (std::size_t i = 0; i < o.links.size(); ++i) {
      if (o.links[i].spec == spec) return o.measurements[i].delta_l_ns;
    }
    ADD_FAILURE() << "no link " << spec;
    return 0.0;
  };
  int told_apart = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string& spec = seq.links[i].spec;
    ASSERT_EQ(sim.links[i].spec, spec);
    for (std::size_t t = 0; t < 2; ++t) {
      const double g = interacting.gradients.at(spec)[t];
      const analysis::GradientEstimate& s = seq.measurements[i].gradients[t].estimate;
      EXPECT_NEAR(s.value, g, 4 * s.standard_error) << "sequential " << spec << " " << t;
      const analysis::GradientEstimate& m = sim.measurements[i].gradients[t].estimate;
      const double shifted = g + kC * delta_l_of(sim, partner.at(spec)) / 2;
      EXPECT_NEAR(m.value, shifted, 4 * m.standard_error) << "simultaneous " << spec << " " << t;
      if (shifted - g > 4 * (s.standard_error + m.standard_error)) ++told_apart;
      // The interaction check reads the shift from the product lines, and
      // the sequential gradients carry none.
      const TypeGradient& flagged = sim.measurements[i].gradients[t];
      ASSERT_TRUE(flagged.interaction) << spec << " " << t;
      EXPECT_NEAR(flagged.interaction->value, shifted - g, 4 * flagged.interaction->standard_error)
          << spec << " " << t;
      if (shifted - g > 4 * (s.standard_error + m.standard_error)) {
        EXPECT_TRUE(flagged.depends_on_other_links) << spec << " " << t;
      }
      EXPECT_FALSE(seq.measurements[i].gradients[t].interaction);
    }
  }
  EXPECT_GE(told_apart, 4);  // the interaction is strong enough to tell the schedules apart
  // Every delay at once moves each type's mean response further.
  for (std::size_t t = 0; t < 2; ++t) {
    double seq_largest = 0, sim_largest = 0;
    for (const LinkMeasurement& m : seq.measurements) {
      seq_largest = std::max(seq_largest, m.gradients[t].perturbation_ns);
    }
    for (const LinkMeasurement& m : sim.measurements) {
      sim_largest = std::max(sim_largest, m.gradients[t].perturbation_ns);
    }
    EXPECT_GT(sim_largest, seq_largest) << seq.types[t];
  }
}

// Eight links with known gradients and two interacting pairs, over 30
// seeds with the default schedule: every gradient at the undisturbed
// operating point (the other links at no added delay) within 5% of
// max(g, 1), and the CIs covering at about their level. The interaction is
// as strong as on the demo under load: both links of a pair delayed by 5 ms
// raise the response 2.5% more than the sum of each.
TEST_F(CampaignFakes, EightInteractingLinksOverManySeedsKeepGradientsAndCoverage) {
  const std::string kAppToCache = "tcp 10.0.0.2:* -> 10.0.0.4:11211";
  const std::string kCacheToApp = "tcp 10.0.0.4:11211 -> 10.0.0.2:*";
  const std::string kWebToAuth = "tcp 10.0.0.1:* -> 10.0.0.5:9100";
  const std::string kAuthToWeb = "tcp 10.0.0.5:9100 -> 10.0.0.1:*";
  daemons_.flows["app"].push_back(
      fake::tcp_flow_end("10.0.0.2", 0, 20, "app", "10.0.0.4", 11211, "outbound"));
  daemons_.flows["cache"] = {
      fake::tcp_flow_end("10.0.0.4", 11211, 40, "memcached", "10.0.0.2", 0, "inbound")};
  daemons_.flows["web"].push_back(
      fake::tcp_flow_end("10.0.0.1", 0, 10, "client", "10.0.0.5", 9100, "outbound"));
  daemons_.flows["auth"] = {
      fake::tcp_flow_end("10.0.0.5", 9100, 50, "auth", "10.0.0.1", 0, "inbound")};
  FakeServiceModel interacting = model();
  interacting.noise_ns = 100'000;
  interacting.gradients[kAppToCache] = {2.0, 0.0};
  interacting.gradients[kCacheToApp] = {2.0, 0.0};
  interacting.gradients[kWebToAuth] = {0.0, 1.0};
  interacting.gradients[kAuthToWeb] = {0.0, 1.0};
  constexpr double kC = 5e-9;  // x 5 ms of each: 2.5% of their 10 ms sum
  interacting.interactions = {{kWebToApp, kAppToDb, {kC, kC}},
                              {kAppToCache, kCacheToApp, {kC, kC}}};
  std::string nodes = std::string(kSpec);
  const std::string more_nodes = R"([[node]]
name = "cache"
address = "10.0.0.4"
injectd = "127.0.0.1:7341"
sniffd = "127.0.0.1:7342"
[[node]]
name = "auth"
address = "10.0.0.5"
injectd = "127.0.0.1:7351"
sniffd = "127.0.0.1:7352"
)";
  nodes.insert(nodes.find("[workload]"), more_nodes);
  // 30 seeds in the suite; bench/campaign/synthetic_seeds.sh runs 200.
  const char* seeds_env = std::getenv("NABLA_CAMPAIGN_SEEDS");
  const int seeds = seeds_env != nullptr ? std::max(1, std::atoi(seeds_env)) : 30;
  int covered = 0, total = 0, within = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::string spec = nodes;
    spec.replace(spec.find("seed = 7"), 8, "seed = " + std::to_string(seed));
    // d = 300: an SNR high enough that 5% is several standard errors.
    spec.replace(spec.find("lease = \"1s\""), 12, "lease = \"1s\"\ndelay_scale = 300");
    FakeService service{daemons_, interacting};
    const CampaignOutcome o = run(spec, &service);
    ASSERT_TRUE(o.complete) << seed << ": " << o.error;
    ASSERT_EQ(o.measurements.size(), 8u);
    for (std::size_t i = 0; i < o.links.size(); ++i) {
      for (std::size_t t = 0; t < 2; ++t) {
        const double g = interacting.gradients.at(o.links[i].spec)[t];
        const analysis::GradientEstimate& e = o.measurements[i].gradients[t].estimate;
        const bool close = std::abs(e.value - g) <= 0.05 * std::max(g, 1.0);
        EXPECT_TRUE(close) << seed << " " << o.links[i].label << " " << t << ": " << e.value;
        within += close ? 1 : 0;
        covered += e.ci_low <= g && g <= e.ci_high ? 1 : 0;
        ++total;
      }
    }
    TearDown();
  }
  EXPECT_EQ(within, total);
  const double coverage = static_cast<double>(covered) / total;
  EXPECT_GE(coverage, 0.90);
  EXPECT_LE(coverage, 0.99);
  std::printf("%d seeds: %d of %d gradients within 5%%, coverage %.3f over %d CIs\n", seeds, within,
              total, coverage, total);
}

// A simultaneous phase noisier than the training is measured again, as a
// sequential active phase is: repeat_noise_ratio = 0 makes every phase
// "noisier", so `repeats` = 1 adds one phase of every link and 0 adds none.
TEST_F(CampaignFakes, SimultaneousScheduleRepeatsANoisyPhaseUpToRepeats) {
  std::string spec = simultaneous_spec("64");
  spec.replace(spec.find("lease = \"1s\""), 12, "lease = \"1s\"\nrepeat_noise_ratio = 0");
  const CampaignOutcome o = run(spec);
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'simultaneous'"), 3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM injections"), 12);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT phase_id) FROM gradients"), 1);
  EXPECT_EQ(count("SELECT MAX(id) FROM phases WHERE kind = 'simultaneous'"),
            count("SELECT MIN(phase_id) FROM gradients"));
  const FakeServiceModel truth = model();
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const analysis::GradientEstimate& e = o.measurements[i].gradients[t].estimate;
      EXPECT_NEAR(e.value, truth.gradients.at(o.links[i].spec)[t], 4 * e.standard_error);
    }
  }
  TearDown();
  spec.replace(spec.find("repeat_noise_ratio = 0"), 22, "repeat_noise_ratio = 0\nrepeats = 0");
  ASSERT_TRUE(run(spec).complete);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'simultaneous'"), 2);  // a new file
}

// Sniffers whose counts move with the load, on a clock 5 s behind the
// campaign's: the client sends one segment per request to web -> app, app
// sends three per /a and none per /b to the database. A scan every `scan_ns`
// (0: at every call).
void count_messages_like_a_sniffer(FakeDaemons& daemons, const FakeService& service,
                                   std::int64_t scan_ns) {
  constexpr std::int64_t kSnifferClockNs = -5'000'000'000;
  daemons.live_flows = [&daemons, &service, scan_ns](const std::string& node, std::int64_t now_ns) {
    const std::int64_t scan = scan_ns > 0 ? now_ns / scan_ns * scan_ns : now_ns;
    std::vector<FlowEnd> flows = daemons.flows.at(node);
    for (FlowEnd& f : flows) {
      f.last_seen_ns = scan + kSnifferClockNs;
      if (node == "web") f.segments_out += service.segments_sent(kWebToApp, scan);
      if (node == "app" && f.remote_port == 5432) {
        f.segments_out += service.segments_sent(kAppToDb, scan);
      }
    }
    return flows;
  };
}

FakeServiceModel model_with_messages() {
  FakeServiceModel m = CampaignFakes::model();
  m.messages = {{kWebToApp, {1.0, 1.0}}, {kAppToDb, {3.0, 0.0}}};
  return m;
}

double expected_messages(const FakeServiceModel& m, const std::string& spec, std::size_t type) {
  const auto it = m.messages.find(spec);
  // A link whose counts did not move carried no message per request.
  return it == m.messages.end() ? 0.0 : it->second.at(type);
}

// Counts read at every poll are exact, so each link's messages per
// transaction per type come out exactly (least squares over the two
// types), from its source's records, and are stored beside the gradient.
TEST_F(CampaignFakes, MessagesPerTransactionComeExactlyFromExactCounts) {
  const FakeServiceModel m = model_with_messages();
  FakeService service{daemons_, m};
  count_messages_like_a_sniffer(daemons_, service, 0);
  const CampaignOutcome o = run(kSpec, &service);
  ASSERT_TRUE(o.complete) << o.error;
  ASSERT_EQ(o.measurements.size(), 4u);
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const auto& msgs = o.measurements[i].gradients[t].messages;
      ASSERT_TRUE(msgs) << o.links[i].label << " " << o.types[t];
      EXPECT_NEAR(msgs->value, expected_messages(m, o.links[i].spec, t), 1e-6)
          << o.links[i].label << " " << o.types[t];
    }
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients WHERE messages_per_txn IS NOT NULL"), 8);
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients WHERE messages_ci_low <= messages_per_txn "
                  "AND messages_per_txn <= messages_ci_high"),
            8);
}

// A scan every 130 ms, the campaign polling every 50 ms as it waits: the
// sniffer's clock is placed to within a poll, so a few requests land in the
// neighbouring interval; the truth stays within the estimates' intervals.
// N = 256 bins give the window about ten scans.
TEST_F(CampaignFakes, MessagesPerTransactionFromScansStayWithinTheirIntervals) {
  const FakeServiceModel m = model_with_messages();
  FakeService service{daemons_, m};
  count_messages_like_a_sniffer(daemons_, service, 130'000'000);
  const std::string spec = simultaneous_spec("256");
  const CampaignOutcome o = run(spec, &service);
  ASSERT_TRUE(o.complete) << o.error;
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const auto& msgs = o.measurements[i].gradients[t].messages;
      ASSERT_TRUE(msgs) << o.links[i].label << " " << o.types[t];
      // The links whose counts move have residuals; the others are exactly 0.
      if (m.messages.count(o.links[i].spec) > 0) {
        EXPECT_GT(msgs->standard_error, 0) << o.links[i].label << " " << o.types[t];
      }
      EXPECT_NEAR(msgs->value, expected_messages(m, o.links[i].spec, t),
                  std::max(4 * msgs->standard_error, 1e-9))
          << o.links[i].label << " " << o.types[t] << ": " << msgs->value << " ± "
          << msgs->standard_error;
    }
  }
}

// Without counts that move (a sniffer that saw the flows once) there is no
// estimate, and the gradients are stored without one.
TEST_F(CampaignFakes, NoMovingCountsNoMessagesPerTransaction) {
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  for (const LinkMeasurement& m : o.measurements) {
    for (const TypeGradient& g : m.gradients) EXPECT_FALSE(g.messages) << m.label;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients WHERE messages_per_txn IS NULL"), 8);
}

TEST_F(CampaignFakes, CancelMidPhaseStopsTheInjectionAndStoresWhatWasMeasured) {
  // The second injection is the first link's active phase: cancel halfway
  // through its window.
  daemons_.on_start = [this](const fake::FakeInjection& inj) {
    if (daemons_.injections().size() == 2) {
      clock_.at(inj.started_ns + inj.request.period_ns / 2, [this] { cancel_ = 15; });
    }
  };
  const CampaignOutcome o = run();
  EXPECT_FALSE(o.complete);
  EXPECT_TRUE(o.interrupted);
  EXPECT_EQ(o.error, "interrupted by signal 15");
  EXPECT_TRUE(o.measurements.empty());
  ASSERT_EQ(daemons_.injections().size(), 2u);
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_TRUE(daemons_.injections().back().abandoned);
  EXPECT_EQ(run_status(), "failed: interrupted by signal 15");
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 2);  // training and the adaptive phase
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients"), 0);
}

TEST_F(CampaignFakes, LeasesAreRenewedEveryQuarterLeaseOfClockTime) {
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  const std::int64_t quarter_ns = 250'000'000;  // lease = 1s
  std::size_t renewed = 0;
  for (const auto& inj : daemons_.injections()) {
    const std::int64_t held_ns = *inj.stopped_ns - inj.started_ns;
    // Renewed at the first wait slice (50 ms) at or after each quarter.
    EXPECT_GE(inj.renewals_ns.size(), static_cast<std::size_t>(held_ns / (quarter_ns + 50'000'000)))
        << inj.id;
    EXPECT_LE(inj.renewals_ns.size(), static_cast<std::size_t>(held_ns / quarter_ns)) << inj.id;
    std::int64_t last_ns = inj.started_ns;
    for (const std::int64_t at_ns : inj.renewals_ns) {
      EXPECT_GE(at_ns - last_ns, quarter_ns) << inj.id;
      EXPECT_LE(at_ns - last_ns, quarter_ns + 50'000'000) << inj.id;
      last_ns = at_ns;
    }
    renewed += inj.renewals_ns.size();
  }
  EXPECT_GT(renewed, 8u);
}

TEST_F(CampaignFakes, AFailedRenewalFailsTheRunAndStopsTheInjection) {
  daemons_.fail_renewal_from = 3;
  const CampaignOutcome o = run();
  EXPECT_FALSE(o.complete);
  EXPECT_FALSE(o.interrupted);
  EXPECT_NE(o.error.find(": lease.renew of inj-"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("failed: unknown injection"), std::string::npos) << o.error;
  EXPECT_EQ(o.error.rfind("node ", 0), 0u) << o.error;
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_TRUE(daemons_.injections().back().abandoned);
  EXPECT_EQ(run_status().rfind("failed: node ", 0), 0u) << run_status();
}

// A node that takes longer to start an injection than the load waits for
// (a stall under other work) costs a phase, not the run: the phase is
// started again, with a warning, and the gradients are the same.
// [gradient] precision: a link is measured again (within `repeats`) while a
// type's CI is wider than the precision asks, and then stops: every link
// ends within it or with every repeat spent, and a link that met it at once
// is not measured again.
TEST_F(CampaignFakes, PrecisionRepeatsALinkUntilItsIntervalsAreNarrowEnough) {
  std::string spec = kSpec;
  spec += "repeats = 3\nprecision = 0.05\n";
  const CampaignOutcome o = run(spec);
  ASSERT_TRUE(o.complete) << o.error;
  std::size_t repeated = 0;
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    // One injection for the adaptive sub-phase, one per active phase.
    std::int64_t phases = -1;
    for (const auto& inj : daemons_.injections())
      phases += inj.request.link_spec == o.links[i].spec;
    ASSERT_GE(phases, 1) << o.links[i].label;
    ASSERT_LE(phases, 4) << o.links[i].label;
    repeated += phases > 1;
    double widest = 0;
    for (const TypeGradient& g : o.measurements[i].gradients) {
      widest = std::max(widest, (g.estimate.ci_high - g.estimate.ci_low) / 2 /
                                    std::max(std::abs(g.estimate.value), 1.0));
    }
    if (phases < 4) {
      EXPECT_LE(widest, 0.05) << o.links[i].label << " stopped after " << phases << " phases";
    }
  }
  EXPECT_GT(repeated, 0u);
  EXPECT_NE(log_.str().find("more than the precision 0.05 asks; measuring it again"),
            std::string::npos)
      << log_.str();
  // Off by default: the same campaign without it measures each link once.
  spec = kSpec;
  spec += "repeats = 3\n";
  TearDown();
  const CampaignOutcome plain = run(spec);
  ASSERT_TRUE(plain.complete) << plain.error;
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'active'"),
            static_cast<std::int64_t>(plain.links.size()));
}

TEST_F(CampaignFakes, ASlowInjectStartRedoesThePhase) {
  daemons_.on_start = [this](const fake::FakeInjection&) {
    if (daemons_.injections().size() == 2) clock_.sleep_until(clock_.now_ns() + 900'000'000);
  };
  const CampaignOutcome o = run();
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(daemons_.injections().size(), 9u);  // one phase started twice
  EXPECT_TRUE(daemons_.injections()[1].stopped_ns.has_value());
  EXPECT_EQ(daemons_.running(), 0u);
  std::size_t redone = 0;
  for (const std::string& w : o.warnings) {
    redone += w.find("inject.start took") != std::string::npos &&
              w.find("the phase was started again") != std::string::npos;
  }
  EXPECT_EQ(redone, 1u);
  const FakeServiceModel truth = model();
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const analysis::GradientEstimate& e = o.measurements[i].gradients[t].estimate;
      EXPECT_NEAR(e.value, truth.gradients.at(o.links[i].spec)[t], 4 * e.standard_error)
          << o.links[i].label << " " << o.types[t];
    }
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 9);  // the late start stored nothing
}

TEST_F(CampaignFakes, AnInjectStartSlowEveryTimeFailsTheRunAfterThreeAttempts) {
  daemons_.on_start = [this](const fake::FakeInjection&) {
    clock_.sleep_until(clock_.now_ns() + 900'000'000);
  };
  const CampaignOutcome o = run();
  EXPECT_FALSE(o.complete);
  EXPECT_EQ(o.error.rfind("node app: inject.start took ", 0), 0u) << o.error;
  EXPECT_NE(o.error.find(", in 3 attempts"), std::string::npos) << o.error;
  EXPECT_EQ(daemons_.injections().size(), 3u);
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_EQ(run_status(), "failed: " + o.error);
}

TEST_F(CampaignFakes, ASlowStartOfTheSimultaneousInjectionsRedoesThePhase) {
  daemons_.on_start = [this](const fake::FakeInjection&) {
    if (daemons_.injections().size() == 2) clock_.sleep_until(clock_.now_ns() + 900'000'000);
  };
  const CampaignOutcome o = run(simultaneous_spec("64"));
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_EQ(daemons_.injections().size(), 12u);  // the first phase's four started twice
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(daemons_.injections()[i].stopped_ns.has_value()) << i;
  }
  EXPECT_EQ(daemons_.running(), 0u);
  std::size_t redone = 0;
  for (const std::string& w : o.warnings) {
    redone += w.rfind("starting 4 injections took ", 0) == 0 &&
              w.find("the phase was started again") != std::string::npos;
  }
  EXPECT_EQ(redone, 1u);
  const FakeServiceModel truth = model();
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const analysis::GradientEstimate& e = o.measurements[i].gradients[t].estimate;
      EXPECT_NEAR(e.value, truth.gradients.at(o.links[i].spec)[t], 4 * e.standard_error)
          << o.links[i].label << " " << o.types[t];
    }
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'simultaneous'"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM injections"), 8);  // the late start stored nothing
}

TEST_F(CampaignFakes, SimultaneousInjectionsSlowEveryTimeFailTheRunAfterThreeAttempts) {
  daemons_.on_start = [this](const fake::FakeInjection&) {
    clock_.sleep_until(clock_.now_ns() + 200'000'000);
  };
  const CampaignOutcome o = run(simultaneous_spec("64"));
  EXPECT_FALSE(o.complete);
  EXPECT_EQ(o.error.rfind("starting 4 injections took ", 0), 0u) << o.error;
  EXPECT_NE(o.error.find(", in 3 attempts"), std::string::npos) << o.error;
  EXPECT_EQ(daemons_.injections().size(), 12u);
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_EQ(run_status(), "failed: " + o.error);
}

TEST_F(CampaignFakes, ARefusedInjectStartFailsTheRunNamingTheNode) {
  daemons_.refuse_start_on = {"app"};  // the first link measured starts at app
  const CampaignOutcome o = run();
  EXPECT_FALSE(o.complete);
  EXPECT_EQ(o.error, "node app: inject.start on " + kAppToDb + " failed: injection refused");
  EXPECT_TRUE(daemons_.injections().empty());
  EXPECT_EQ(run_status(), "failed: " + o.error);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 1);  // the training
}

constexpr const char* kExperiments = R"(
[[experiment]]
name = "db-slow"
links = ["tcp app -> db:5432"]
delay = "10ms"
baseline = "1s"
fault = "1s"
recovery = "1s"
slo = { p99 = "200ms", errors = "1%", throughput = "-5%" }
[[experiment]]
name = "db-slow-tight"
links = ["tcp app -> db:5432"]
delay = "10ms"
baseline = "1s"
fault = "1s"
recovery = "1s"
slo = { p99 = "10ms" }
)";

// After the gradients, a delay on app -> db (gradient 3 for /a, 0 for /b,
// the injector adding 8 ms of the 10 asked): the mean response time rises by
// 0.5 x 3 x 8 ms = 12 ms, and the gradients predict it; a p99 bound far above
// the fault window's passes, one below it fails, and each is stored.
TEST_F(CampaignFakes, ExperimentsJudgeTheSloAndTheGradientsPredictTheChange) {
  const CampaignOutcome o = run(std::string(kSpec) + kExperiments);
  ASSERT_TRUE(o.complete) << o.error;
  ASSERT_EQ(o.experiments.size(), 2u);
  const ExperimentOutcome& ok = o.experiments[0];
  EXPECT_EQ(ok.links, std::vector<std::string>{"tcp app -> db:5432"});
  EXPECT_EQ(ok.verdict, Verdict::kPass);
  EXPECT_EQ(o.experiments[1].verdict, Verdict::kFail);
  ASSERT_TRUE(ok.mean_delay_ns.has_value());
  EXPECT_DOUBLE_EQ(*ok.mean_delay_ns, 8e6);
  EXPECT_NEAR(ok.observed_change_ns, 12e6, 1.5e6);
  ASSERT_TRUE(ok.observed_ci_ns.has_value());
  ASSERT_TRUE(ok.predicted_change_ns.has_value());
  EXPECT_NEAR(*ok.predicted_change_ns, 12e6, 1.5e6);
  EXPECT_LT(ok.predicted_ci_ns->low, *ok.predicted_change_ns);
  for (const TermCheck& c : o.experiments[1].checks) {
    const Verdict expected = c.window == "fault" ? Verdict::kFail : Verdict::kPass;
    EXPECT_EQ(c.verdict, expected) << c.window << " " << c.term;
  }
  // Every experiment's injection carries its fault, and all are stopped.
  EXPECT_TRUE(daemons_.injections().back().request.fault.has_value());
  EXPECT_EQ(daemons_.running(), 0u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM experiments"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM experiment_checks"), 8 + 3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM experiments WHERE verdict = 'fail'"), 1);
}

// gradient.enabled = false: discovery, then the experiments alone, with no
// prediction (no gradients); a link named by its source node.
TEST_F(CampaignFakes, ExperimentsAloneWithoutGradients) {
  std::string spec = kSpec;
  spec.replace(spec.find("bins = 64"), 9, "bins = 64\nenabled = false");
  spec += R"(
[[experiment]]
name = "from-db"
nodes = ["db"]
delay = "10ms"
baseline = "1s"
fault = "1s"
recovery = "1s"
slo = { p50 = "1s" }
)";
  const CampaignOutcome o = run(spec);
  ASSERT_TRUE(o.complete) << o.error;
  EXPECT_TRUE(o.measurements.empty());
  ASSERT_EQ(o.experiments.size(), 1u);
  EXPECT_EQ(o.experiments[0].links, std::vector<std::string>{"tcp db:5432 -> app"});
  EXPECT_EQ(o.experiments[0].verdict, Verdict::kPass);
  EXPECT_FALSE(o.experiments[0].predicted_change_ns.has_value());
  EXPECT_EQ(daemons_.injections().size(), 1u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM experiments"), 1);
}

// A response link whose gradient grows with the delay (as a server's second
// send waiting for the ACK of its first): it adds d below 2 ms and 2d - 2 ms
// above, so the square wave reads 1 at small amplitudes and nearly 2 at large
// ones. The sweep stores a gradient per amplitude and finds where linearity
// breaks; the other links stay linear; a step checks each headline gradient.
TEST_F(CampaignFakes, SweepFindsTheAmplitudeWhereALinkStopsBeingLinear) {
  FakeServiceModel m = model();
  m.gradients.erase(kAppToWeb);
  m.responses[kAppToWeb] = [](std::uint32_t, double d) { return d < 2e6 ? d : 2 * d - 2e6; };
  FakeService service(daemons_, m);
  std::string spec = kSpec;
  spec.replace(spec.find("bins = 64"), 9,
               "bins = 64\namplitudes = [\"16ms\", \"1ms\", \"4ms\"]\nverify = true");
  const CampaignOutcome o = run(spec, &service);
  ASSERT_TRUE(o.complete) << o.error;
  ASSERT_EQ(o.measurements.size(), 4u);
  for (std::size_t i = 0; i < o.links.size(); ++i) {
    const LinkMeasurement& lm = o.measurements[i];
    ASSERT_EQ(lm.sweep.size(), 3u) << lm.label;
    EXPECT_EQ(lm.sweep.front().requested_ns, 1'000'000);
    EXPECT_EQ(lm.sweep.back().requested_ns, 16'000'000);
    ASSERT_EQ(lm.linearity.size(), 2u);
    EXPECT_NEAR(lm.step_delay_ns, daemons_.actual_fraction * lm.amplitude_ns, 1.0);
    const bool nagle = o.links[i].spec == kAppToWeb;
    for (std::size_t t = 0; t < 2; ++t) {
      const TypeGradient& tg = lm.gradients[t];
      ASSERT_TRUE(tg.step.has_value()) << lm.label;
      // The step reads the response at the held delay, d_h = 0.8 x amplitude.
      const double d_h = lm.step_delay_ns;
      const double truth =
          nagle ? (d_h < 2e6 ? 1.0 : 2.0 - 2e6 / d_h) : m.gradients.at(o.links[i].spec)[t];
      EXPECT_NEAR(tg.step->value, truth, 4 * tg.step->standard_error + 0.02) << lm.label;
      EXPECT_LT(tg.step->standard_error, 0.2) << lm.label;
    }
    if (nagle) {
      for (std::size_t t = 0; t < 2; ++t) {
        EXPECT_EQ(lm.linearity[t].kind, analysis::Linearity::kBreaks)
            << analysis::describe(lm.linearity[t]);
        EXPECT_EQ(lm.linearity[t].breaks_at_ns, 4e6);
        // 0.8 ms held: gradient 1; 12.8 ms: 2 - 2/12.8 = 1.84.
        EXPECT_NEAR(lm.sweep.front().gradients[t].estimate.value, 1.0, 0.15);
        EXPECT_NEAR(lm.sweep.back().gradients[t].estimate.value, 1.84, 0.15);
      }
    } else if (o.links[i].spec == kWebToApp) {
      for (std::size_t t = 0; t < 2; ++t) {
        EXPECT_EQ(lm.linearity[t].kind, analysis::Linearity::kLinear)
            << analysis::describe(lm.linearity[t]);
      }
    }
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradient_amplitudes"), 4 * 2 * 3);
  EXPECT_EQ(count("SELECT COUNT(*) FROM phases WHERE kind = 'step'"), 4);
  // Each step is a square wave of two cycles: on, off, on, off.
  EXPECT_EQ(count("SELECT COUNT(*) FROM injections i JOIN phases p ON p.id = i.phase_id "
                  "WHERE p.kind = 'step' AND i.waveform = 'square' AND p.bins = 48"),
            4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients WHERE step_value IS NOT NULL"), 8);
  // Each gradient row is one of its sweep's rows.
  EXPECT_EQ(count("SELECT COUNT(*) FROM gradients g JOIN gradient_amplitudes a "
                  "ON a.gradient_id = g.id AND a.phase_id = g.phase_id AND a.value = g.value"),
            8);
}

}  // namespace
}  // namespace nabla::campaign
