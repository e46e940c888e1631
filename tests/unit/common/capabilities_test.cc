#include "nabla/common/capabilities.hh"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
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

TEST(Capabilities, KeptAreNamedInTheOrderGiven) {
  const std::vector<RequiredCapability> keep = {cap_net_admin("a"), cap_net_raw("b"),
                                                cap_sys_nice("c")};
  EXPECT_EQ(describe_kept_capabilities(keep, bit(CAP_NET_ADMIN) | bit(CAP_SYS_NICE)),
            "CAP_NET_ADMIN, CAP_SYS_NICE");
  EXPECT_EQ(describe_kept_capabilities(keep, 0), "none");
  EXPECT_EQ(capability_mask(keep), bit(CAP_NET_ADMIN) | bit(CAP_NET_RAW) | bit(CAP_SYS_NICE));
}

// One field of /proc/self/status as hex ("CapBnd:").
uint64_t status_hex(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size()), nullptr, 16);
  }
  return ~uint64_t{0};
}

// In a child (the drop is for good): afterwards the kernel shows only the
// kept capabilities the child held, in every set, and no_new_privs. As root
// that is exactly CAP_NET_ADMIN | CAP_NET_RAW, bounding set included; as
// another user nothing (which holds nothing to begin with).
TEST(Capabilities, DropKeepsOnlyTheGivenSetForGood) {
  const uint64_t keep = bit(CAP_NET_ADMIN) | bit(CAP_NET_RAW);
  const bool root = ::geteuid() == 0;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    const uint64_t kept = drop_capabilities_except({cap_net_admin("a"), cap_net_raw("b")});
    const uint64_t expected = root ? keep : 0;
    failures += kept != expected;
    failures += status_hex("CapEff:") != expected;
    failures += status_hex("CapPrm:") != expected;
    failures += status_hex("CapInh:") != 0;
    failures += status_hex("CapAmb:") != 0;
    if (root) failures += status_hex("CapBnd:") != keep;
    failures += ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1;
    // A second call finds nothing left to do and keeps the same.
    failures += drop_capabilities_except({cap_net_admin("a"), cap_net_raw("b")}) != expected;
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "checks that failed in the child";
}

}  // namespace
}  // namespace nabla::common
