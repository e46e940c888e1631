#pragma once
// Host names where an address is accepted (--node, --target, a campaign's
// address/injectd/sniffd/target): each name is resolved once at start, the
// result is printed ("resolved web01 -> 10.0.0.2") and used from then on, so
// a run talks to one address per name however DNS changes during it.
//
// The lookup is a Resolver function object so the policy (literals pass
// through, IPv4 preferred, errors name the key) is testable without DNS;
// system_resolver() is glibc's getaddrinfo (/etc/hosts, then DNS).
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"

namespace nabla::common {

// What a lookup of one name found: its addresses, or the resolver's message.
struct Resolution {
  std::vector<IpAddress> addresses;
  std::string error;  // set when addresses is empty
};

using Resolver = std::function<Resolution(const std::string& name)>;

// getaddrinfo without AI_ADDRCONFIG: a namespace with only loopback and test
// veths still resolves names to IPv4 and IPv6 addresses.
Resolver system_resolver();

// A name that did not resolve (or to no usable address). Not a usage error:
// the same name may resolve later, so callers exit 1, not 2.
class ResolveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class AddressFamily { kAny, kIpv4 };

// A host as given and the address used for it; `name` is empty when the host
// was already an address literal.
struct ResolvedHost {
  std::string name;
  std::string address;
};

// True for a syntactically valid DNS name (RFC 1123 labels; '_' allowed as
// /etc/hosts does); address literals are not names.
bool is_host_name(std::string_view text);

// Resolves `host` once: an address literal is returned as is (no lookup); a
// name takes the first IPv4 address, else (kAny only) the first IPv6 one.
// Throws ResolveError "KEY: cannot resolve 'NAME': WHY".
ResolvedHost resolve_host(const std::string& host, const Resolver& resolver, std::string_view key,
                          AddressFamily family = AddressFamily::kAny);

// The line printed for a resolved name: "resolved web01 -> 10.0.0.2".
std::string resolved_line(const ResolvedHost& host);

// Resolves `address.host` in place (HostPort::name keeps the name) and logs
// the line to `log` when a lookup happened.
void resolve_host_port(HostPort& address, const Resolver& resolver, std::string_view key,
                       std::ostream& log);

}  // namespace nabla::common
