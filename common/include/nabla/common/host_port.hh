#pragma once
// `HOST:PORT` as given to --node and --listen: a name, an IPv4 address or a
// bracketed IPv6 address (`[fd00::2]:7311`). A missing port takes
// `default_port`.
#include <cstdint>
#include <string>
#include <string_view>

namespace nabla::common {

struct HostPort {
  std::string host;  // a name, or an address literal once resolved (resolve.hh)
  std::uint16_t port = 0;
  std::string name;  // the DNS name `host` was resolved from; empty for a literal
  // "HOST:PORT", the address in brackets for IPv6.
  std::string to_string() const;
};

// Throws std::invalid_argument naming `flag` and the text for a bad address.
// Port 1-65535.
HostPort parse_host_port(std::string_view text, std::uint16_t default_port,
                         std::string_view flag = "--node");

// A daemon's listen address: the host must be an IPv4 or IPv6 address
// literal (no name lookups at start-up) and port 0 (any free port) is allowed.
HostPort parse_listen_address(std::string_view text, std::uint16_t default_port,
                              std::string_view flag = "--listen");

}  // namespace nabla::common
