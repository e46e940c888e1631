#pragma once
// The addresses of a network namespace's interfaces (an RTM_GETADDR dump on
// a NETLINK_ROUTE socket). The socket belongs to the namespace it was made
// in, so a sniffer reads another namespace's addresses without entering it
// again (getifaddrs would open its socket in the caller's).
#include <cstdint>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/socket_record.hh"

namespace nabla::sniffer {

class InterfaceAddresses {
 public:
  // Opens the socket in the caller's namespace. Throws std::system_error.
  InterfaceAddresses();

  // Replaces `out` with every IPv4 and IPv6 address of the namespace.
  // Returns false when the dump failed (`out` keeps what came before it).
  bool list(std::vector<IpAddr>& out);

 private:
  common::FileDescriptor fd_;
  std::vector<std::byte> buf_;
  uint32_t seq_ = 0;
};

}  // namespace nabla::sniffer
