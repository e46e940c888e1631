#include <gtest/gtest.h>

#include "capability_names.hh"
#include "nabla/sniffer/daemon.hh"

namespace nabla::sniffer {
namespace {

using nabla::testing::capability_names;

TEST(SniffdCapabilities, ConntrackNeedsNetAdminOwnersNeedProcAccess) {
  EXPECT_EQ(capability_names(required_capabilities(SnifferOptions{})),
            (std::vector<std::string>{"CAP_NET_ADMIN", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}));
}

TEST(SniffdCapabilities, NoConntrackDropsNetAdmin) {
  SnifferOptions options;
  options.conntrack = false;
  EXPECT_EQ(capability_names(required_capabilities(options)),
            (std::vector<std::string>{"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}));
}

}  // namespace
}  // namespace nabla::sniffer
