// Campaign link labels: a port is written only when it is fixed.
#include "nabla/common/link_label.hh"

#include <gtest/gtest.h>

namespace nabla::common {
namespace {

TEST(CampaignLinkLabel, WritesOnlyFixedPorts) {
  EXPECT_EQ(campaign_link_label("tcp", "app", 9002, "web", 0), "tcp app:9002 -> web");
  EXPECT_EQ(campaign_link_label("tcp", "web", 0, "app", 9002), "tcp web -> app:9002");
  EXPECT_EQ(campaign_link_label("udp", "a", 53, "b", 5353), "udp a:53 -> b:5353");
  EXPECT_EQ(campaign_link_label("any", "a", 0, "b", 0), "any a -> b");
}

}  // namespace
}  // namespace nabla::common
