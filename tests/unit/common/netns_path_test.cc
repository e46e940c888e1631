// Namespace references as nabla-injectd, nabla inject and campaign files
// take them: NAME under /run/netns, an absolute path, or pid:N.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "nabla/common/netns.hh"

namespace nabla::common {
namespace {

TEST(NetnsPath, NamesPathsAndPids) {
  EXPECT_EQ(netns_path("web"), "/run/netns/web");
  EXPECT_EQ(netns_path("nb-12-0-ctr"), "/run/netns/nb-12-0-ctr");
  EXPECT_EQ(netns_path("/var/run/docker/netns/3f2a"), "/var/run/docker/netns/3f2a");
  EXPECT_EQ(netns_path("pid:812"), "/proc/812/ns/net");
}

TEST(NetnsPath, RefusesWhatNamesNoNamespace) {
  for (const char* bad :
       {"", "a/b", ".", "..", "pid:", "pid:0", "pid:-3", "pid:12x", "pid:12345678901"}) {
    EXPECT_THROW(netns_path(bad), std::invalid_argument) << bad;
  }
}

TEST(NetnsId, TheCallingThreadIsInTheNamespaceOfItsProcess) {
  EXPECT_EQ(current_netns_id(), netns_id("/proc/self/ns/net"));
  EXPECT_NE(current_netns_id().inode, 0u);
  EXPECT_THROW(netns_id("/nonexistent/ns"), std::system_error);
}

}  // namespace
}  // namespace nabla::common
