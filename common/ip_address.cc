#include "nabla/common/ip_address.hh"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace nabla::common {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  // inet_pton needs a NUL-terminated string; the longest valid form
  // (IPv4-mapped IPv6) is 45 characters.
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN + 1];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';

  std::array<uint8_t, 16> bytes{};
  if (::inet_pton(AF_INET, buf, bytes.data()) == 1) {
    return v4({bytes[0], bytes[1], bytes[2], bytes[3]});
  }
  if (::inet_pton(AF_INET6, buf, bytes.data()) == 1) return v6(bytes);
  return std::nullopt;
}

IpAddress IpAddress::v4(const std::array<uint8_t, 4>& bytes) noexcept {
  IpAddress a;
  a.family_ = Family::kV4;
  std::memcpy(a.bytes_.data(), bytes.data(), 4);
  return a;
}

IpAddress IpAddress::v6(const std::array<uint8_t, 16>& bytes) noexcept {
  IpAddress a;
  a.family_ = Family::kV6;
  a.bytes_ = bytes;
  return a;
}

IpAddress IpAddress::v4_from_network_order(uint32_t addr) noexcept {
  std::array<uint8_t, 4> bytes{};
  std::memcpy(bytes.data(), &addr, 4);
  return v4(bytes);
}

bool IpAddress::is_loopback() const noexcept {
  if (is_v4()) return bytes_[0] == 127;
  static constexpr std::array<uint8_t, 16> kLoopback{0, 0, 0, 0, 0, 0, 0, 0,
                                                     0, 0, 0, 0, 0, 0, 0, 1};
  if (bytes_ == kLoopback) return true;
  // IPv4-mapped ::ffff:127.x.y.z
  for (int i = 0; i < 10; ++i) {
    if (bytes_[i] != 0) return false;
  }
  return bytes_[10] == 0xff && bytes_[11] == 0xff && bytes_[12] == 127;
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN];
  // Cannot fail: the family is valid and the buffer is large enough.
  ::inet_ntop(af(), bytes_.data(), buf, sizeof buf);
  return buf;
}

std::string to_string(const Endpoint& endpoint) {
  const std::string port = std::to_string(endpoint.port);
  if (endpoint.address.is_v6()) return "[" + endpoint.address.to_string() + "]:" + port;
  return endpoint.address.to_string() + ":" + port;
}

socklen_t to_sockaddr(const Endpoint& endpoint, sockaddr_storage& out) noexcept {
  out = sockaddr_storage{};
  if (endpoint.address.is_v4()) {
    auto* sa = reinterpret_cast<sockaddr_in*>(&out);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(endpoint.port);
    std::memcpy(&sa->sin_addr, endpoint.address.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sa = reinterpret_cast<sockaddr_in6*>(&out);
  sa->sin6_family = AF_INET6;
  sa->sin6_port = htons(endpoint.port);
  std::memcpy(&sa->sin6_addr, endpoint.address.data(), 16);
  return sizeof(sockaddr_in6);
}

std::optional<Endpoint> endpoint_of(const sockaddr_storage& address) noexcept {
  if (address.ss_family == AF_INET) {
    const auto* sa = reinterpret_cast<const sockaddr_in*>(&address);
    return Endpoint{IpAddress::v4_from_network_order(sa->sin_addr.s_addr), ntohs(sa->sin_port)};
  }
  if (address.ss_family == AF_INET6) {
    const auto* sa = reinterpret_cast<const sockaddr_in6*>(&address);
    std::array<uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), &sa->sin6_addr, 16);
    return Endpoint{IpAddress::v6(bytes), ntohs(sa->sin6_port)};
  }
  return std::nullopt;
}

}  // namespace nabla::common
