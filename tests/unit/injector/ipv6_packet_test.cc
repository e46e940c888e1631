// IPv6 packets as NFQUEUE hands them over (starting at the IPv6 header),
// built byte by byte: the flow key reads 128-bit addresses, corruption
// flips one payload bit and completes the TCP/UDP checksum over the IPv6
// pseudo-header, and a packet whose next header is an extension header is
// left exactly as it came.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "nabla/injector/faults.hh"
#include "nabla/injector/flow_order.hh"

namespace nabla::injector {
namespace {

constexpr uint8_t kNextHopByHop = 0;
constexpr uint8_t kNextTcp = 6;
constexpr uint8_t kNextUdp = 17;
constexpr uint8_t kNextDestinationOptions = 60;
constexpr std::string_view kPayload = "hello nabla!";
constexpr size_t kIpv6Header = 40;

void put16(std::vector<uint8_t>& p, uint16_t v) {
  p.push_back(static_cast<uint8_t>(v >> 8));
  p.push_back(static_cast<uint8_t>(v & 0xff));
}

// fd00::<src_last> -> fd00::2, hop limit 64, payload length from `l4`.
std::vector<uint8_t> ipv6_packet(uint8_t next_header, const std::vector<uint8_t>& l4,
                                 uint8_t src_last = 1) {
  std::vector<uint8_t> p = {0x60, 0, 0, 0};
  put16(p, static_cast<uint16_t>(l4.size()));
  p.push_back(next_header);
  p.push_back(64);
  for (uint8_t last : {src_last, uint8_t{2}}) {
    const std::array<uint8_t, 16> address = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
    p.insert(p.end(), address.begin(), address.end());
  }
  p.insert(p.end(), l4.begin(), l4.end());
  return p;
}

std::vector<uint8_t> udp_segment(uint16_t sport, uint16_t dport) {
  std::vector<uint8_t> s;
  put16(s, sport);
  put16(s, dport);
  put16(s, static_cast<uint16_t>(8 + kPayload.size()));
  put16(s, 0);  // checksum, filled in by the code under test
  s.insert(s.end(), kPayload.begin(), kPayload.end());
  return s;
}

std::vector<uint8_t> tcp_segment(uint16_t sport, uint16_t dport) {
  std::vector<uint8_t> s;
  put16(s, sport);
  put16(s, dport);
  for (uint8_t b : {0, 0, 0, 1, 0, 0, 0, 0}) s.push_back(b);  // seq 1, ack 0
  s.push_back(5 << 4);                                        // 20-byte header
  s.push_back(0x18);                                          // PSH ACK
  put16(s, 65535);                                            // window
  put16(s, 0);                                                // checksum
  put16(s, 0);                                                // urgent pointer
  s.insert(s.end(), kPayload.begin(), kPayload.end());
  return s;
}

uint16_t checksum_at(const std::vector<uint8_t>& p, size_t offset) {
  return static_cast<uint16_t>((p[offset] << 8) | p[offset + 1]);
}

// Bits that differ outside the checksum field, and the first byte that does.
int bits_changed(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                 size_t checksum_offset, size_t& first_changed) {
  int bits = 0;
  first_changed = a.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (i == checksum_offset || i == checksum_offset + 1) continue;
    if (a[i] != b[i] && first_changed == a.size()) first_changed = i;
    bits += std::popcount(static_cast<unsigned>(a[i] ^ b[i]));
  }
  return bits;
}

TEST(Ipv6FlowKey, ReadsBothAddressesAndThePorts) {
  const auto key = flow_key_of(ipv6_packet(kNextUdp, udp_segment(1000, 9000)));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->ip_version, 6);
  EXPECT_EQ(key->protocol, kNextUdp);
  EXPECT_EQ(key->src[0], 0xfd);
  EXPECT_EQ(key->src[15], 1);
  EXPECT_EQ(key->dst[15], 2);
  EXPECT_EQ(key->src_port, 1000);
  EXPECT_EQ(key->dst_port, 9000);
  // Flows differ by the low bytes of a 128-bit address, not only the first four.
  EXPECT_NE(*key, *flow_key_of(ipv6_packet(kNextUdp, udp_segment(1000, 9000), 3)));
  EXPECT_EQ(*key, *flow_key_of(ipv6_packet(kNextUdp, udp_segment(1000, 9000))));
  const auto tcp = flow_key_of(ipv6_packet(kNextTcp, tcp_segment(40000, 8080)));
  ASSERT_TRUE(tcp.has_value());
  EXPECT_EQ(tcp->src_port, 40000);
  EXPECT_EQ(tcp->dst_port, 8080);
  // Shorter than an IPv6 header: no flow.
  auto truncated = ipv6_packet(kNextUdp, udp_segment(1, 2));
  truncated.resize(39);
  EXPECT_FALSE(flow_key_of(truncated).has_value());
}

// An extension header comes before the transport header: its bytes are not
// ports, so the packet is ordered with the port-less flow of its pair.
TEST(Ipv6FlowKey, AnExtensionHeaderGivesAPortlessFlow) {
  std::vector<uint8_t> options = {kNextUdp, 0, 1, 4, 0, 0, 0, 0};  // PadN, 8 bytes
  const auto udp = udp_segment(1000, 9000);
  options.insert(options.end(), udp.begin(), udp.end());
  const auto key = flow_key_of(ipv6_packet(kNextDestinationOptions, options));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->protocol, kNextDestinationOptions);
  EXPECT_EQ(key->src_port, 0);
  EXPECT_EQ(key->dst_port, 0);
}

// Known answers for fd00::1:1000 -> fd00::2:2000 with the payload
// "hello nabla!", computed independently over the RFC 8200 pseudo-header.
TEST(Ipv6Checksum, MatchesTheKnownAnswerForUdpAndTcp) {
  auto udp = ipv6_packet(kNextUdp, udp_segment(1000, 2000));
  ASSERT_TRUE(fix_transport_checksum(udp));
  EXPECT_EQ(checksum_at(udp, kIpv6Header + 6), 0x8428);
  EXPECT_TRUE(transport_checksum_ok(udp));

  auto tcp = ipv6_packet(kNextTcp, tcp_segment(1000, 2000));
  ASSERT_TRUE(fix_transport_checksum(tcp));
  EXPECT_EQ(checksum_at(tcp, kIpv6Header + 16), 0x3422);
  EXPECT_TRUE(transport_checksum_ok(tcp));
}

// IPv6 has no "no checksum" UDP: a zero checksum field is wrong.
TEST(Ipv6Checksum, AZeroUdpChecksumIsNotAccepted) {
  const auto udp = ipv6_packet(kNextUdp, udp_segment(1000, 2000));
  ASSERT_EQ(checksum_at(udp, kIpv6Header + 6), 0);
  EXPECT_FALSE(transport_checksum_ok(udp));
}

TEST(Ipv6Corruption, FlipsOnePayloadBitAndCompletesTheChecksum) {
  std::mt19937_64 rng(11);
  struct Case {
    uint8_t next_header;
    std::vector<uint8_t> segment;
    size_t checksum_offset;
    size_t payload_offset;
  };
  const std::vector<Case> cases = {
      {kNextUdp, udp_segment(1000, 2000), kIpv6Header + 6, kIpv6Header + 8},
      {kNextTcp, tcp_segment(1000, 2000), kIpv6Header + 16, kIpv6Header + 20}};
  for (const Case& c : cases) {
    auto original = ipv6_packet(c.next_header, c.segment);
    ASSERT_TRUE(fix_transport_checksum(original));
    for (int trial = 0; trial < 50; ++trial) {
      auto fixed = original;
      ASSERT_TRUE(corrupt_packet(fixed, rng, true));
      EXPECT_TRUE(transport_checksum_ok(fixed));
      size_t first = 0;
      EXPECT_EQ(bits_changed(original, fixed, c.checksum_offset, first), 1);
      EXPECT_GE(first, c.payload_offset) << "a header byte changed";

      // Unfixed, a locally sent packet's partial checksum is completed
      // first, so the receiver sees exactly the flip and nothing else.
      auto partial = ipv6_packet(c.next_header, c.segment);
      auto broken = partial;
      ASSERT_TRUE(corrupt_packet(broken, rng, false, true));
      EXPECT_FALSE(transport_checksum_ok(broken));
      for (size_t i = c.payload_offset; i < broken.size(); ++i) broken[i] = partial[i];
      EXPECT_TRUE(transport_checksum_ok(broken)) << trial;
    }
  }
}

// Extension headers are not followed: corruption and checksum repair leave
// such a packet unharmed, byte for byte.
TEST(Ipv6Corruption, PacketsWithExtensionHeadersPassUnharmed) {
  std::mt19937_64 rng(3);
  for (uint8_t extension : {kNextHopByHop, kNextDestinationOptions}) {
    std::vector<uint8_t> options = {kNextUdp, 0, 1, 4, 0, 0, 0, 0};
    const auto udp = udp_segment(1000, 2000);
    options.insert(options.end(), udp.begin(), udp.end());
    const auto original = ipv6_packet(extension, options);
    auto packet = original;
    EXPECT_FALSE(corrupt_packet(packet, rng, true));
    EXPECT_FALSE(corrupt_packet(packet, rng, false, true));
    EXPECT_FALSE(fix_transport_checksum(packet));
    EXPECT_EQ(packet, original);
  }
}

TEST(Ipv6Corruption, RefusesTruncatedOrEmptyPayloads) {
  std::mt19937_64 rng(1);
  // A payload length that claims more than the bytes present.
  auto longer = ipv6_packet(kNextUdp, udp_segment(1000, 2000));
  longer[5] = static_cast<uint8_t>(longer[5] + 8);
  EXPECT_FALSE(corrupt_packet(longer, rng, true));
  // A UDP datagram with no payload has no bit to flip.
  std::vector<uint8_t> empty;
  put16(empty, 1000);
  put16(empty, 2000);
  put16(empty, 8);
  put16(empty, 0);
  auto bare = ipv6_packet(kNextUdp, empty);
  EXPECT_FALSE(corrupt_packet(bare, rng, true));
}

}  // namespace
}  // namespace nabla::injector
