// The policy of `nabla nodes check` with literal facts: the NTP-style clock
// estimate in closed form, what a campaign needs, and the verdict on a node
// for each way it can fail.
#include "nabla/coordinator/nodes_check.hh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nabla/campaign/math.hh"

namespace nabla::coordinator {
namespace {

constexpr std::int64_t kUs = 1'000;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

// A sample whose request took `there_ns`, whose answer took `back_ns`, from a
// daemon whose clock is `offset_ns` ahead.
ClockSample sample(std::int64_t sent_ns, std::int64_t there_ns, std::int64_t back_ns,
                   std::int64_t offset_ns) {
  return {sent_ns, sent_ns + there_ns + offset_ns, sent_ns + there_ns + back_ns};
}

TEST(ClockOffset, SymmetricDelaysGiveTheExactOffset) {
  const std::vector<ClockSample> s{sample(kT0, 100 * kUs, 100 * kUs, 5 * kMs)};
  const ClockEstimate e = estimate_clock_offset(s);
  EXPECT_EQ(e.offset_ns, 5 * kMs);
  EXPECT_EQ(e.rtt_ns, 200 * kUs);
  const std::vector<ClockSample> behind{sample(kT0, 40 * kUs, 40 * kUs, -3 * kMs)};
  EXPECT_EQ(estimate_clock_offset(behind).offset_ns, -3 * kMs);
}

TEST(ClockOffset, AsymmetricDelaysBiasItByHalfTheDifference) {
  // 300 us there, 100 us back: the estimate is off by (300 - 100) / 2 = 100 us,
  // within the ± rtt / 2 it promises.
  const std::vector<ClockSample> s{sample(kT0, 300 * kUs, 100 * kUs, 5 * kMs)};
  const ClockEstimate e = estimate_clock_offset(s);
  EXPECT_EQ(e.offset_ns, 5 * kMs + 100 * kUs);
  EXPECT_EQ(e.rtt_ns, 400 * kUs);
  EXPECT_LE(std::abs(e.offset_ns - 5 * kMs), e.rtt_ns / 2);
}

TEST(ClockOffset, TheSampleWithTheSmallestRoundTripWins) {
  const std::vector<ClockSample> s{sample(kT0, 2 * kMs, 50 * kUs, 1 * kMs),
                                   sample(kT0 + 10 * kMs, 60 * kUs, 60 * kUs, 1 * kMs),
                                   sample(kT0 + 20 * kMs, 50 * kUs, 900 * kUs, 1 * kMs)};
  const ClockEstimate e = estimate_clock_offset(s);
  EXPECT_EQ(e.offset_ns, 1 * kMs);
  EXPECT_EQ(e.rtt_ns, 120 * kUs);
}

TEST(ClockOffset, RefusesNoSamplesAndTimeRunningBackwards) {
  EXPECT_THROW(estimate_clock_offset({}), std::invalid_argument);
  const std::vector<ClockSample> backwards{{kT0, kT0, kT0 - 1}};
  EXPECT_THROW(estimate_clock_offset(backwards), std::invalid_argument);
}

campaign::CampaignSpec spec_with(const std::string& extra) {
  return campaign::parse_campaign_spec(
      "name = \"c\"\n[[node]]\nname = \"web\"\naddress = \"10.0.0.1\"\n"
      "injectd = \"10.0.0.1:7311\"\nsniffd = \"10.0.0.1:7312\"\n"
      "[workload]\ntarget = \"http://10.0.0.1:80\"\nrate = 1000\n"
      "mix = { \"/a\" = 3, \"/b\" = 1 }\n" +
      extra);
}

TEST(CampaignNeedsOf, ToleranceIsATenthOfTheExpectedBinOfTheRarestType) {
  const CampaignNeeds needs = campaign_needs(spec_with(""));
  EXPECT_TRUE(needs.discovery);
  // /b gets a quarter of 1000 rps; k = 5 requests per bin by default.
  EXPECT_EQ(needs.expected_bin_ns, campaign::expected_bin_width_ns(1000, 0.25, 5));
  EXPECT_EQ(needs.clock_tolerance_ns, needs.expected_bin_ns / 10);
  EXPECT_FALSE(campaign_needs(spec_with("[links]\ndiscover = false\n"
                                        "include = [\"tcp 10.0.0.1 -> 10.0.0.2:80\"]\n"))
                   .discovery);
}

const CliVersions kCli{"0.1.0", 1};

DaemonFacts healthy(const std::string& daemon, const std::string& address) {
  DaemonFacts d;
  d.daemon = daemon;
  d.address = address;
  d.reachable = d.authenticated = true;
  d.version = "0.1.0";
  d.protocol_version = 1;
  d.node.emplace();
  d.node->protocol_version = 1;
  d.node->features = {{"cpu_latency", {true, ""}},
                      {"nfqueue", {true, ""}},
                      {"sock_diag", {true, ""}},
                      {"conntrack", {true, ""}},
                      {"destroy", {true, ""}}};
  d.node->hw_timestamps = {{"eth0", {"10.0.0.1"}, false, "eth0: software only"}};
  d.clock = ClockEstimate{20 * kUs, 100 * kUs};
  return d;
}

NodeProbe healthy_node() {
  return NodeProbe{"web",
                   {"10.0.0.1"},
                   healthy("nabla-injectd", "10.0.0.1:7311"),
                   healthy("nabla-sniffd", "10.0.0.1:7312")};
}

CampaignNeeds needs() {
  return CampaignNeeds{true, 10 * kMs, 1 * kMs};
}

std::vector<std::string> texts(const NodeVerdict& v, Severity severity) {
  std::vector<std::string> out;
  for (const Finding& f : v.findings) {
    if (f.severity == severity) out.push_back(f.text);
  }
  return out;
}

TEST(JudgeNode, AHealthyNodeServesWithOnlyANote) {
  const NodeVerdict v = judge_node(healthy_node(), needs(), kCli);
  EXPECT_TRUE(v.can_serve());
  EXPECT_TRUE(texts(v, Severity::kError).empty());
  EXPECT_TRUE(texts(v, Severity::kWarning).empty());
  ASSERT_EQ(texts(v, Severity::kNote).size(), 1u);
  EXPECT_EQ(texts(v, Severity::kNote)[0],
            "node web: hardware timestamps on eth0: no, eth0: software only");
}

TEST(JudgeNode, ADaemonDownNamesTheNodeTheDaemonAndTheCause) {
  NodeProbe p = healthy_node();
  p.injectd->reachable = false;
  p.injectd->error = "Connection refused";
  const NodeVerdict v = judge_node(p, needs(), kCli);
  EXPECT_FALSE(v.can_serve());
  EXPECT_EQ(texts(v, Severity::kError),
            std::vector<std::string>{
                "node web: cannot reach nabla-injectd at 10.0.0.1:7311: Connection refused"});
}

TEST(JudgeNode, AWrongKeyIsAnAuthenticationError) {
  NodeProbe p = healthy_node();
  p.sniffd->authenticated = false;
  p.sniffd->error = "authentication failed";
  const auto errors = texts(judge_node(p, needs(), kCli), Severity::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(
      errors[0],
      "node web: nabla-sniffd at 10.0.0.1:7312 refused authentication: authentication failed");
}

TEST(JudgeNode, VersionMismatchesNameBothVersions) {
  NodeProbe p = healthy_node();
  p.injectd->protocol_version = 2;
  p.injectd->node.reset();  // not read: another protocol
  p.sniffd->version = "0.2.0";
  const auto errors = texts(judge_node(p, needs(), kCli), Severity::kError);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0],
            "node web: nabla-injectd at 10.0.0.1:7311 speaks protocol version 2, this nabla "
            "speaks 1");
  EXPECT_EQ(
      errors[1],
      "node web: nabla-sniffd at 10.0.0.1:7312 is version 0.2.0, this nabla is version 0.1.0");
}

TEST(JudgeNode, InjectionsNeedNfqueue) {
  NodeProbe p = healthy_node();
  p.injectd->node->features["nfqueue"] = {false, "not running as root"};
  const auto errors = texts(judge_node(p, needs(), kCli), Severity::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "node web: injections need NFQUEUE, unusable: not running as root");
}

TEST(JudgeNode, DiscoveryNeedsConntrackOrDestroyNotifications) {
  NodeProbe p = healthy_node();
  p.sniffd->node->features["conntrack"] = {false, "turned off (--no-conntrack)"};
  EXPECT_TRUE(judge_node(p, needs(), kCli).can_serve());  // destroy notifications suffice
  p.sniffd->node->features["destroy"] = {false, "turned off (--no-destroy-events)"};
  const auto errors = texts(judge_node(p, needs(), kCli), Severity::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("conntrack: turned off (--no-conntrack); destroy: turned off"),
            std::string::npos)
      << errors[0];
  CampaignNeeds no_discovery = needs();
  no_discovery.discovery = false;
  EXPECT_TRUE(judge_node(p, no_discovery, kCli).can_serve());
}

TEST(JudgeNode, NoCpuLatencyLimitAndAFarClockAreWarningsOnly) {
  NodeProbe p = healthy_node();
  p.injectd->node->features["cpu_latency"] = {false, "/dev/cpu_dma_latency not writable"};
  // |offset| + rtt / 2 = 950 + 100 us > the 1 ms tolerance.
  p.injectd->clock = ClockEstimate{-950 * kUs, 200 * kUs};
  const NodeVerdict v = judge_node(p, needs(), kCli);
  EXPECT_TRUE(v.can_serve());
  const auto warnings = texts(v, Severity::kWarning);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("no CPU latency limit"), std::string::npos);
  EXPECT_NE(warnings[1].find("clock offset"), std::string::npos);
  p.injectd->clock = ClockEstimate{-850 * kUs, 200 * kUs};  // 950 us: within
  EXPECT_EQ(texts(judge_node(p, needs(), kCli), Severity::kWarning).size(), 1u);
}

TEST(JudgeNode, ANodeWithoutDaemonsServes) {
  const NodeVerdict v = judge_node(NodeProbe{"client", {"10.0.0.9"}, {}, {}}, needs(), kCli);
  EXPECT_TRUE(v.can_serve());
  EXPECT_TRUE(v.findings.empty());
}

}  // namespace
}  // namespace nabla::coordinator
