#include "nabla/common/host_port.hh"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nabla::common {
namespace {

TEST(HostPort, Forms) {
  auto a = parse_host_port("10.0.0.2:7311", 1);
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 7311);
  a = parse_host_port("web", 7311);
  EXPECT_EQ(a.host, "web");
  EXPECT_EQ(a.port, 7311);
  a = parse_host_port("[fd00::2]:9", 1);
  EXPECT_EQ(a.host, "fd00::2");
  EXPECT_EQ(a.port, 9);
  EXPECT_EQ(a.to_string(), "[fd00::2]:9");
  EXPECT_EQ(parse_host_port("[::1]", 7312).port, 7312);
}

TEST(HostPort, ErrorsNameTheFlag) {
  for (const char* bad :
       {"", ":7311", "h:", "h:0", "h:70000", "h:x", "fd00::2", "[fd00::2", "[::1]x"}) {
    try {
      parse_host_port(bad, 7311, "--node");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--node: '", 0), 0u) << e.what();
    }
  }
}

TEST(HostPort, ListenAddressNeedsALiteralAndAllowsPortZero) {
  auto a = parse_listen_address("0.0.0.0:0", 7312);
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(parse_listen_address("[::1]", 7312).port, 7312);
  EXPECT_THROW(parse_listen_address("localhost:7312", 7312), std::invalid_argument);
  EXPECT_THROW(parse_listen_address("10.0.0.300:1", 7312), std::invalid_argument);
  EXPECT_THROW(parse_host_port("h:0", 7312), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::common
