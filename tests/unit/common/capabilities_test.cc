#include "nabla/common/capabilities.hh"

#include <gtest/gtest.h>
#include <linux/capability.h>

#include <fstream>
#include <string>

namespace nabla::common {
namespace {

uint64_t bit(int number) {
  return uint64_t{1} << number;
}

TEST(Capabilities, MissingAreThoseWhoseBitIsClearInOrder) {
  const std::vector<RequiredCapability> required = {cap_net_admin("a"), cap_sys_ptrace("b"),
                                                    cap_dac_read_search("c")};
  EXPECT_TRUE(missing_capabilities(required, ~uint64_t{0}).empty());
  const auto missing = missing_capabilities(required, bit(CAP_SYS_PTRACE));
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].name, "CAP_NET_ADMIN");
  EXPECT_EQ(missing[1].name, "CAP_DAC_READ_SEARCH");
  EXPECT_EQ(missing_capabilities(required, 0).size(), 3u);
}

TEST(Capabilities, NumbersAreTheKernels) {
  EXPECT_EQ(cap_net_admin("").number, 12);
  EXPECT_EQ(cap_sys_nice("").number, 23);
  EXPECT_EQ(cap_sys_ptrace("").number, 19);
  EXPECT_EQ(cap_dac_read_search("").number, 2);
}

TEST(Capabilities, MessageNamesProgramCapabilityAndUse) {
  EXPECT_EQ(missing_capability_message("nabla-injectd", cap_net_admin("NFQUEUE and iptables")),
            "nabla-injectd: missing capability CAP_NET_ADMIN (needed for NFQUEUE and iptables)");
}

// The effective set capget reports is the one the kernel shows in
// /proc/self/status (CapEff, hex).
TEST(Capabilities, EffectiveSetMatchesProcStatus) {
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t from_proc = 0;
  bool found = false;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      from_proc = std::stoull(line.substr(7), nullptr, 16);
      found = true;
    }
  }
  ASSERT_TRUE(found);
  EXPECT_EQ(effective_capabilities(), from_proc);
}

TEST(Capabilities, CheckIsEmptyWhenNothingIsRequired) {
  EXPECT_FALSE(check_capabilities("p", {}).has_value());
}

}  // namespace
}  // namespace nabla::common
