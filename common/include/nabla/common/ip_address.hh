#pragma once
// IPv4/IPv6 addresses and concrete endpoints, shared by the injector (packet
// matching), the sniffer (flow records) and the control protocol (listen
// addresses). An address is 16 bytes plus a family; IPv4 uses the first 4
// bytes in network order and leaves the rest zero, so == and <=> are plain
// member-wise comparisons.
#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nabla::common {

class IpAddress {
 public:
  enum class Family : uint8_t { kV4 = 4, kV6 = 6 };

  // 0.0.0.0
  IpAddress() = default;

  // Parses dotted-quad IPv4 or RFC 4291 IPv6 text (inet_pton; no brackets,
  // no zone id). Returns nullopt on anything else.
  static std::optional<IpAddress> parse(std::string_view text);
  // From network-order bytes: 4 bytes for IPv4, 16 for IPv6.
  static IpAddress v4(const std::array<uint8_t, 4>& bytes) noexcept;
  static IpAddress v6(const std::array<uint8_t, 16>& bytes) noexcept;
  // From a uint32_t in network byte order (as found in struct in_addr / iphdr).
  static IpAddress v4_from_network_order(uint32_t addr) noexcept;

  Family family() const noexcept { return family_; }
  bool is_v4() const noexcept { return family_ == Family::kV4; }
  bool is_v6() const noexcept { return family_ == Family::kV6; }
  int af() const noexcept { return is_v4() ? AF_INET : AF_INET6; }
  // 4 or 16 meaningful bytes in network order.
  const uint8_t* data() const noexcept { return bytes_.data(); }
  std::size_t size() const noexcept { return is_v4() ? 4 : 16; }
  // 127.0.0.0/8, ::1, and ::ffff:127.0.0.0/104.
  bool is_loopback() const noexcept;

  // inet_ntop text: "10.0.0.1", "fd00::1".
  std::string to_string() const;

  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  Family family_ = Family::kV4;
  std::array<uint8_t, 16> bytes_{};
};

// A concrete transport endpoint (address + port), e.g. one end of a flow.
struct Endpoint {
  IpAddress address;
  uint16_t port = 0;

  friend auto operator<=>(const Endpoint&, const Endpoint&) = default;
};

// "10.0.0.1:80", "[fd00::1]:80".
std::string to_string(const Endpoint& endpoint);

// The sockaddr_in (IPv4) or sockaddr_in6 (IPv6) of `endpoint` written into
// `out`; returns its length, for bind/connect.
socklen_t to_sockaddr(const Endpoint& endpoint, sockaddr_storage& out) noexcept;

// The endpoint of a sockaddr_in/sockaddr_in6 (as getsockname/accept give
// them); nullopt for any other family.
std::optional<Endpoint> endpoint_of(const sockaddr_storage& address) noexcept;

}  // namespace nabla::common
