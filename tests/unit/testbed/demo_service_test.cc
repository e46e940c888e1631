// The demo service description: true gradients by construction (serial:k ->
// k, parallel -> 1, async/none -> 0, multiplied along the chain; the rule is
// tier's, tests/unit/tier/) keyed by campaign link labels, and the nabla-tier
// command lines. Call parsing is tested in tests/unit/tier/tier_config_test.cc.
#include "nabla/testbed/demo_service.hh"

#include <gtest/gtest.h>

#include <algorithm>

namespace nabla::testbed {
namespace {

TEST(TrueGradients, RubisDemoService) {
  const TruthTable t = true_gradients(rubis_demo_service());
  ASSERT_EQ(t.size(), 8u);  // 4 links, both directions
  auto expect = [&](const std::string& label, double view, double auth, double bid, double browse) {
    ASSERT_TRUE(t.count(label)) << label;
    const auto& g = t.at(label);
    ASSERT_EQ(g.size(), 4u) << label;
    EXPECT_EQ(g.at("/view"), view) << label;
    EXPECT_EQ(g.at("/auth"), auth) << label;
    EXPECT_EQ(g.at("/bid"), bid) << label;
    EXPECT_EQ(g.at("/browse"), browse) << label;
  };
  expect("tcp client -> web:8080", 1, 1, 1, 1);
  expect("tcp web:8080 -> client", 1, 1, 1, 1);
  expect("tcp web -> app:8081", 1, 1, 1, 1);
  expect("tcp app:8081 -> web", 1, 1, 1, 1);
  expect("tcp app -> db:8082", 3, 0, 1, 1);  // serial:3, none, serial:1, parallel:4
  expect("tcp db:8082 -> app", 3, 0, 1, 1);
  expect("tcp app -> db:8083", 0, 0, 0, 0);  // async audit
  expect("tcp db:8083 -> app", 0, 0, 0, 0);
}

TEST(TrueGradients, MultiplyAlongTheChainAndAddOverCalls) {
  ServiceModel m;
  m.entry_tier = "fe";
  m.mix = {{"/a", 1}, {"/b", 1}};
  m.tiers.push_back(
      {"fe", "h1", 80, 4, {{"*", "fixed:0ns", {tier::DownstreamCall::parse("mid:serial:2")}}}});
  m.tiers.push_back({"mid",
                     "h2",
                     81,
                     4,
                     {{"/a", "fixed:0ns", {tier::DownstreamCall::parse("be:serial:3")}},
                      {"/b",
                       "fixed:0ns",
                       {tier::DownstreamCall::parse("be:parallel:5"),
                        tier::DownstreamCall::parse("be:serial:1:/x")}}}});
  m.tiers.push_back({"be", "h3", 82, 4, {{"*", "fixed:0ns", {}}}});
  const TruthTable t = true_gradients(m);
  EXPECT_EQ(t.at("tcp client -> h1:80").at("/a"), 1);
  EXPECT_EQ(t.at("tcp h1 -> h2:81").at("/a"), 2);
  EXPECT_EQ(t.at("tcp h2 -> h3:82").at("/a"), 6);              // 2 * 3
  EXPECT_EQ(t.at("tcp h3:82 -> h2").at("/b"), 2 * 1 + 2 * 1);  // parallel + serial:1
  EXPECT_EQ(m.hosts(), (std::vector<std::string>{"client", "h1", "h2", "h3"}));

  ServiceModel cyc = m;
  cyc.tiers[2].urls[0].calls = {tier::DownstreamCall::parse("fe:serial:1")};
  EXPECT_THROW(true_gradients(cyc), std::invalid_argument);
  ServiceModel unknown = m;
  unknown.tiers[2].urls[0].calls = {tier::DownstreamCall::parse("nowhere:serial:1")};
  EXPECT_THROW(true_gradients(unknown), std::invalid_argument);
}

TEST(TierArgv, NamesDownstreamsAndUrlsWithSleepMode) {
  const ServiceModel m = rubis_demo_service();
  const std::map<std::string, std::string> addr = {
      {"client", "10.0.0.1"}, {"web", "10.0.0.2"}, {"app", "10.0.0.3"}, {"db", "10.0.0.4"}};
  const auto argv = tier::tier_argv(m, m.tier("app"), "/bin/nabla-tier", addr, 7);
  auto has = [&](const std::string& s) {
    return std::find(argv.begin(), argv.end(), s) != argv.end();
  };
  EXPECT_EQ(argv[0], "/bin/nabla-tier");
  EXPECT_TRUE(has("10.0.0.3:8081"));
  EXPECT_TRUE(has("db=10.0.0.4:8082"));
  EXPECT_TRUE(has("audit=10.0.0.4:8083"));
  EXPECT_TRUE(has("/view service=exp:200us mode=sleep call=db:serial:3"));
  EXPECT_TRUE(has("/bid service=fixed:100us mode=sleep call=db:serial:1 call=audit:async:/audit"));
  EXPECT_TRUE(has("7"));
  EXPECT_THROW(tier::tier_argv(m, m.tier("app"), "t", {{"app", "1.2.3.4"}}, 1), std::out_of_range);
}

}  // namespace
}  // namespace nabla::testbed
