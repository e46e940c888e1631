#include <gtest/gtest.h>

#include "capability_names.hh"
#include "nabla/injector/daemon.hh"

namespace nabla::injector {
namespace {

using nabla::testing::capability_names;

TEST(InjectdCapabilities, NetAdminAloneByDefault) {
  EXPECT_EQ(capability_names(required_capabilities(DaemonOptions{})),
            std::vector<std::string>{"CAP_NET_ADMIN"});
}

TEST(InjectdCapabilities, RealtimePriorityAddsSysNice) {
  DaemonOptions options;
  options.realtime_priority = 10;
  const auto required = required_capabilities(options);
  EXPECT_EQ(capability_names(required),
            (std::vector<std::string>{"CAP_NET_ADMIN", "CAP_SYS_NICE"}));
  EXPECT_NE(required[1].needed_for.find("--rt-priority"), std::string::npos);
}

// The duplicate fault's raw socket: not needed to start (a daemon without
// it refuses duplicate at inject.start), so not required, but named.
TEST(InjectdCapabilities, NetRawIsOptionalForTheDuplicateFault) {
  const auto optional = optional_capabilities();
  EXPECT_EQ(capability_names(optional), std::vector<std::string>{"CAP_NET_RAW"});
  EXPECT_NE(optional[0].needed_for.find("duplicate"), std::string::npos);
}

}  // namespace
}  // namespace nabla::injector
