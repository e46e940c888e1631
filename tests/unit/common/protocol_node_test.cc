// What both daemons report of their node (daemon.info's protocol_version,
// features and hw_timestamps) and clock.now: golden files, round trips, and
// errors that name the field.
#include <gtest/gtest.h>

#include <string>

#include "nabla/common/protocol/node.hh"
#include "protocol_examples.hh"
#include "protocol_golden.hh"

namespace nabla::common::protocol {
namespace {

using golden::error_of;
using golden::starts_with;
using nlohmann::json;

TEST(NodeMessages, ClockNowMatchesItsGoldenFile) {
  golden::expect_matches(ClockNowResult{1'700'000'000'123'456'789, 123'456'789},
                         "clock_now_result");
}

TEST(NodeMessages, FactsRoundTripInsideADaemonInfo) {
  const NodeFacts facts = examples::node_facts({{"nfqueue", {false, "not running as root"}}});
  json result{{"name", "nabla-injectd"}};
  facts.write_to(result);
  EXPECT_EQ(result["name"], "nabla-injectd");
  EXPECT_EQ(result["features"]["nfqueue"]["available"], false);
  EXPECT_EQ(NodeFacts::read_from(result), facts);
}

TEST(NodeMessages, FactsNameTheBadField) {
  json good;
  examples::node_facts({}).write_to(good);
  json no_version = good;
  no_version.erase("protocol_version");
  EXPECT_TRUE(starts_with(error_of<ClockNowResult>(json::object()), "realtime_ns: required"));
  auto facts_error = [](const json& j) {
    try {
      NodeFacts::read_from(j);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_TRUE(starts_with(facts_error(no_version), "protocol_version: required"));
  json bad_feature = good;
  bad_feature["features"]["cpu_latency"]["available"] = "yes";
  EXPECT_TRUE(starts_with(facts_error(bad_feature), "features.cpu_latency.available:"))
      << facts_error(bad_feature);
  json bad_address = good;
  bad_address["hw_timestamps"][0]["addresses"] = json::array({1});
  EXPECT_TRUE(starts_with(facts_error(bad_address), "hw_timestamps[0].addresses:"))
      << facts_error(bad_address);
}

}  // namespace
}  // namespace nabla::common::protocol
