// IpAddr formatting and the local port range; see socket_record.hh.
#include "nabla/sniffer/socket_record.hh"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace nabla::sniffer {

size_t IpAddr::format(char* buf, size_t len) const {
  if (len == 0) return 0;
  buf[0] = '\0';
  if (family != AF_INET && family != AF_INET6) return 0;
  if (::inet_ntop(family, bytes, buf, static_cast<socklen_t>(len)) == nullptr) return 0;
  return std::char_traits<char>::length(buf);
}

PortRange PortRange::parse(std::string_view text) {
  auto fail = [&text]() -> PortRange {
    throw std::invalid_argument("ip_local_port_range: '" + std::string(text) +
                                "' is invalid; expected two ports LOW HIGH with LOW <= HIGH");
  };
  auto skip_space = [&text] {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) {
      text.remove_prefix(1);
    }
  };
  const std::string_view original = text;
  unsigned values[2] = {0, 0};
  for (unsigned& v : values) {
    skip_space();
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || v > 65535) {
      text = original;
      return fail();
    }
    text.remove_prefix(static_cast<size_t>(ptr - text.data()));
  }
  skip_space();
  if (!text.empty() || values[0] > values[1]) {
    text = original;
    return fail();
  }
  return PortRange{static_cast<uint16_t>(values[0]), static_cast<uint16_t>(values[1])};
}

PortRange PortRange::read_system() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  if (!in) return PortRange{};  // no procfs: Linux default range
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

}  // namespace nabla::sniffer
