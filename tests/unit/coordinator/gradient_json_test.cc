// One output vocabulary: a campaign against the fakes (virtual time, a real
// SQLite file) with a sweep, a step and messages per transaction, then the
// gradients as `nabla run --json` prints them as the campaign ends and as
// `nabla runs show --json` reads them back. Every gradient carries the same
// keys in both, and the same values for everything the run history keeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "fake_environment.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/common/clock.hh"
#include "nabla/coordinator/run_command.hh"
#include "nabla/coordinator/runs_command.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;

constexpr const char* kSpec = R"(
name = "vocabulary"
seed = 11
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
amplitudes = ["1ms", "4ms"]
verify = true
)";

const std::string kWebToApp = "tcp 10.0.0.1:* -> 10.0.0.2:9002";
const std::string kAppToWeb = "tcp 10.0.0.2:9002 -> 10.0.0.1:*";

// What only the campaign knows as it ends; `runs show` prints null for them.
const std::set<std::string> kNotStored{"standard_error",
                                       "snr",
                                       "detected",
                                       "phase_bins",
                                       "reliable",
                                       "truth",
                                       "interaction_bias",
                                       "interaction_se",
                                       "depends_on_other_links"};

std::set<std::string> keys_of(const json& object) {
  std::set<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.insert(k);
  return keys;
}

class GradientJson : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = ::testing::TempDir() + "gradient-json-" + std::to_string(::getpid()) + ".db";
    daemons_.flows["web"] = {
        fake::tcp_flow_end("10.0.0.1", 0, 10, "client", "10.0.0.2", 9002, "outbound")};
    daemons_.flows["app"] = {
        fake::tcp_flow_end("10.0.0.2", 9002, 20, "app", "10.0.0.1", 0, "inbound")};
    // The client's sniffer counts one segment per request to web -> app.
    daemons_.live_flows = [this](const std::string& node, std::int64_t now_ns) {
      std::vector<FlowEnd> flows = daemons_.flows.at(node);
      for (FlowEnd& f : flows) {
        f.last_seen_ns = now_ns;
        if (node == "web") f.segments_out += service_.segments_sent(kWebToApp, now_ns);
      }
      return flows;
    };
  }
  void TearDown() override {
    for (const std::string& f : {db_path_, db_path_ + "-wal", db_path_ + "-shm"}) {
      ::unlink(f.c_str());
    }
  }

  static fake::FakeServiceModel model() {
    fake::FakeServiceModel m;
    m.base_ns = {2'000'000, 3'000'000};
    m.noise_ns = 300'000;
    m.gradients = {{kWebToApp, {1.0, 1.0}}, {kAppToWeb, {2.0, 0.0}}};
    m.messages = {{kWebToApp, {1.0, 1.0}}};
    return m;
  }

  std::string db_path_;
  std::ostringstream log_;
  std::atomic<int> cancel_{0};
  fake::FakeClock clock_;
  fake::FakeDaemons daemons_{clock_};
  fake::FakeService service_{daemons_, model()};
};

TEST_F(GradientJson, RunAndRunsShowPrintOneShape) {
  const CampaignSpec spec = parse_campaign_spec(kSpec);
  CampaignOutcome o;
  {
    db::Store store = db::Store::open(db_path_, common::realtime_ns());
    CampaignOptions options;
    options.cancel = &cancel_;
    options.log = &log_;
    o = run_campaign(spec, store, options, CampaignEnvironment{clock_, service_, daemons_});
  }
  ASSERT_TRUE(o.complete) << o.error;
  const json run = json(coordinator::outcome_to_json(spec, o));
  const json shown = coordinator::runs_show(db_path_, o.run_id);
  ASSERT_EQ(run["gradients"].size(), 4u) << run["gradients"].dump(2);
  ASSERT_EQ(shown["gradients"].size(), run["gradients"].size());

  bool messages = false;
  for (const json& live : run["gradients"]) {
    SCOPED_TRACE(live["link"].get<std::string>() + " " + live["type"].get<std::string>());
    const json* stored = nullptr;
    for (const json& g : shown["gradients"]) {
      if (g["link"] == live["link"] && g["type"] == live["type"]) stored = &g;
    }
    ASSERT_NE(stored, nullptr) << shown["gradients"].dump(2);
    // The same keys, the gradient under "gradient" in both.
    EXPECT_EQ(keys_of(live), keys_of(*stored));
    EXPECT_TRUE(live.contains("gradient"));
    EXPECT_FALSE(live.contains("value"));
    for (const auto& [key, value] : live.items()) {
      if (kNotStored.count(key) > 0) {
        EXPECT_TRUE((*stored)[key].is_null()) << key << ": " << (*stored)[key];
        continue;
      }
      if (key == "step") {
        ASSERT_TRUE(value.is_object()) << live.dump(2);
        EXPECT_EQ(keys_of(value), keys_of((*stored)[key]));
        for (const char* k : {"gradient", "ci_low", "ci_high", "disagrees"}) {
          EXPECT_EQ(value[k], (*stored)[key][k]) << "step." << k;
        }
        EXPECT_TRUE(value["delay_ns"].is_number());
        EXPECT_TRUE((*stored)[key]["delay_ns"].is_null());
        continue;
      }
      EXPECT_EQ(value, (*stored)[key]) << key;
    }
    EXPECT_EQ(live["amplitudes"].size(), 2u);
    EXPECT_TRUE(live["linearity"].is_object());
    messages = messages || !live["messages_per_txn"].is_null();
  }
  EXPECT_TRUE(messages) << run["gradients"].dump(2);
}

}  // namespace
}  // namespace nabla::campaign
