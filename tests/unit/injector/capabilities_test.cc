#include <gtest/gtest.h>

#include "nabla/injector/daemon.hh"

namespace nabla::injector {
namespace {

std::vector<std::string> names(const std::vector<common::RequiredCapability>& caps) {
  std::vector<std::string> out;
  for (const auto& c : caps) out.push_back(c.name);
  return out;
}

TEST(InjectdCapabilities, NetAdminAloneByDefault) {
  EXPECT_EQ(names(required_capabilities(DaemonOptions{})),
            std::vector<std::string>{"CAP_NET_ADMIN"});
}

TEST(InjectdCapabilities, RealtimePriorityAddsSysNice) {
  DaemonOptions options;
  options.realtime_priority = 10;
  const auto required = required_capabilities(options);
  EXPECT_EQ(names(required), (std::vector<std::string>{"CAP_NET_ADMIN", "CAP_SYS_NICE"}));
  EXPECT_NE(required[1].needed_for.find("--rt-priority"), std::string::npos);
}

}  // namespace
}  // namespace nabla::injector
