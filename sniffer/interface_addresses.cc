// A namespace's interface addresses; see interface_addresses.hh.
#include "nabla/sniffer/interface_addresses.hh"

#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include "nabla/sniffer/netlink_events.hh"
#include "nabla/sniffer/netlink_dump.hh"

namespace nabla::sniffer {
namespace {

constexpr size_t kRecvBytes = 32 * 1024;

// The address of one RTM_NEWADDR message, false when it carries none.
bool read_address(const nlmsghdr* m, IpAddr& ip) {
  if (m->nlmsg_type != RTM_NEWADDR || m->nlmsg_len < NLMSG_HDRLEN + sizeof(ifaddrmsg)) return false;
  const auto* a = static_cast<const ifaddrmsg*>(netlink::message_payload(m));
  if (a->ifa_family != AF_INET && a->ifa_family != AF_INET6) return false;
  // IFA_LOCAL is the address itself; IFA_ADDRESS is the peer's on a
  // point-to-point link, the same as IFA_LOCAL elsewhere (and the only one
  // IPv6 sends).
  const nlattr* attrs[2] = {};
  netlink::AttrWalk walk = netlink::message_attrs(m, sizeof(ifaddrmsg));
  while (const nlattr* attr = walk.next()) {
    const uint16_t type = netlink::attr_type(attr);
    if (type == IFA_LOCAL || type == IFA_ADDRESS) attrs[type == IFA_LOCAL ? 0 : 1] = attr;
  }
  const nlattr* addr = attrs[0] != nullptr ? attrs[0] : attrs[1];
  const size_t len = a->ifa_family == AF_INET ? 4 : 16;
  if (addr == nullptr || netlink::payload_len(addr) != len) return false;
  ip.family = a->ifa_family;
  std::memcpy(ip.bytes, netlink::payload(addr), len);
  return true;
}

}  // namespace

DumpStep walk_address_dump(std::span<const std::byte> received, uint32_t seq,
                           std::vector<IpAddr>& found, int& error) {
  return walk_dump(received, seq, error, [&](const nlmsghdr* m) {
    IpAddr ip;
    if (read_address(m, ip)) found.push_back(ip);
  });
}

InterfaceAddresses::InterfaceAddresses()
    : fd_(common::FileDescriptor::socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)), buf_(kRecvBytes) {
  bind_netlink(fd_.get(), "bind(NETLINK_ROUTE)");
}

bool InterfaceAddresses::list(std::vector<IpAddr>& out) {
  alignas(nlmsghdr) std::byte msg[64] = {};
  nlmsghdr* nlh = mnl_nlmsg_put_header(msg);
  nlh->nlmsg_type = RTM_GETADDR;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = ++seq_;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_UNSPEC;
  std::vector<IpAddr> found;
  int error = 0;
  const bool ok = netlink_dump(fd_.get(), buf_, msg, nlh->nlmsg_len, error,
                               [&](std::span<const std::byte> received, int& walk_error) {
                                 return walk_address_dump(received, seq_, found, walk_error);
                               });
  if (ok) out = std::move(found);
  return ok;
}

}  // namespace nabla::sniffer
