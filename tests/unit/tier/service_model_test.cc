// The true-gradient rule along a call chain: each call's factor (serial:k ->
// k, parallel:k -> 1, async/none -> 0) multiplied from the client down, one
// hop per call; and nabla-tier's argv for a tier of the model.
#include "nabla/tier/service_model.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

namespace nabla::tier {
namespace {

ServiceModel chain() {
  ServiceModel m;
  m.entry_tier = "fe";
  m.mix = {{"/a", 1}, {"/b", 1}};
  m.tiers.push_back(
      {"fe", "h1", 80, 4, {{"*", "fixed:0ns", {DownstreamCall::parse("mid:serial:2")}}}});
  m.tiers.push_back(
      {"mid",
       "h2",
       81,
       4,
       {{"/a", "fixed:0ns", {DownstreamCall::parse("be:serial:3")}},
        {"/b",
         "fixed:0ns",
         {DownstreamCall::parse("be:parallel:5"), DownstreamCall::parse("be:async:/x"),
          DownstreamCall::parse("be:serial:1:/x")}}}});
  m.tiers.push_back({"be", "h3", 82, 4, {{"*", "fixed:0ns", {}}}});
  return m;
}

TEST(ChainGradients, MultiplyAlongTheChainOneHopPerCall) {
  const ServiceModel m = chain();
  const std::vector<HopGradient> hops = chain_gradients(m);
  ASSERT_EQ(hops.size(), 3u + 5u);  // /a: client, fe->mid, mid->be; /b: client, fe->mid, 3 calls
  auto expect = [&](size_t i, const char* type, const char* src, const char* callee, double g) {
    EXPECT_EQ(hops[i].type, type) << i;
    EXPECT_EQ(hops[i].src_host, src) << i;
    EXPECT_EQ(hops[i].callee->name, callee) << i;
    EXPECT_EQ(hops[i].gradient, g) << i;
  };
  expect(0, "/a", "client", "fe", 1);
  expect(1, "/a", "h1", "mid", 2);
  expect(2, "/a", "h2", "be", 6);  // 2 * 3
  expect(3, "/b", "client", "fe", 1);
  expect(4, "/b", "h1", "mid", 2);
  expect(5, "/b", "h2", "be", 2);  // 2 * parallel 1
  expect(6, "/b", "h2", "be", 0);  // async
  expect(7, "/b", "h2", "be", 2);  // 2 * serial 1
  EXPECT_EQ(m.hosts(), (std::vector<std::string>{"client", "h1", "h2", "h3"}));
}

TEST(ChainGradients, RefusesCyclesUnknownTiersAndAMissingEntry) {
  ServiceModel cyc = chain();
  cyc.tiers[2].urls[0].calls = {DownstreamCall::parse("fe:serial:1")};
  EXPECT_THROW(chain_gradients(cyc), std::invalid_argument);
  ServiceModel unknown = chain();
  unknown.tiers[2].urls[0].calls = {DownstreamCall::parse("nowhere:serial:1")};
  EXPECT_THROW(chain_gradients(unknown), std::invalid_argument);
  ServiceModel no_entry = chain();
  no_entry.entry_tier = "web";
  EXPECT_THROW(chain_gradients(no_entry), std::out_of_range);
}

TEST(TierArgv, ListsOnlyCalledTiersAndPrintsCallsBack) {
  const ServiceModel m = chain();
  const std::map<std::string, std::string> addr = {
      {"h1", "10.0.0.1"}, {"h2", "10.0.0.2"}, {"h3", "10.0.0.3"}};
  const auto argv = tier_argv(m, m.tier("mid"), "nabla-tier", addr, 3);
  const std::vector<std::string> want = {
      "nabla-tier",
      "--listen",
      "10.0.0.2:81",
      "--workers",
      "4",
      "--seed",
      "3",
      "--tier",
      "be=10.0.0.3:82",
      "--url",
      "/a service=fixed:0ns mode=sleep call=be:serial:3",
      "--url",
      "/b service=fixed:0ns mode=sleep call=be:parallel:5 call=be:async:/x call=be:serial:1:/x"};
  EXPECT_EQ(argv, want);
}

TEST(TierArgv, AWaitSliceReachesEveryTier) {
  ServiceModel m = chain();
  m.wait_slice_ns = 500'000;
  const std::map<std::string, std::string> addr = {
      {"h1", "10.0.0.1"}, {"h2", "10.0.0.2"}, {"h3", "10.0.0.3"}};
  for (const char* name : {"mid", "be"}) {
    const auto argv = tier_argv(m, m.tier(name), "nabla-tier", addr, 3);
    const auto at = std::find(argv.begin(), argv.end(), "--wait-slice");
    ASSERT_NE(at, argv.end()) << name;
    ASSERT_NE(at + 1, argv.end());
    EXPECT_EQ(parse_tier_duration_ns(*(at + 1), "--wait-slice"), 500'000);
  }
  m.wait_slice_ns = 0;
  const auto plain = tier_argv(m, m.tier("mid"), "nabla-tier", addr, 3);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--wait-slice"), plain.end());
}

}  // namespace
}  // namespace nabla::tier
