#pragma once
// `HOST:PORT` as given to --node: a name, an IPv4 address or a bracketed
// IPv6 address (`[fd00::2]:7311`). A missing port takes `default_port`.
#include <cstdint>
#include <string>
#include <string_view>

namespace nabla::coordinator {

struct NodeAddress {
  std::string host;
  std::uint16_t port = 0;
  std::string to_string() const;
};

// Throws std::invalid_argument naming `flag` and the text for a bad address.
NodeAddress parse_node_address(std::string_view text, std::uint16_t default_port,
                               std::string_view flag = "--node");

}  // namespace nabla::coordinator
