#pragma once
// The read loop shared by the sniffer's netlink event sockets (conntrack
// events, socket-destroy notifications).
#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nabla::sniffer {

// Reads every datagram queued on a netlink event socket without blocking and
// calls on_message(const nlmsghdr*) for each message in it (boundaries
// checked by libmnl). ENOBUFS — the kernel dropped messages, the socket
// stays usable — is counted in `lost`. Returns true once drained (EAGAIN),
// false on any other error.
template <typename OnMessage>
bool drain_netlink(int fd, std::vector<std::byte>& buf, uint64_t& lost, OnMessage&& on_message) {
  while (true) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        ++lost;
        continue;
      }
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
    for (int left = static_cast<int>(n); mnl_nlmsg_ok(nlh, left);
         nlh = mnl_nlmsg_next(nlh, &left)) {
      on_message(nlh);
    }
  }
}

}  // namespace nabla::sniffer
