#pragma once
// Link specs: the user's way to name one direction of traffic between two
// endpoints, e.g. for `nabla inject` and campaign files.
//
//   tcp 10.0.0.1:* -> 10.0.0.2:5432
//   udp [fd00::1]:9000 -> [fd00::2]:*
//   any 10.0.0.1 -> 10.0.0.2          (no port = any port)
//   tcp 10.0.0.1:1000-2000 -> 10.0.0.2:80
//
// Grammar: PROTO SRC -> DST, PROTO in tcp|udp|any (case-insensitive), an
// endpoint is ADDR, ADDR:PORTS, or [IPV6]:PORTS; PORTS is N, N-M (N <= M) or
// '*'; ports are 1..65535. A bare IPv6 address without brackets is accepted
// only without a port. Both ends must be the same address family.
//
// Canonical form (to_string): lower-case protocol, single spaces, ports always
// written (`*` for any), IPv6 always bracketed, addresses as inet_ntop prints
// them. parse_link_spec(to_string(s)) == s for every valid s.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nabla/common/ip_address.hh"

namespace nabla::common {

enum class Protocol : uint8_t { kTcp, kUdp, kAny };

std::string_view to_string(Protocol protocol) noexcept;
// IPPROTO_TCP -> kTcp, IPPROTO_UDP -> kUdp, anything else -> nullopt.
std::optional<Protocol> protocol_from_ip_proto(int ip_proto) noexcept;

// An inclusive port range; {1, 65535} is "any port" (printed as '*').
struct PortRange {
  uint16_t low = 1;
  uint16_t high = 65535;

  static constexpr PortRange any() noexcept { return {1, 65535}; }
  static constexpr PortRange single(uint16_t port) noexcept { return {port, port}; }
  bool is_any() const noexcept { return low == 1 && high == 65535; }
  // Port 0 (unknown/folded) matches only an any-range.
  bool contains(uint16_t port) const noexcept { return is_any() || (port >= low && port <= high); }
  friend bool operator==(const PortRange&, const PortRange&) = default;
};

// "*", "80", "1000-2000".
std::string to_string(const PortRange& ports);

// One end of a link spec: an address and a set of ports.
struct EndpointPattern {
  IpAddress address;
  PortRange ports;
  friend bool operator==(const EndpointPattern&, const EndpointPattern&) = default;
};

struct LinkSpec {
  Protocol protocol = Protocol::kAny;
  EndpointPattern src;
  EndpointPattern dst;
  friend bool operator==(const LinkSpec&, const LinkSpec&) = default;
};

// Thrown by parse_link_spec. what() is a two-part message:
//   bad address '10.0.0.300' at column 5
//     tcp 10.0.0.300:* -> 10.0.0.2:80
//         ^^^^^^^^^^
// column() is 1-based; reason() is the first line alone.
class LinkSpecError : public std::invalid_argument {
 public:
  LinkSpecError(std::string reason, std::string_view input, std::size_t column, std::size_t length);
  std::size_t column() const noexcept { return column_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
  std::size_t column_;
};

LinkSpec parse_link_spec(std::string_view text);
std::string to_string(const LinkSpec& spec);

// True when a packet of protocol `proto` from src:src_port to dst:dst_port is
// on the link. A kAny spec matches both TCP and UDP; a kAny packet (protocol
// unknown) matches only a kAny spec. Addresses must be equal (same family).
bool matches(const LinkSpec& spec, Protocol proto, const IpAddress& src, uint16_t src_port,
             const IpAddress& dst, uint16_t dst_port) noexcept;

// True when some packet is on both links: protocols equal or either kAny,
// both addresses equal, and both port ranges intersecting.
bool links_overlap(const LinkSpec& a, const LinkSpec& b) noexcept;

}  // namespace nabla::common
