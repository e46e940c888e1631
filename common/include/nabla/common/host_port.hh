#pragma once
// `HOST:PORT` as given to --node, --listen and --advertise: a name, an IPv4 address or a
// bracketed IPv6 address (`[fd00::2]:7311`). A missing port takes
// `default_port`.
#include <cstdint>
#include <string>
#include <string_view>

#include "nabla/common/ip_address.hh"

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

// A daemon's --advertise ADDR[:PORT]: the control address its clients
// connect to when that is not its own (NAT, a port forward). The host must
// be an IPv4 or IPv6 address literal, the address a client connects to once
// it resolved a name; a missing port takes `listen_port`, which must then
// not be 0. Throws std::invalid_argument naming `flag`.
Endpoint parse_advertised_address(std::string_view text, std::uint16_t listen_port,
                                  std::string_view flag = "--advertise");

}  // namespace nabla::common
