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

TEST(HostPort, AdvertisedAddressIsALiteralWithThePortClientsUse) {
  Endpoint a = parse_advertised_address("203.0.113.7:17311", 7311);
  EXPECT_EQ(to_string(a), "203.0.113.7:17311");
  EXPECT_EQ(to_string(parse_advertised_address("[2001:db8::7]", 7312)), "[2001:db8::7]:7312");
  for (const char* bad : {"node-a:7311", "203.0.113.7:0", "[2001:db8::7", ""}) {
    try {
      parse_advertised_address(bad, 7311);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--advertise: '", 0), 0u) << e.what();
    }
  }
  // Listening on port 0 (any), the clients' port must be given.
  EXPECT_THROW(parse_advertised_address("203.0.113.7", 0), std::invalid_argument);
  EXPECT_EQ(parse_advertised_address("203.0.113.7:9", 0).port, 9);
}

}  // namespace
}  // namespace nabla::common
