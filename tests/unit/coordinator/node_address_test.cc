#include "nabla/coordinator/node_address.hh"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nabla::coordinator {
namespace {

TEST(NodeAddress, Forms) {
  auto a = parse_node_address("10.0.0.2:7311", 1);
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 7311);
  a = parse_node_address("web", 7311);
  EXPECT_EQ(a.host, "web");
  EXPECT_EQ(a.port, 7311);
  a = parse_node_address("[fd00::2]:9", 1);
  EXPECT_EQ(a.host, "fd00::2");
  EXPECT_EQ(a.port, 9);
  EXPECT_EQ(a.to_string(), "[fd00::2]:9");
  EXPECT_EQ(parse_node_address("[::1]", 7312).port, 7312);
}

TEST(NodeAddress, ErrorsNameTheFlag) {
  for (const char* bad :
       {"", ":7311", "h:", "h:0", "h:70000", "h:x", "fd00::2", "[fd00::2", "[::1]x"}) {
    try {
      parse_node_address(bad, 7311, "--node");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--node: '", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace nabla::coordinator
