#pragma once
// The addresses of a network namespace's interfaces (an RTM_GETADDR dump on
// a NETLINK_ROUTE socket). The socket belongs to the namespace it was made
// in, so a sniffer reads another namespace's addresses without entering it
// again (getifaddrs would open its socket in the caller's).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/netlink_dump.hh"
#include "nabla/sniffer/socket_record.hh"

namespace nabla::sniffer {

// Walks one received buffer of an RTM_GETADDR dump's replies to the
// request numbered `seq` (walk_dump in netlink_events.hh), appending each
// IPv4 and IPv6 address to `found`. Pure: no system call; `received` must be
// aligned for nlmsghdr.
DumpStep walk_address_dump(std::span<const std::byte> received, uint32_t seq,
                           std::vector<IpAddr>& found, int& error);

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
