// Name resolution at start; see resolve.hh.
#include "nabla/common/resolve.hh"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>

namespace nabla::common {
namespace {

std::optional<IpAddress> address_of(const addrinfo& ai) {
  if (ai.ai_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(ai.ai_addr);
    return IpAddress::v4_from_network_order(sin->sin_addr.s_addr);
  }
  if (ai.ai_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ai.ai_addr);
    std::array<uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), sin6->sin6_addr.s6_addr, bytes.size());
    return IpAddress::v6(bytes);
  }
  return std::nullopt;
}

Resolution lookup(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not per socket type
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  Resolution out;
  if (rc != 0) {
    out.error = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
    return out;
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (const auto a = address_of(*ai)) out.addresses.push_back(*a);
  }
  if (out.addresses.empty()) out.error = "no IPv4 or IPv6 address";
  return out;
}

}  // namespace

Resolver system_resolver() {
  return lookup;
}

bool is_host_name(std::string_view text) {
  if (text.empty() || text.size() > 253 || IpAddress::parse(text)) return false;
  std::size_t label = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      if (label == 0 || label > 63 || text[i - 1] == '-') return false;
      label = 0;
      continue;
    }
    const char c = text[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-' && c != '_') return false;
    if (label == 0 && c == '-') return false;
    ++label;
  }
  return true;
}

ResolvedHost resolve_host(const std::string& host, const Resolver& resolver, std::string_view key,
                          AddressFamily family) {
  if (IpAddress::parse(host)) return {"", host};
  auto fail = [&](const std::string& why) {
    return ResolveError(std::string(key) + ": cannot resolve '" + host + "': " + why);
  };
  if (!is_host_name(host)) throw fail("not a host name or IP address");
  const Resolution r = resolver(host);
  for (const IpAddress& a : r.addresses) {
    if (a.is_v4()) return {host, a.to_string()};
  }
  if (r.addresses.empty()) throw fail(r.error.empty() ? "no address" : r.error);
  if (family == AddressFamily::kIpv4) throw fail("has no IPv4 address (only IPv6)");
  return {host, r.addresses.front().to_string()};
}

std::string resolved_line(const ResolvedHost& host) {
  return "resolved " + host.name + " -> " + host.address;
}

void resolve_host_port(HostPort& address, const Resolver& resolver, std::string_view key,
                       std::ostream& log) {
  const ResolvedHost r = resolve_host(address.host, resolver, key);
  if (r.name.empty()) return;
  address.name = r.name;
  address.host = r.address;
  log << resolved_line(r) << '\n';
}

}  // namespace nabla::common
