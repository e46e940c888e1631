#include "nabla/common/link_spec.hh"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace nabla::common {
namespace {

IpAddress ip(const char* text) {
  return IpAddress::parse(text).value();
}

TEST(IpAddress, ParseAndPrint) {
  EXPECT_EQ(ip("10.0.0.1").to_string(), "10.0.0.1");
  EXPECT_TRUE(ip("10.0.0.1").is_v4());
  EXPECT_EQ(ip("10.0.0.1").size(), 4u);
  EXPECT_EQ(ip("10.0.0.1").data()[0], 10);
  EXPECT_EQ(ip("10.0.0.1").data()[3], 1);
  EXPECT_EQ(ip("FD00:0:0::1").to_string(), "fd00::1");
  EXPECT_TRUE(ip("fd00::1").is_v6());
  EXPECT_FALSE(IpAddress::parse("10.0.0.300"));
  EXPECT_FALSE(IpAddress::parse(""));
  EXPECT_FALSE(IpAddress::parse("[fd00::1]"));
  EXPECT_FALSE(IpAddress::parse("localhost"));
  EXPECT_FALSE(IpAddress::parse(std::string(100, '1')));
  EXPECT_NE(ip("10.0.0.1"), ip("10.0.0.2"));
  EXPECT_LT(ip("10.0.0.1"), ip("10.0.0.2"));
  EXPECT_EQ(IpAddress::v4_from_network_order(htonl(0x0a000001)), ip("10.0.0.1"));
}

TEST(IpAddress, Loopback) {
  EXPECT_TRUE(ip("127.0.0.1").is_loopback());
  EXPECT_TRUE(ip("127.3.2.1").is_loopback());
  EXPECT_TRUE(ip("::1").is_loopback());
  EXPECT_TRUE(ip("::ffff:127.0.0.1").is_loopback());
  EXPECT_FALSE(ip("0.0.0.0").is_loopback());
  EXPECT_FALSE(ip("::").is_loopback());
  EXPECT_FALSE(ip("10.0.0.1").is_loopback());
  EXPECT_FALSE(ip("::ffff:10.0.0.1").is_loopback());
}

TEST(Endpoint, ToString) {
  EXPECT_EQ(to_string(Endpoint{ip("10.0.0.1"), 80}), "10.0.0.1:80");
  EXPECT_EQ(to_string(Endpoint{ip("fd00::1"), 9000}), "[fd00::1]:9000");
}

TEST(Endpoint, SockaddrRoundTripsForBothFamilies) {
  for (const char* text : {"10.0.0.1", "fd00::1", "::ffff:10.0.0.1"}) {
    const Endpoint e{ip(text), 7311};
    sockaddr_storage sa{};
    const socklen_t len = to_sockaddr(e, sa);
    EXPECT_EQ(len, e.address.is_v4() ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)) << text;
    EXPECT_EQ(sa.ss_family, e.address.af()) << text;
    EXPECT_EQ(endpoint_of(sa), e) << text;
  }
  sockaddr_storage unix_socket{};
  unix_socket.ss_family = AF_UNIX;
  EXPECT_FALSE(endpoint_of(unix_socket).has_value());
}

TEST(LinkSpec, ParsesTheDocumentedExamples) {
  const LinkSpec a = parse_link_spec("tcp 10.0.0.1:* -> 10.0.0.2:5432");
  EXPECT_EQ(a.protocol, Protocol::kTcp);
  EXPECT_EQ(a.src.address, ip("10.0.0.1"));
  EXPECT_TRUE(a.src.ports.is_any());
  EXPECT_EQ(a.dst.address, ip("10.0.0.2"));
  EXPECT_EQ(a.dst.ports, PortRange::single(5432));

  const LinkSpec b = parse_link_spec("udp [fd00::1]:9000 -> [fd00::2]:*");
  EXPECT_EQ(b.protocol, Protocol::kUdp);
  EXPECT_EQ(b.src.address, ip("fd00::1"));
  EXPECT_EQ(b.src.ports, PortRange::single(9000));
  EXPECT_TRUE(b.dst.ports.is_any());

  const LinkSpec c = parse_link_spec("any 10.0.0.1 -> 10.0.0.2");
  EXPECT_EQ(c.protocol, Protocol::kAny);
  EXPECT_TRUE(c.src.ports.is_any());
  EXPECT_TRUE(c.dst.ports.is_any());

  const LinkSpec d = parse_link_spec("tcp 10.0.0.1:1000-2000 -> 10.0.0.2:80");
  EXPECT_EQ(d.src.ports.low, 1000);
  EXPECT_EQ(d.src.ports.high, 2000);
  EXPECT_EQ(d.dst.ports, PortRange::single(80));
}

TEST(LinkSpec, CanonicalFormRoundTrips) {
  EXPECT_EQ(to_string(parse_link_spec("tcp 10.0.0.1:* -> 10.0.0.2:5432")),
            "tcp 10.0.0.1:* -> 10.0.0.2:5432");
  EXPECT_EQ(to_string(parse_link_spec("udp [fd00::1]:9000 -> [fd00::2]:*")),
            "udp [fd00::1]:9000 -> [fd00::2]:*");
  EXPECT_EQ(to_string(parse_link_spec("any 10.0.0.1 -> 10.0.0.2")), "any 10.0.0.1:* -> 10.0.0.2:*");
  EXPECT_EQ(to_string(parse_link_spec("  TCP\t10.0.0.1:1000-2000->10.0.0.2:80 ")),
            "tcp 10.0.0.1:1000-2000 -> 10.0.0.2:80");
  EXPECT_EQ(to_string(parse_link_spec("udp fd00:0::1 -> [FD00::2]:53")),
            "udp [fd00::1]:* -> [fd00::2]:53");
  EXPECT_EQ(to_string(parse_link_spec("tcp 10.0.0.1:1-65535 -> 10.0.0.2:7-7")),
            "tcp 10.0.0.1:* -> 10.0.0.2:7");
  for (const char* s :
       {"tcp 10.0.0.1:* -> 10.0.0.2:5432", "udp [fd00::1]:9000 -> [fd00::2]:*",
        "any 10.0.0.1:1-2 -> 10.0.0.2:65535", "tcp [::1]:80 -> [::ffff:1.2.3.4]:*"}) {
    const LinkSpec spec = parse_link_spec(s);
    EXPECT_EQ(parse_link_spec(to_string(spec)), spec) << s;
  }
}

// Expects parse_link_spec(input) to fail at `column` with `reason` in what().
void expect_error(const std::string& input, std::size_t column, const std::string& reason) {
  try {
    parse_link_spec(input);
    ADD_FAILURE() << "no error for '" << input << "'";
  } catch (const LinkSpecError& e) {
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

TEST(LinkSpec, ErrorsPointAtTheToken) {
  expect_error("tcp 10.0.0.300:* -> 10.0.0.2:80", 5, "bad address '10.0.0.300' at column 5");
  expect_error("tcpx 10.0.0.1 -> 10.0.0.2", 1, "bad protocol 'tcpx'");
  expect_error("tcp 10.0.0.1:70000 -> 10.0.0.2", 14, "bad port '70000'");
  expect_error("tcp 10.0.0.1:0 -> 10.0.0.2", 14, "bad port '0'");
  expect_error("tcp 10.0.0.1:2000-1000 -> 10.0.0.2", 14, "low end above high end");
  expect_error("tcp 10.0.0.1:1000-x -> 10.0.0.2", 19, "bad port 'x'");
  expect_error("tcp 10.0.0.1 -> fd00::2", 17, "mixed address families");
  expect_error("tcp 10.0.0.1 10.0.0.2", 14, "expected '->'");
  expect_error("tcp 10.0.0.1 ->", 16, "missing destination");
  expect_error("tcp", 4, "missing source");
  expect_error("tcp -> 10.0.0.2", 5, "missing source");
  expect_error("", 1, "empty link spec");
  expect_error("tcp 10.0.0.1 -> 10.0.0.2 extra", 26, "unexpected 'extra'");
  expect_error("udp [fd00::1 -> [fd00::2]", 5, "missing ']'");
  expect_error("udp [10.0.0.1]:5 -> 10.0.0.2", 5, "brackets are for IPv6");
  expect_error("udp [fd00::1]x -> [fd00::2]", 14, "expected ':PORT'");
  expect_error("udp [fd00::zz]:1 -> [fd00::2]", 6, "bad address 'fd00::zz'");
}

TEST(LinkSpec, ErrorShowsInputWithCaret) {
  try {
    parse_link_spec("tcp 10.0.0.300:* -> 10.0.0.2:80");
    FAIL();
  } catch (const LinkSpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad address '10.0.0.300' at column 5\n"
              "  tcp 10.0.0.300:* -> 10.0.0.2:80\n"
              "      ^^^^^^^^^^");
    EXPECT_EQ(e.reason(), "bad address '10.0.0.300' at column 5");
  }
}

TEST(LinkSpec, Matches) {
  const LinkSpec tcp = parse_link_spec("tcp 10.0.0.1:1000-2000 -> 10.0.0.2:80");
  EXPECT_TRUE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 1000, ip("10.0.0.2"), 80));
  EXPECT_TRUE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 2000, ip("10.0.0.2"), 80));
  EXPECT_FALSE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 999, ip("10.0.0.2"), 80));
  EXPECT_FALSE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 2001, ip("10.0.0.2"), 80));
  EXPECT_FALSE(matches(tcp, Protocol::kUdp, ip("10.0.0.1"), 1500, ip("10.0.0.2"), 80));
  EXPECT_FALSE(matches(tcp, Protocol::kTcp, ip("10.0.0.2"), 1500, ip("10.0.0.1"), 80));
  EXPECT_FALSE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 1500, ip("10.0.0.2"), 81));
  EXPECT_FALSE(matches(tcp, Protocol::kTcp, ip("10.0.0.1"), 0, ip("10.0.0.2"), 80));

  const LinkSpec any = parse_link_spec("any 10.0.0.1 -> 10.0.0.2");
  EXPECT_TRUE(matches(any, Protocol::kTcp, ip("10.0.0.1"), 0, ip("10.0.0.2"), 1));
  EXPECT_TRUE(matches(any, Protocol::kUdp, ip("10.0.0.1"), 5, ip("10.0.0.2"), 65535));
  EXPECT_TRUE(matches(any, Protocol::kAny, ip("10.0.0.1"), 5, ip("10.0.0.2"), 6));
  EXPECT_FALSE(matches(tcp, Protocol::kAny, ip("10.0.0.1"), 1500, ip("10.0.0.2"), 80));
  EXPECT_FALSE(matches(any, Protocol::kUdp, ip("::ffff:10.0.0.1"), 5, ip("10.0.0.2"), 6));

  EXPECT_EQ(protocol_from_ip_proto(IPPROTO_TCP), Protocol::kTcp);
  EXPECT_EQ(protocol_from_ip_proto(IPPROTO_UDP), Protocol::kUdp);
  EXPECT_FALSE(protocol_from_ip_proto(IPPROTO_ICMP));
}

TEST(LinkSpec, OverlapNeedsTheSameAddressesIntersectingPortsAndACommonProtocol) {
  const auto overlap = [](std::string_view a, std::string_view b) {
    return links_overlap(parse_link_spec(a), parse_link_spec(b)) &&
           links_overlap(parse_link_spec(b), parse_link_spec(a));
  };
  EXPECT_TRUE(overlap("udp 10.0.0.1 -> 10.0.0.2:9000", "udp 10.0.0.1 -> 10.0.0.2:9000"));
  EXPECT_TRUE(overlap("udp 10.0.0.1 -> 10.0.0.2:9000", "any 10.0.0.1 -> 10.0.0.2"));
  EXPECT_TRUE(overlap("tcp 10.0.0.1 -> 10.0.0.2:1000-2000", "tcp 10.0.0.1 -> 10.0.0.2:2000"));
  EXPECT_TRUE(overlap("tcp 10.0.0.1:5 -> 10.0.0.2", "tcp 10.0.0.1:1-5 -> 10.0.0.2:80"));
  EXPECT_FALSE(overlap("tcp 10.0.0.1 -> 10.0.0.2:1000-2000", "tcp 10.0.0.1 -> 10.0.0.2:2001"));
  EXPECT_FALSE(overlap("tcp 10.0.0.1 -> 10.0.0.2:80", "udp 10.0.0.1 -> 10.0.0.2:80"));
  EXPECT_FALSE(overlap("udp 10.0.0.1 -> 10.0.0.2:9000", "udp 10.0.0.2 -> 10.0.0.1:9000"));
  EXPECT_FALSE(overlap("udp 10.0.0.1 -> 10.0.0.2", "udp 10.0.0.1 -> 10.0.0.3"));
  EXPECT_FALSE(overlap("udp [fd00::1] -> [fd00::2]:9", "udp 10.0.0.1 -> 10.0.0.2:9"));
}

}  // namespace
}  // namespace nabla::common
