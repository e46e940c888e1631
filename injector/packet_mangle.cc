// Payload corruption and TCP/UDP checksums over raw IPv4/IPv6 packets as
// NFQUEUE hands them over (starting at the IP header).
#include <algorithm>
#include <optional>

#include "nabla/injector/faults.hh"

namespace nabla::injector {

namespace {

constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;

struct TransportView {
  size_t l4_offset = 0;
  size_t l4_length = 0;
  size_t payload_offset = 0;   // absolute
  size_t checksum_offset = 0;  // absolute
  uint8_t protocol = 0;
  bool ipv6 = false;
};

uint16_t load16(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint16_t>((p[at] << 8) | p[at + 1]);
}

std::optional<TransportView> parse(std::span<const uint8_t> p) {
  if (p.empty()) return std::nullopt;
  TransportView v;
  const int version = p[0] >> 4;
  size_t ip_total = 0;
  if (version == 4) {
    if (p.size() < 20) return std::nullopt;
    v.l4_offset = static_cast<size_t>(p[0] & 0x0f) * 4;
    ip_total = load16(p, 2);
    v.protocol = p[9];
    if ((load16(p, 6) & 0x1fff) != 0 || (load16(p, 6) & 0x2000) != 0) {
      return std::nullopt;  // fragments: the transport header is not whole here
    }
  } else if (version == 6) {
    if (p.size() < 40) return std::nullopt;
    v.ipv6 = true;
    v.l4_offset = 40;
    ip_total = 40 + static_cast<size_t>(load16(p, 4));
    v.protocol = p[6];  // extension headers are not followed (decision: rare here)
  } else {
    return std::nullopt;
  }
  if (v.l4_offset < 20 || ip_total > p.size() || ip_total < v.l4_offset) return std::nullopt;
  v.l4_length = ip_total - v.l4_offset;
  if (v.protocol == kProtoUdp) {
    if (v.l4_length < 8) return std::nullopt;
    v.payload_offset = v.l4_offset + 8;
    v.checksum_offset = v.l4_offset + 6;
  } else if (v.protocol == kProtoTcp) {
    if (v.l4_length < 20) return std::nullopt;
    const size_t header = static_cast<size_t>(p[v.l4_offset + 12] >> 4) * 4;
    if (header < 20 || header > v.l4_length) return std::nullopt;
    v.payload_offset = v.l4_offset + header;
    v.checksum_offset = v.l4_offset + 16;
  } else {
    return std::nullopt;
  }
  return v;
}

uint32_t add_words(uint32_t sum, std::span<const uint8_t> bytes) {
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += static_cast<uint32_t>((bytes[i] << 8) | bytes[i + 1]);
  if (i < bytes.size()) sum += static_cast<uint32_t>(bytes[i] << 8);
  return sum;
}

uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// One's-complement sum over pseudo-header and transport segment, with the
// checksum field taken as it is in the packet.
uint16_t transport_sum(std::span<const uint8_t> p, const TransportView& v) {
  uint32_t sum = 0;
  if (v.ipv6) {
    sum = add_words(sum, p.subspan(8, 32));
  } else {
    sum = add_words(sum, p.subspan(12, 8));
  }
  sum += v.protocol;
  sum += static_cast<uint32_t>(v.l4_length & 0xffff) + static_cast<uint32_t>(v.l4_length >> 16);
  sum = add_words(sum, p.subspan(v.l4_offset, v.l4_length));
  return fold(sum);
}

}  // namespace

bool fix_transport_checksum(std::span<uint8_t> packet) {
  const auto v = parse(packet);
  if (!v) return false;
  packet[v->checksum_offset] = 0;
  packet[v->checksum_offset + 1] = 0;
  uint16_t sum = transport_sum(packet, *v);
  if (sum == 0 && v->protocol == kProtoUdp) sum = 0xffff;  // 0 means "no checksum" in UDP
  packet[v->checksum_offset] = static_cast<uint8_t>(sum >> 8);
  packet[v->checksum_offset + 1] = static_cast<uint8_t>(sum & 0xff);
  return true;
}

bool transport_checksum_ok(std::span<const uint8_t> packet) {
  const auto v = parse(packet);
  if (!v) return false;
  if (v->protocol == kProtoUdp && !v->ipv6 && load16(packet, v->checksum_offset) == 0) {
    return true;  // IPv4 UDP without checksum
  }
  return transport_sum(packet, *v) == 0;
}

bool corrupt_packet(std::span<uint8_t> packet, std::mt19937_64& rng, bool fix_checksum,
                    bool checksum_not_ready) {
  const auto v = parse(packet);
  if (!v) return false;
  const size_t end = v->l4_offset + v->l4_length;
  if (v->payload_offset >= end) return false;
  if (checksum_not_ready && !fix_checksum) fix_transport_checksum(packet);
  std::uniform_int_distribution<size_t> byte(v->payload_offset, end - 1);
  std::uniform_int_distribution<int> bit(0, 7);
  packet[byte(rng)] ^= static_cast<uint8_t>(1u << bit(rng));
  if (fix_checksum) fix_transport_checksum(packet);
  return true;
}

}  // namespace nabla::injector
