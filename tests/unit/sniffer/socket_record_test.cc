#include "nabla/sniffer/socket_record.hh"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <stdexcept>

#include "nabla/sniffer/proc_map.hh"

namespace nabla::sniffer {
namespace {

TEST(PortRange, ParseAndFold) {
  const PortRange r = PortRange::parse("32768\t60999\n");
  EXPECT_EQ(r.low, 32768);
  EXPECT_EQ(r.high, 60999);
  EXPECT_EQ(r.fold(32768), 0);
  EXPECT_EQ(r.fold(60999), 0);
  EXPECT_EQ(r.fold(45000), 0);
  EXPECT_EQ(r.fold(32767), 32767);
  EXPECT_EQ(r.fold(61000), 61000);
  EXPECT_EQ(r.fold(8080), 8080);
  EXPECT_EQ(PortRange::parse("1024 1024").fold(1024), 0);
  for (const char* bad : {"", "1", "5 4", "1 70000", "a b", "1 2 3", "-1 5"}) {
    EXPECT_THROW(PortRange::parse(bad), std::invalid_argument) << bad;
  }
}

TEST(PortRange, SystemRangeIsSane) {
  const PortRange r = PortRange::read_system();
  EXPECT_LE(r.low, r.high);
  EXPECT_GT(r.low, 0);
}

TEST(IpAddr, Format) {
  IpAddr v4;
  v4.family = AF_INET;
  v4.bytes[0] = 10;
  v4.bytes[3] = 7;
  char buf[64];
  EXPECT_EQ(v4.format(buf, sizeof buf), 8u);
  EXPECT_STREQ(buf, "10.0.0.7");
  IpAddr v6;
  v6.family = AF_INET6;
  v6.bytes[15] = 1;
  v6.format(buf, sizeof buf);
  EXPECT_STREQ(buf, "::1");
  IpAddr none;
  EXPECT_EQ(none.format(buf, sizeof buf), 0u);
}

TEST(ParseSocketLink, Forms) {
  EXPECT_EQ(parse_socket_link("socket:[12345]"), 12345u);
  EXPECT_EQ(parse_socket_link("socket:[]"), 0u);
  EXPECT_EQ(parse_socket_link("socket:[12a]"), 0u);
  EXPECT_EQ(parse_socket_link("pipe:[12345]"), 0u);
  EXPECT_EQ(parse_socket_link("/dev/null"), 0u);
  EXPECT_EQ(parse_socket_link("socket:[123"), 0u);
}

}  // namespace
}  // namespace nabla::sniffer
