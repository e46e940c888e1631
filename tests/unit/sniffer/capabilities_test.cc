#include <gtest/gtest.h>

#include "nabla/sniffer/daemon.hh"

namespace nabla::sniffer {
namespace {

std::vector<std::string> names(const std::vector<common::RequiredCapability>& caps) {
  std::vector<std::string> out;
  for (const auto& c : caps) out.push_back(c.name);
  return out;
}

TEST(SniffdCapabilities, ConntrackNeedsNetAdminOwnersNeedProcAccess) {
  EXPECT_EQ(names(required_capabilities(SnifferOptions{})),
            (std::vector<std::string>{"CAP_NET_ADMIN", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}));
}

TEST(SniffdCapabilities, NoConntrackDropsNetAdmin) {
  SnifferOptions options;
  options.conntrack = false;
  EXPECT_EQ(names(required_capabilities(options)),
            (std::vector<std::string>{"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}));
}

}  // namespace
}  // namespace nabla::sniffer
