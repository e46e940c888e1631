// nabla-injectd's control messages: every one round-trips, matches its
// golden file key by key, and names the field of a missing or mistyped value.
#include <gtest/gtest.h>

#include <string>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/no_params.hh"
#include "protocol_examples.hh"
#include "protocol_golden.hh"

namespace nabla::common::protocol {
namespace {

using nlohmann::json;

using golden::error_of;
using golden::starts_with;

// `j` with the member at `pointer` removed, or replaced by `value`.
json without(json j, const std::string& pointer) {
  const json::json_pointer p(pointer);
  j.at(p.parent_pointer()).erase(p.back());
  return j;
}

json with(json j, const std::string& pointer, const json& value) {
  j[json::json_pointer(pointer)] = value;
  return j;
}

TEST(InjectdMessages, EveryMessageMatchesItsGoldenFile) {
  golden::expect_matches(examples::inject_start_params(), "inject_start_params");
  golden::expect_matches(examples::inject_update_params(), "inject_update_params");
  golden::expect_matches(InjectStopParams{"inj-1", "run-5f3a9c", true}, "inject_stop_params");
  golden::expect_matches(InjectStatsParams{"inj-1", true}, "inject_stats_params");
  golden::expect_matches(LeaseRenewParams{"inj-1", 10.0, "run-5f3a9c"}, "lease_renew_params");
  golden::expect_matches(examples::injection_description(), "injection_description");
  golden::expect_matches(examples::inject_stop_result(), "inject_stop_result");
  golden::expect_matches(examples::inject_stats_result(), "inject_stats_result");
  golden::expect_matches(InjectListResult{{examples::injection_description()}},
                         "inject_list_result");
  golden::expect_matches(LeaseRenewResult{"inj-1", 10.0}, "lease_renew_result");
  golden::expect_matches(examples::injectd_info(), "injectd_daemon_info_result");
}

TEST(InjectdMessages, OptionalPartsRoundTripWhenAbsent) {
  InjectStartParams bare{"tcp 10.0.0.1 -> 10.0.0.2:80", Direction::kOut, {}};
  EXPECT_EQ(InjectStartParams::from_json(bare.to_json()), bare);
  EXPECT_FALSE(bare.to_json().contains("faults"));
  bare.settings.faults.loss = LossFault{};
  bare.settings.delay = Wave{};
  EXPECT_EQ(InjectStartParams::from_json(bare.to_json()), bare);
  const LeaseRenewParams keep{"inj-2", std::nullopt};
  EXPECT_EQ(LeaseRenewParams::from_json(keep.to_json()), keep);
  const InjectStopResult lost{examples::injection_description(), std::nullopt};
  EXPECT_EQ(InjectStopResult::from_json(lost.to_json()), lost);
  const InjectStatsResult only{examples::injection_description(), {}, {}, {}};
  EXPECT_EQ(InjectStatsResult::from_json(only.to_json()), only);
  InjectorInfo info = examples::injectd_info();
  // An older daemon's answer without "control" reads as all zero.
  json older = info.to_json();
  older.erase("control");
  EXPECT_EQ(InjectorInfo::from_json(older).control, ControlCounters{});
  info.cpu_latency.limit_us.reset();
  EXPECT_TRUE(info.to_json()["cpu_latency"]["limit_us"].is_null());
  EXPECT_EQ(InjectorInfo::from_json(info.to_json()), info);
}

TEST(InjectdMessages, ShorthandsPeopleTypeReadAsNanosecondsAndFractions) {
  const InjectStartParams p = InjectStartParams::from_json(
      {{"link", "udp 10.0.0.1 -> 10.0.0.2:9000"},
       {"delay", "20ms"},
       {"faults", {{"loss", {{"p", "5%"}}}, {"jitter", {{"amount", "250us"}}}}}});
  EXPECT_EQ(p.settings.delay, Wave::constant(20'000'000));
  ASSERT_TRUE(p.settings.faults.loss && p.settings.faults.jitter);
  EXPECT_DOUBLE_EQ(p.settings.faults.loss->p, 0.05);
  EXPECT_EQ(p.settings.faults.jitter->amount_ns, 250'000);
  EXPECT_EQ(p.settings.faults.jitter->distribution, JitterDistribution::kUniform);
  EXPECT_EQ(p.to_json()["delay"], json({{"kind", "constant"}, {"amplitude", 20'000'000}}));
}

struct FieldCase {
  std::string pointer;  // where to break the golden JSON
  std::string field;    // what the error must start with
};

// Removing a required member, or giving it a value of the wrong type, is one
// error that starts with the member's path.
template <class Message>
void expect_named_errors(const std::string& name, const std::vector<FieldCase>& cases) {
  const json good = golden::read(name);
  for (const FieldCase& c : cases) {
    const std::string missing = error_of<Message>(without(good, c.pointer));
    EXPECT_TRUE(starts_with(missing, c.field + ":"))
        << name << " without " << c.pointer << ": " << missing;
    const std::string mistyped = error_of<Message>(with(good, c.pointer, json::array({1})));
    EXPECT_TRUE(starts_with(mistyped, c.field + ":"))
        << name << " with a bad " << c.pointer << ": " << mistyped;
  }
}

TEST(InjectdMessages, MissingOrMistypedFieldsNameTheField) {
  expect_named_errors<InjectStartParams>(
      "inject_start_params", {{"/link", "link"},
                              {"/faults/loss/p", "faults.loss.p"},
                              {"/faults/loss/r", "faults.loss.r"},
                              {"/faults/jitter/amount", "faults.jitter.amount"},
                              {"/faults/reorder/probability", "faults.reorder.probability"},
                              {"/faults/rate_limit/rate_bps", "faults.rate_limit.rate_bps"},
                              {"/faults/partition/wave/period", "faults.partition.wave.period"},
                              {"/delay/period", "delay.period"},
                              {"/delay/kind", "delay.kind"}});
  expect_named_errors<InjectUpdateParams>("inject_update_params", {{"/id", "id"}});
  expect_named_errors<InjectStopParams>("inject_stop_params", {{"/id", "id"}});
  expect_named_errors<LeaseRenewParams>("lease_renew_params", {{"/id", "id"}});
  expect_named_errors<InjectionDescription>(
      "injection_description",
      {{"/id", "id"}, {"/seed", "seed"}, {"/delay/kind", "delay.kind"}, {"/lease_s", "lease_s"}});
  expect_named_errors<InjectStopResult>(
      "inject_stop_result",
      {{"/stats/halves/high/mean", "stats.halves.high.mean"}, {"/stats/packets", "stats.packets"}});
  expect_named_errors<InjectStatsResult>("inject_stats_result",
                                         {{"/verdicts", "verdicts"},
                                          {"/kernel/queue_total", "kernel.queue_total"},
                                          {"/cycles/0/low/count", "cycles[0].low.count"}});
  expect_named_errors<InjectListResult>("inject_list_result",
                                        {{"/injections/0/link", "injections[0].link"}});
  expect_named_errors<LeaseRenewResult>("lease_renew_result",
                                        {{"/lease_remaining_s", "lease_remaining_s"}});
  expect_named_errors<InjectorInfo>(
      "injectd_daemon_info_result",
      {{"/timer/wakeup_lateness_us/p99", "timer.wakeup_lateness_us.p99"},
       {"/cpu_latency/held", "cpu_latency.held"}});
}

TEST(InjectdMessages, OwnerIsASessionTokenAndForceABoolean) {
  const json stop = golden::read("inject_stop_params");
  EXPECT_EQ(InjectStopParams::from_json(json{{"id", "inj-1"}}).owner, std::nullopt);
  EXPECT_FALSE(InjectStopParams::from_json(json{{"id", "inj-1"}}).force);
  for (const json& bad : {json(""), json(std::string(65, 'a')), json("a b"), json(7)}) {
    EXPECT_TRUE(starts_with(error_of<InjectStopParams>(with(stop, "/owner", bad)), "owner:"))
        << bad;
    EXPECT_TRUE(starts_with(
        error_of<InjectStartParams>(with(golden::read("inject_start_params"), "/owner", bad)),
        "owner:"));
  }
  EXPECT_TRUE(starts_with(error_of<InjectStopParams>(with(stop, "/force", "yes")), "force:"));
  EXPECT_TRUE(starts_with(
      error_of<LeaseRenewParams>(with(golden::read("lease_renew_params"), "/force", 1)), "force:"));
  // A description from a daemon without owners still reads.
  const json old_daemon = without(golden::read("injection_description"), "/owner");
  EXPECT_EQ(InjectionDescription::from_json(old_daemon).owner, "");
}

TEST(InjectdMessages, ReleaseIsSpinUnlessSleepIsAsked) {
  InjectStartParams bare{"tcp 10.0.0.1 -> 10.0.0.2:80", Direction::kOut, {}};
  EXPECT_EQ(bare.release, Release::kSpin);
  // The default is not sent, so a start without it reads the same anywhere.
  EXPECT_FALSE(bare.to_json().contains("release"));
  const json sleep = with(bare.to_json(), "/release", "sleep");
  EXPECT_EQ(InjectStartParams::from_json(sleep).release, Release::kSleep);
  EXPECT_EQ(InjectStartParams::from_json(with(bare.to_json(), "/release", "spin")).release,
            Release::kSpin);
  for (const json& bad : {json("fast"), json(1), json(true)}) {
    EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(bare.to_json(), "/release", bad)),
                            "release:"))
        << bad;
  }
  // A description from a daemon without release modes reads as spin.
  const json old_daemon = without(golden::read("injection_description"), "/release");
  EXPECT_EQ(InjectionDescription::from_json(old_daemon).release, Release::kSpin);
}

TEST(InjectdMessages, ParamsRefuseUnknownFieldsAndOutOfRangeValues) {
  const json start = golden::read("inject_start_params");
  EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(start, "/bogus", 1)), "bogus:"));
  EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(start, "/faults/loss/x", 1)),
                          "faults.loss.x: unknown field"));
  EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(start, "/id", "inj-1")),
                          "id: not accepted by inject.start"));
  EXPECT_TRUE(
      starts_with(error_of<InjectStartParams>(with(start, "/lease_s", 0)), "lease_s: must be"));
  EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(start, "/delay/amplitude", "2m")),
                          "delay.amplitude: must be within 0 .. 1m"));
  EXPECT_TRUE(starts_with(
      error_of<InjectUpdateParams>(with(golden::read("inject_update_params"), "/direction", "in")),
      "link: cannot be changed by inject.update"));
  EXPECT_TRUE(starts_with(error_of<InjectStopParams>(json::array()), "params: must be an object"));
  EXPECT_TRUE(starts_with(error_of<InjectStatsParams>({{"id", "inj-1"}, {"cycles", 1}}),
                          "cycles: must be true or false"));
  EXPECT_NO_THROW(require_no_params(nullptr, "inject.list"));
  EXPECT_NO_THROW(require_no_params(json::object(), "inject.list"));
  EXPECT_THROW(require_no_params({{"x", 1}}, "inject.list"), std::invalid_argument);
}

TEST(InjectdMessages, StartCarriesAnOptionalNamespaceCheckedBeforeTheDaemon) {
  const json start = golden::read("inject_start_params");
  EXPECT_FALSE(InjectStartParams::from_json(start).netns.has_value());
  for (const std::string ns : {"web", "/proc/1/ns/net", "pid:812"}) {
    const InjectStartParams p = InjectStartParams::from_json(with(start, "/netns", ns));
    ASSERT_TRUE(p.netns.has_value());
    EXPECT_EQ(*p.netns, ns);
    EXPECT_EQ(InjectStartParams::from_json(p.to_json()), p);
  }
  for (const json& bad : {json("a/b"), json("pid:x"), json(""), json(3)}) {
    EXPECT_TRUE(starts_with(error_of<InjectStartParams>(with(start, "/netns", bad)), "netns:"))
        << bad;
  }
}

}  // namespace
}  // namespace nabla::common::protocol
