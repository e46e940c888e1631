#include "nabla/tier/tier_config.hh"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nabla::tier {
namespace {

TEST(TierDuration, Units) {
  EXPECT_EQ(parse_tier_duration_ns("250us", "f"), 250'000);
  EXPECT_EQ(parse_tier_duration_ns("1.5ms", "f"), 1'500'000);
  EXPECT_EQ(parse_tier_duration_ns("2s", "f"), 2'000'000'000);
  EXPECT_EQ(parse_tier_duration_ns("7ns", "f"), 7);
  EXPECT_EQ(parse_tier_duration_ns("0ms", "f"), 0);
  for (const char* bad : {"", "ms", "5", "5xs", "-1ms", "1e9h", "abcms", "2h"}) {
    EXPECT_THROW(parse_tier_duration_ns(bad, "f"), std::invalid_argument) << bad;
  }
}

TEST(ServiceTime, ParseAndMean) {
  EXPECT_DOUBLE_EQ(ServiceTime::parse("fixed:2ms").mean_ns(), 2e6);
  EXPECT_DOUBLE_EQ(ServiceTime::parse("exp:200us").mean_ns(), 2e5);
  const ServiceTime b = ServiceTime::parse("bimodal:0.9:100us:1ms");
  EXPECT_DOUBLE_EQ(b.mean_ns(), 0.9 * 1e5 + 0.1 * 1e6);
  const ServiceTime l = ServiceTime::parse("lognormal:1ms:0.5");
  EXPECT_NEAR(l.mean_ns(), 1e6 * std::exp(0.125), 1.0);
  for (const char* bad : {"fixed", "fixed:1ms:2", "exp:", "bimodal:1.5:1ms:2ms", "bimodal:0.5:1ms",
                          "lognormal:1ms:-1", "gamma:1ms", ""}) {
    EXPECT_THROW(ServiceTime::parse(bad), std::invalid_argument) << bad;
  }
}

TEST(ServiceTime, DrawsMatchTheDistribution) {
  std::mt19937_64 rng(42);
  const ServiceTime fixed = ServiceTime::parse("fixed:3ms");
  EXPECT_EQ(fixed.draw_ns(rng), 3'000'000);
  for (const char* spec : {"exp:1ms", "bimodal:0.8:100us:2ms", "lognormal:1ms:0.3"}) {
    const ServiceTime st = ServiceTime::parse(spec);
    double sum = 0;
    constexpr int kN = 20000;
    for (int i = 0; i < kN; ++i) {
      const int64_t d = st.draw_ns(rng);
      ASSERT_GE(d, 0);
      sum += static_cast<double>(d);
    }
    EXPECT_NEAR(sum / kN, st.mean_ns(), 0.05 * st.mean_ns()) << spec;
  }
  const ServiceTime bimodal = ServiceTime::parse("bimodal:0.5:1ms:2ms");
  for (int i = 0; i < 100; ++i) {
    const int64_t d = bimodal.draw_ns(rng);
    EXPECT_TRUE(d == 1'000'000 || d == 2'000'000);
  }
}

TEST(DownstreamCall, PatternsAndGradients) {
  const DownstreamCall s = DownstreamCall::parse("db:serial:3");
  EXPECT_EQ(s.tier, "db");
  EXPECT_EQ(s.pattern, CallPattern::kSerial);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.path, "");
  EXPECT_EQ(s.true_gradient(), 3);
  const DownstreamCall p = DownstreamCall::parse("app:parallel:4:/q:x");
  EXPECT_EQ(p.pattern, CallPattern::kParallel);
  EXPECT_EQ(p.count, 4);
  EXPECT_EQ(p.path, "/q:x");
  EXPECT_EQ(p.true_gradient(), 1);
  const DownstreamCall a = DownstreamCall::parse("audit:async:/log");
  EXPECT_EQ(a.pattern, CallPattern::kAsync);
  EXPECT_EQ(a.path, "/log");
  EXPECT_EQ(a.true_gradient(), 0);
  EXPECT_EQ(DownstreamCall::parse("db:none").true_gradient(), 0);
  for (const char* bad : {"db", "db:serial", "db:serial:0", "db:serial:65", "db:parallel:x",
                          "db:async:3", ":serial:1", "db:fanout:2", "db:none:/x"}) {
    EXPECT_THROW(DownstreamCall::parse(bad), std::invalid_argument) << bad;
  }
}

// The call syntax the demo's service model is written in, read and printed
// back (to_string builds nabla-tier's --url flags from it).
TEST(DownstreamCall, ParsesEveryPatternAndPrintsItBack) {
  DownstreamCall c = DownstreamCall::parse("db:serial:3");
  EXPECT_EQ(c.tier, "db");
  EXPECT_EQ(c.pattern, CallPattern::kSerial);
  EXPECT_EQ(c.count, 3);
  EXPECT_EQ(c.path, "");
  EXPECT_EQ(c.true_gradient(), 3);
  c = DownstreamCall::parse("db:parallel:4");
  EXPECT_EQ(c.pattern, CallPattern::kParallel);
  EXPECT_EQ(c.count, 4);
  EXPECT_EQ(c.true_gradient(), 1);
  c = DownstreamCall::parse("audit:async:/audit");
  EXPECT_EQ(c.pattern, CallPattern::kAsync);
  EXPECT_EQ(c.path, "/audit");
  EXPECT_EQ(c.true_gradient(), 0);
  c = DownstreamCall::parse("db:none");
  EXPECT_EQ(c.true_gradient(), 0);
  c = DownstreamCall::parse("db:serial:2:/x:y");
  EXPECT_EQ(c.path, "/x:y");
  for (const char* s :
       {"db:serial:3", "db:parallel:4", "audit:async:/audit", "db:none", "db:serial:2:/q"}) {
    EXPECT_EQ(to_string(DownstreamCall::parse(s)), s);
  }
  for (const char* bad : {"db", ":serial:1", "db:serial", "db:serial:0", "db:serial:x", "db:loop:2",
                          "db:async:audit"}) {
    EXPECT_THROW(DownstreamCall::parse(bad), std::invalid_argument) << bad;
  }
}

TEST(UrlSpec, ParseFlags) {
  const UrlSpec u =
      UrlSpec::parse("/view service=exp:200us mode=sleep bytes=2048 call=db:serial:3 call=a:async");
  EXPECT_EQ(u.path, "/view");
  EXPECT_EQ(u.service.kind, ServiceKind::kExponential);
  EXPECT_EQ(u.mode, ServiceMode::kSleep);
  EXPECT_EQ(u.response_bytes, 2048);
  ASSERT_EQ(u.calls.size(), 2u);
  EXPECT_EQ(u.calls[1].pattern, CallPattern::kAsync);
  for (const char* bad :
       {"view", "/v mode=fast", "/v bytes=-1", "/v bytes=20000000", "/v x=1", "/v service"}) {
    EXPECT_THROW(UrlSpec::parse(bad), std::invalid_argument) << bad;
  }
}

TEST(TierAddress, Parse) {
  const TierAddress a = TierAddress::parse("10.0.0.1:80", "f");
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 80);
  const TierAddress b = TierAddress::parse("[::1]:8080", "f");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 8080);
  for (const char* bad : {"10.0.0.1", "host:80", "10.0.0.1:70000", "[::1]80", "1.2.3.4:"}) {
    EXPECT_THROW(TierAddress::parse(bad, "f"), std::invalid_argument) << bad;
  }
}

TEST(TierConfig, DemoFromToml) {
  const TierConfig cfg = TierConfig::from_toml(R"(
[server]
listen = "0.0.0.0:8080"
workers = 8
seed = 7
[tiers]
db = "10.9.0.4:8080"
audit = "10.9.0.4:8081"
[[url]]
path = "/view"
service = "exp:200us"
mode = "spin"
response_bytes = 2048
calls = ["db:serial:3"]
[[url]]
path = "/auth"
service = "fixed:100us"
[[url]]
path = "/bid"
calls = ["db:serial:1", "audit:async:/audit"]
[[url]]
path = "/browse"
calls = ["db:parallel:4"]
)");
  EXPECT_EQ(cfg.listen.port, 8080);
  EXPECT_EQ(cfg.workers, 8);
  EXPECT_EQ(cfg.seed, 7u);
  ASSERT_EQ(cfg.urls.size(), 4u);
  EXPECT_EQ(cfg.find("/view")->calls[0].true_gradient(), 3);
  EXPECT_TRUE(cfg.find("/auth")->calls.empty());
  EXPECT_EQ(cfg.find("/bid")->calls[1].true_gradient(), 0);
  EXPECT_EQ(cfg.find("/browse")->calls[0].true_gradient(), 1);
  EXPECT_EQ(cfg.find("/nope"), nullptr);
}

TEST(TierConfig, RejectsBadToml) {
  EXPECT_THROW(TierConfig::from_toml("[server\n"), std::invalid_argument);
  EXPECT_THROW(TierConfig::from_toml("[server]\nworkers = 0\n"), std::invalid_argument);
  EXPECT_THROW(TierConfig::from_toml("[[url]]\npath = \"/a\"\ncalls = [\"db:serial:1\"]\n"),
               std::invalid_argument);  // tier db undefined
  EXPECT_THROW(TierConfig::from_toml("[[url]]\npath = \"/a\"\n[[url]]\npath = \"/a\"\n"),
               std::invalid_argument);  // duplicate path
  EXPECT_THROW(TierConfig::from_toml("[[url]]\nservice = \"fixed:1ms\"\n"), std::invalid_argument);
}

TEST(TierConfig, SplitResponseOptions) {
  const TierConfig plain = TierConfig::from_toml("[server]\nworkers = 2\n");
  EXPECT_EQ(plain.split_response_bytes, 0);
  EXPECT_EQ(plain.split_pause_ns, 200'000);
  const TierConfig split =
      TierConfig::from_toml("[server]\nsplit_response = 64\nsplit_pause = \"2ms\"\n");
  EXPECT_EQ(split.split_response_bytes, 64);
  EXPECT_EQ(split.split_pause_ns, 2'000'000);
  EXPECT_THROW(TierConfig::from_toml("[server]\nsplit_response = -1\n"), std::invalid_argument);
  EXPECT_THROW(TierConfig::from_toml("[server]\nsplit_pause = \"2s\"\n"), std::invalid_argument);
  EXPECT_THROW(TierConfig::from_toml("[server]\nsplit_pause = \"soon\"\n"), std::invalid_argument);
}

TEST(TierConfig, WaitSlice) {
  EXPECT_EQ(TierConfig::from_toml("[server]\nworkers = 2\n").wait_slice_ns, 0);
  EXPECT_EQ(TierConfig::from_toml("[server]\nwait_slice = \"500us\"\n").wait_slice_ns, 500'000);
  EXPECT_THROW(TierConfig::from_toml("[server]\nwait_slice = \"2s\"\n"), std::invalid_argument);
  EXPECT_THROW(TierConfig::from_toml("[server]\nwait_slice = \"now\"\n"), std::invalid_argument);
}

TEST(TierConfig, WildcardFallback) {
  TierConfig cfg;
  cfg.urls.push_back(UrlSpec::parse("/a"));
  cfg.urls.push_back(UrlSpec::parse("*"));
  EXPECT_EQ(cfg.find("/a")->path, "/a");
  EXPECT_EQ(cfg.find("/zzz")->path, "*");
}

}  // namespace
}  // namespace nabla::tier
