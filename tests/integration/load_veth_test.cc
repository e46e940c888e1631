// `nabla load` across a veth pair between two namespaces this test creates
// (and deletes, even on failure): nabla-tier in one, the load in the other.
// The route to the target leaves through the veth, whose driver has no
// hardware timestamps: the run must say "software" and name the veth and the
// reason. Traffic stays inside the two namespaces.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using common::ChildProcess;
using common::NetNamespace;
using common::VethPair;

TEST(LoadVeth, SoftwareTimestampsAreReportedWithTheVethsReason) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NetNamespace client("ldc");
  NetNamespace server("lds");
  VethPair veth(client, "nbl-c0", server, "nbl-s0");
  client.add_address("nbl-c0", "10.231.0.1/24");
  server.add_address("nbl-s0", "10.231.0.2/24");
  client.set_up("nbl-c0");
  server.set_up("nbl-s0");

  ChildProcess tier({NABLA_TIER_PATH, "--listen", "10.231.0.2:8080", "--workers", "4", "--url",
                     "/a service=fixed:200us mode=sleep"},
                    &server, ::testing::TempDir() + "nabla-load-veth-tier.log");
  // Wait until the tier answers a connect from the client namespace.
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {
    up = client.run({"bash", "-c", "exec 3<>/dev/tcp/10.231.0.2/8080"}).exit_code == 0;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(up) << "nabla-tier did not come up in " << server.name();

  const auto r = common::run_command(
      {NABLA_PATH, "load", "--target", "http://10.231.0.2:8080/a", "--rate", "300", "--connections",
       "4", "--max-duration", "2s", "--late-threshold", "1ms", "--json"},
      &client, std::chrono::seconds(20));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;  // ok and n/a both exit 0
  const auto j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["timestamp_source"], "software");
  EXPECT_EQ(j["timestamp_note"],
            "hardware timestamps not used: nbl-c0: driver offers no hardware RX/TX timestamps "
            "(software only)");
  // Requests went through the veth and came back.
  EXPECT_GT(j["rounds"][0]["completed"].get<int>(), 100);
  EXPECT_EQ(j["errors"]["connect"], 0);
  ASSERT_FALSE(j["percentiles"].empty());
  EXPECT_GE(j["percentiles"].back()["value_ns"].get<double>(), 200'000);  // p50 >= service
}

}  // namespace
}  // namespace nabla::testing
