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

TEST(CampaignLinkLabel, BracketsIpv6AddressesSoThePortStaysApart) {
  EXPECT_EQ(campaign_link_label("tcp", "fd00::1", 0, "fd00::2", 8080),
            "tcp [fd00::1] -> [fd00::2]:8080");
  EXPECT_EQ(campaign_link_label("udp", "fd00::2", 53, "10.0.0.1", 0),
            "udp [fd00::2]:53 -> 10.0.0.1");
  EXPECT_EQ(campaign_link_label("tcp", "web", 0, "::1", 0), "tcp web -> [::1]");
}

}  // namespace
}  // namespace nabla::common
