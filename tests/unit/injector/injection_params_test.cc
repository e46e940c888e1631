#include "nabla/injector/injection_params.hh"

#include <gtest/gtest.h>

#include <string>

#include "nabla/injector/iptables_rules.hh"

namespace nabla::injector {
namespace {

using nlohmann::json;

std::string error_of(const json& params) {
  try {
    parse_injection_config(params, nullptr, 1);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(InjectionParams, ParsesAFullRequest) {
  const json params = {
      {"link", "udp 10.0.0.1 -> 10.0.0.2:9000"},
      {"direction", "in"},
      {"delay", {{"kind", "square"}, {"amplitude", "5ms"}, {"period", "1s"}, {"duty", 0.25}}},
      {"faults",
       {{"jitter", {{"amount", "1ms"}, {"distribution", "normal"}, {"correlation", 0.5}}},
        {"loss", {{"model", "gilbert_elliott"}, {"p", "1%"}, {"r", 0.25}}},
        {"partition", {{"wave", {{"kind", "square"}, {"period", "10s"}, {"duty", 0.1}}}}},
        {"reorder", {{"probability", 0.25}, {"gap", 5}}},
        {"corrupt", {{"probability", 0.01}, {"fix_checksum", false}}},
        {"duplicate", {{"probability", "2%"}}},
        {"rate_limit", {{"rate_bps", 1e7}, {"burst_bytes", 3000}}}}},
      {"lease_s", 5},
      {"seed", 42}};
  const InjectionConfig c = parse_injection_config(params, nullptr, 1);
  EXPECT_EQ(c.direction, Direction::kIn);
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.delay.kind, WaveKind::kSquare);
  EXPECT_EQ(c.delay.amplitude, 5e6);
  EXPECT_EQ(c.delay.period_ns, 1'000'000'000);
  EXPECT_EQ(c.delay.duty, 0.25);
  ASSERT_TRUE(c.jitter && c.loss && c.partition && c.reorder && c.corrupt && c.duplicate &&
              c.rate_limit);
  EXPECT_EQ(c.jitter->jitter_ns, 1'000'000);
  EXPECT_EQ(c.jitter->distribution, JitterDistribution::kNormal);
  EXPECT_EQ(c.loss->model, LossModel::kGilbertElliott);
  EXPECT_DOUBLE_EQ(c.loss->p, 0.01);
  EXPECT_EQ(c.partition->wave.duty, 0.1);
  EXPECT_EQ(c.reorder->gap, 5);
  EXPECT_FALSE(c.corrupt->fix_checksum);
  EXPECT_DOUBLE_EQ(c.duplicate->probability, 0.02);
  EXPECT_EQ(c.rate_limit->burst_bytes, 3000);
  EXPECT_TRUE(c.needs_payload());
  EXPECT_EQ(parse_lease_s(params), 5.0);
}

TEST(InjectionParams, DefaultsAndShorthand) {
  const InjectionConfig c = parse_injection_config(
      {{"link", "tcp 10.0.0.1 -> 10.0.0.2:80"}, {"delay", "20ms"}}, nullptr, 99);
  EXPECT_EQ(c.direction, Direction::kOut);
  EXPECT_EQ(c.seed, 99u);
  EXPECT_EQ(c.delay.kind, WaveKind::kConstant);
  EXPECT_EQ(c.delay.amplitude, 2e7);
  EXPECT_FALSE(c.needs_payload());
  EXPECT_EQ(parse_lease_s(json::object()), kDefaultLeaseS);
}

TEST(InjectionParams, SineAndTraceWaves) {
  const InjectionConfig c = parse_injection_config(
      {{"link", "udp 10.0.0.1 -> 10.0.0.2:9000"},
       {"delay", {{"kind", "sine"}, {"amplitude", "10ms"}, {"period", "2s"}}},
       {"faults",
        {{"loss",
          {{"p", 0.5},
           {"wave",
            {{"kind", "trace"},
             {"points", {{0, 0.0}, {"1s", 1.0}, {2'000'000'000, 0.25}}},
             {"loop", false},
             {"interpolation", "step"}}}}}}}},
      nullptr, 1);
  EXPECT_EQ(c.delay.kind, WaveKind::kSine);
  EXPECT_DOUBLE_EQ(c.delay.value(0), 1e7);
  ASSERT_TRUE(c.loss);
  EXPECT_EQ(c.loss->wave.kind, WaveKind::kTrace);
  EXPECT_DOUBLE_EQ(c.loss->wave.level(1'500'000'000), 1.0);
  EXPECT_TRUE(c.loss->wave.at(2'000'000'000).finished);
  // Described back as requested.
  const auto described = wave_of(c.loss->wave);
  EXPECT_EQ(described.trace.size(), 3u);
  EXPECT_FALSE(described.trace_loop);

  const json link = "udp 10.0.0.1 -> 10.0.0.2:9000";
  auto trace_error = [&](const json& wave) {
    return error_of({{"link", link}, {"faults", {{"loss", {{"p", 0.1}, {"wave", wave}}}}}});
  };
  EXPECT_EQ(trace_error({{"kind", "trace"}}).rfind("faults.loss.wave.points:", 0), 0u);
  EXPECT_EQ(
      trace_error({{"kind", "trace"}, {"points", {{0, 0.5}}}}).rfind("faults.loss.wave.points:", 0),
      0u);
  EXPECT_EQ(trace_error({{"kind", "trace"}, {"points", {{5, 0.5}, {10, 1}}}})
                .rfind("faults.loss.wave.points[0][0]:", 0),
            0u);
  EXPECT_EQ(trace_error({{"kind", "trace"}, {"points", {{0, 0.5}, {0, 1}}}})
                .rfind("faults.loss.wave.points[1][0]:", 0),
            0u);
  EXPECT_EQ(trace_error({{"kind", "trace"}, {"points", {{0, 0.5}, {10, 1.5}}}})
                .rfind("faults.loss.wave.points[1][1]:", 0),
            0u);
  EXPECT_EQ(
      trace_error({{"kind", "trace"}, {"points", {{0, 0.5}, {10, 1}}}, {"interpolation", "cubic"}})
          .rfind("faults.loss.wave.interpolation:", 0),
      0u);
  json many = json::array();
  for (int i = 0; i <= 2000; ++i) many.push_back({i, 0.5});
  EXPECT_EQ(trace_error({{"kind", "trace"}, {"points", many}}).rfind("faults.loss.wave.points:", 0),
            0u);
  EXPECT_EQ(error_of({{"link", link}, {"delay", {{"kind", "sine"}, {"amplitude", "1ms"}}}})
                .rfind("delay.period:", 0),
            0u);
}

TEST(InjectionParams, ErrorsNameTheField) {
  const json link = "udp 10.0.0.1 -> 10.0.0.2:9000";
  EXPECT_EQ(error_of(json::object()).rfind("link:", 0), 0u);
  EXPECT_EQ(error_of({{"link", "udp 10.0.0.1 -> nowhere"}}).rfind("link:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"direction", "up"}}).rfind("direction:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"delay", "20"}}).rfind("delay:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"delay", "2h"}}).rfind("delay:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"delay", {{"kind", "square"}, {"amplitude", "1ms"}}}})
                .rfind("delay.period:", 0),
            0u);
  EXPECT_EQ(error_of({{"link", link}, {"delay", {{"kind", "triangle"}}}}).rfind("delay.kind:", 0),
            0u);
  EXPECT_EQ(
      error_of({{"link", link}, {"faults", {{"loss", {{"p", 1.5}}}}}}).rfind("faults.loss.p:", 0),
      0u);
  EXPECT_EQ(error_of({{"link", link}, {"faults", {{"loss", {{"model", "ge"}, {"p", 0.1}}}}}})
                .rfind("faults.loss.model:", 0),
            0u);
  EXPECT_EQ(error_of({{"link", link},
                      {"faults", {{"jitter", {{"amount", "1ms"}, {"distribution", "x"}}}}}})
                .rfind("faults.jitter.distribution:", 0),
            0u);
  EXPECT_EQ(error_of({{"link", link}, {"faults", {{"teleport", json::object()}}}})
                .rfind("faults.teleport:", 0),
            0u);
  EXPECT_EQ(error_of({{"link", link}, {"lease_s", 0}}).rfind("lease_s:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"seed", -3}}).rfind("seed:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"bogus", 1}}).rfind("bogus:", 0), 0u);
  EXPECT_EQ(error_of({{"link", link}, {"faults", {{"rate_limit", {{"rate_bps", 1}}}}}})
                .rfind("faults.rate_limit.rate_bps:", 0),
            0u);
}

TEST(InjectionParams, UpdateKeepsTheLinkAndRefusesToChangeIt) {
  const InjectionConfig first =
      parse_injection_config({{"link", "udp 10.0.0.1 -> 10.0.0.2:9000"}, {"seed", 5}}, nullptr, 1);
  const InjectionConfig updated =
      parse_injection_config({{"id", "inj-1"}, {"delay", "3ms"}}, &first, 7);
  EXPECT_EQ(updated.link, first.link);
  EXPECT_EQ(updated.seed, 5u);
  EXPECT_EQ(updated.delay.amplitude, 3e6);
  EXPECT_THROW(parse_injection_config({{"link", "udp 10.0.0.9 -> 10.0.0.2:9000"}}, &first, 1),
               std::invalid_argument);
}

TEST(IptablesMatchArgs, OneRulePerProtocolWithPortsCommentAndBypass) {
  RuleSpec spec;
  spec.link = common::parse_link_spec("udp 10.0.0.1 -> 10.0.0.2:9000-9010");
  spec.queue_num = 3;
  spec.injection_id = "inj-4";
  const auto rules = iptables_match_args(spec);
  ASSERT_EQ(rules.size(), 1u);
  const std::vector<std::string> expected = {"-s",
                                             "10.0.0.1/32",
                                             "-d",
                                             "10.0.0.2/32",
                                             "-p",
                                             "udp",
                                             "--dport",
                                             "9000:9010",
                                             "-m",
                                             "mark",
                                             "!",
                                             "--mark",
                                             std::to_string(kNablaPacketMark),
                                             "-m",
                                             "comment",
                                             "--comment",
                                             "nabla:inj-4",
                                             "-j",
                                             "NFQUEUE",
                                             "--queue-num",
                                             "3",
                                             "--queue-bypass"};
  EXPECT_EQ(rules[0], expected);
  spec.link = common::parse_link_spec("any [fd00::1]:* -> [fd00::2]:80");
  const auto both = iptables_match_args(spec);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0][1], "fd00::1/128");
  EXPECT_EQ(both[0][5], "tcp");
  EXPECT_EQ(both[1][5], "udp");
  spec.link = common::parse_link_spec("any 10.0.0.1 -> 10.0.0.2");
  const auto plain = iptables_match_args(spec);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0][4], "-m");  // no -p when neither protocol nor ports are given
  EXPECT_EQ(chain_for(Direction::kOut), "NABLA-OUT");
  EXPECT_EQ(chain_for(Direction::kIn), "NABLA-IN");
  EXPECT_EQ(chain_for(Direction::kFwd), "NABLA-FWD");
}

TEST(InjectionPipeline, ConstantDelayPartitionAndLossDecide) {
  InjectionConfig c;
  c.link = common::parse_link_spec("udp 10.0.0.1 -> 10.0.0.2:9000");
  c.delay = Waveform::constant(2e7);
  c.partition = Partition{Waveform::square(1.0, 1'000'000'000, 0.1)};  // first 100 ms of each s
  c.seed = 3;
  c.anchor_at(5'000'000'000);
  InjectionPipeline pipeline(c);
  const std::vector<uint8_t> packet = {0x45, 0, 0,  28, 0, 1, 0x40, 0,    64,   17,   0, 0, 10, 0,
                                       0,    1, 10, 0,  0, 2, 0x03, 0xe8, 0x23, 0x28, 0, 8, 0,  0};
  EXPECT_TRUE(pipeline.plan(5'050'000'000, packet, 28).drop);
  const PacketPlan plan = pipeline.plan(5'200'000'000, packet, 28);
  EXPECT_FALSE(plan.drop);
  EXPECT_EQ(plan.release_ns, 5'220'000'000);
  EXPECT_EQ(plan.wave.half, WaveHalf::kHigh);
  // Same flow one µs later with the same delay: after the previous packet.
  EXPECT_EQ(pipeline.plan(5'200'001'000, packet, 28).release_ns, 5'220'001'000);
}

}  // namespace
}  // namespace nabla::injector
