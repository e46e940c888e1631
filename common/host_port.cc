#include "nabla/common/host_port.hh"

#include <charconv>
#include <optional>
#include <stdexcept>

#include "nabla/common/ip_address.hh"
#include "nabla/common/resolve.hh"

namespace nabla::common {

std::string HostPort::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

HostPort parse(std::string_view text, std::uint16_t default_port, std::string_view flag,
               bool allow_port_zero) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument(std::string(flag) + ": '" + std::string(text) + "' " + why +
                                 " (expected HOST:PORT, e.g. 10.0.0.2:7311 or [fd00::2]:7311)");
  };
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) throw bad("has no closing ']'");
    out.host = std::string(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw bad("has text after ']' that is not ':PORT'");
      port_text = rest.substr(1);
    }
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon != std::string_view::npos && text.find(':') != colon) {
      throw bad("is an IPv6 address without brackets");
    }
    out.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) throw bad("has no host");
  if (!IpAddress::parse(out.host) && !is_host_name(out.host)) {
    throw bad("has a host that is neither an IP address nor a host name");
  }
  if (port_text.empty()) {
    if (text.back() == ':') throw bad("has an empty port");
    out.port = default_port;
    return out;
  }
  unsigned port = 0;
  const auto [ptr, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      (port == 0 && !allow_port_zero) || port > 65535) {
    throw bad(allow_port_zero ? "has a bad port (0-65535)" : "has a bad port (1-65535)");
  }
  out.port = static_cast<std::uint16_t>(port);
  return out;
}

}  // namespace

HostPort parse_host_port(std::string_view text, std::uint16_t default_port, std::string_view flag) {
  return parse(text, default_port, flag, false);
}

HostPort parse_listen_address(std::string_view text, std::uint16_t default_port,
                              std::string_view flag) {
  HostPort out = parse(text, default_port, flag, true);
  if (!IpAddress::parse(out.host)) {
    throw std::invalid_argument(std::string(flag) + ": '" + out.host +
                                "' is not an IP address (listen on an address literal, e.g. "
                                "127.0.0.1:7312 or [::1]:7312)");
  }
  return out;
}

Endpoint parse_advertised_address(std::string_view text, std::uint16_t listen_port,
                                  std::string_view flag) {
  const HostPort at = parse(text, listen_port, flag, false);
  const std::optional<IpAddress> address = IpAddress::parse(at.host);
  if (!address) {
    throw std::invalid_argument(std::string(flag) + ": '" + at.host +
                                "' is not an IP address (the address literal clients connect "
                                "to, e.g. 203.0.113.7:17311 or [2001:db8::7]:17311)");
  }
  if (at.port == 0) {
    throw std::invalid_argument(std::string(flag) + ": '" + std::string(text) +
                                "' needs the port clients connect to (the listen port is 0)");
  }
  return {*address, at.port};
}

}  // namespace nabla::common
