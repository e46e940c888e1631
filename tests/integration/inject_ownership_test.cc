// Two coordinators on one nabla-injectd (injector/ownership.hh): a real
// daemon in the testbed's sender namespace, every call on a new connection
// as the testbed makes them. An injection belongs to the key and session
// token that started it: another session lists it, but stopping, updating
// or renewing it is refused naming the owner unless it gives force; its own
// session, reconnected, keeps it; a link overlapping it in the same
// direction is refused naming it, and no rule is installed for that.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nabla/common/json_rpc.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using nlohmann::json;
using testbed::InjectorTestbed;

// The error code and message of a call, or {0, ""} when it succeeds.
std::pair<int, std::string> refusal(InjectorTestbed& bed, const std::string& method,
                                    const json& params) {
  try {
    bed.call(method, params);
  } catch (const common::RpcError& e) {
    return {e.code(), e.what()};
  }
  return {0, ""};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(InjectOwnership, AnotherSessionListsButStopsOnlyWithForce) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  const json started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                 {"delay", "5ms"},
                                                 {"lease_s", 30},
                                                 {"owner", "run-a"}});
  const std::string id = started.at("id");
  const std::string owner = started.at("owner");
  EXPECT_EQ(owner.rfind("session run-a, key ", 0), 0u) << owner;
  const std::vector<std::string> rules = bed.nabla_rules();
  ASSERT_FALSE(rules.empty());

  // Session b may list it and read its stats...
  const json listed = bed.call("inject.list", json::object()).at("injections");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].at("owner"), owner);
  EXPECT_EQ(bed.call("inject.stats", {{"id", id}}).at("id"), id);
  // ...but not stop, renew or update it, and neither may a caller without a token.
  for (const auto& [method, params] : std::vector<std::pair<std::string, json>>{
           {"inject.stop", {{"id", id}, {"owner", "run-b"}}},
           {"inject.stop", {{"id", id}}},
           {"lease.renew", {{"id", id}, {"owner", "run-b"}}},
           {"inject.update", {{"id", id}, {"owner", "run-b"}, {"delay", "1ms"}}}}) {
    const auto [code, message] = refusal(bed, method, params);
    EXPECT_EQ(code, common::rpc_code::kConflict) << method << " " << params;
    EXPECT_TRUE(contains(message, id + " belongs to " + owner)) << message;
    EXPECT_TRUE(contains(message, "\"force\": true")) << message;
  }
  // An overlapping link in the same direction is refused naming it...
  const auto [code, message] =
      refusal(bed, "inject.start",
              {{"link", "any 10.77.0.1 -> 10.77.0.2"}, {"delay", "1ms"}, {"owner", "run-b"}});
  EXPECT_EQ(code, common::rpc_code::kConflict);
  EXPECT_TRUE(
      contains(message, "overlaps " + id + " (udp 10.77.0.1:* -> 10.77.0.2:9000, " + owner + ")"))
      << message;
  EXPECT_EQ(bed.nabla_rules(), rules);  // nothing installed for it
  // ...another port is not.
  const json beside =
      bed.call("inject.start",
               {{"link", "udp 10.77.0.1 -> 10.77.0.2:9001"}, {"delay", "1ms"}, {"owner", "run-b"}});
  bed.call("inject.stop", {{"id", beside.at("id")}, {"owner", "run-b"}});

  // Its own session, on a new connection, renews and updates it.
  EXPECT_EQ(bed.call("lease.renew", {{"id", id}, {"owner", "run-a"}}).at("id"), id);
  EXPECT_EQ(bed.call("inject.update", {{"id", id}, {"owner", "run-a"}, {"delay", "2ms"}})
                .at("delay")
                .at("amplitude_ns"),
            2'000'000);
  // Session b stops it with force.
  EXPECT_EQ(bed.call("inject.stop", {{"id", id}, {"owner", "run-b"}, {"force", true}}).at("id"),
            id);
  EXPECT_TRUE(bed.call("inject.list", json::object()).at("injections").empty());
  EXPECT_TRUE(contains(bed.daemon_log(), id + " of " + owner + ": stopped by session run-b"))
      << bed.daemon_log();
  bed.stop_daemon();
  EXPECT_TRUE(bed.nabla_rules().empty());
}

}  // namespace
}  // namespace nabla::testing
