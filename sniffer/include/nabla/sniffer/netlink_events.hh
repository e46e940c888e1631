#pragma once
// The read loops shared by the sniffer's netlink sockets: the event
// sockets (conntrack events, socket-destroy notifications) and the dumps
// (live conntrack entries, interface addresses).
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nabla/common/error.hh"

namespace nabla::sniffer {

// Binds a netlink socket to a port id the kernel picks. Throws
// std::system_error naming `what` ("bind(NETLINK_ROUTE)").
inline void bind_netlink(int fd, const char* what) {
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  common::check_syscall(what, ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local));
}

// Reads every datagram queued on a netlink event socket without blocking and
// calls on_message(const nlmsghdr*) for each message in it (boundaries
// checked by libmnl). Datagrams are read up to kNetlinkBatch at a time
// (recvmmsg into slots of `buf`): under churn each closed socket is one
// datagram, and one system call per datagram would cost more than the
// parsing. ENOBUFS — the kernel dropped messages, the socket stays usable —
// is counted in `lost`. Returns true once drained, false on any other error.
inline constexpr size_t kNetlinkSlotBytes = 4096;
inline constexpr size_t kNetlinkBatch = 64;

template <typename OnMessage>
bool drain_netlink(int fd, std::vector<std::byte>& buf, uint64_t& lost, OnMessage&& on_message) {
  const size_t slots = std::clamp<size_t>(buf.size() / kNetlinkSlotBytes, 1, kNetlinkBatch);
  const size_t slot_bytes = buf.size() / slots;
  mmsghdr msgs[kNetlinkBatch] = {};
  iovec iovs[kNetlinkBatch] = {};
  for (size_t i = 0; i < slots; ++i) {
    iovs[i].iov_base = buf.data() + i * slot_bytes;
    iovs[i].iov_len = slot_bytes;
    msgs[i].msg_hdr.msg_iov = &iovs[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  while (true) {
    const int n = ::recvmmsg(fd, msgs, static_cast<unsigned>(slots), MSG_DONTWAIT, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        ++lost;
        continue;
      }
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    for (int m = 0; m < n; ++m) {
      const auto* nlh = static_cast<const nlmsghdr*>(iovs[m].iov_base);
      for (int left = static_cast<int>(msgs[m].msg_len); mnl_nlmsg_ok(nlh, left);
           nlh = mnl_nlmsg_next(nlh, &left)) {
        on_message(nlh);
      }
    }
    // A short batch emptied the queue; what comes later is read next time.
    if (static_cast<size_t>(n) < slots) return true;
  }
}

// Sends one dump request (`request`, `len` bytes, its sequence number
// `seq`) and calls on_message(const nlmsghdr*) for each reply until
// NLMSG_DONE. Returns false on a send or receive failure or an NLMSG_ERROR
// reply (what was delivered before stays delivered); `error` gets its errno.
template <typename OnMessage>
bool netlink_dump(int fd, std::vector<std::byte>& buf, const void* request, size_t len,
                  uint32_t seq, int& error, OnMessage&& on_message) {
  error = 0;
  if (::send(fd, request, len, 0) < 0) {
    error = errno;
    return false;
  }
  while (true) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      return false;
    }
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
    for (int left = static_cast<int>(n); mnl_nlmsg_ok(nlh, left);
         nlh = mnl_nlmsg_next(nlh, &left)) {
      if (nlh->nlmsg_seq != seq) continue;  // a late reply to an earlier request
      if (nlh->nlmsg_type == NLMSG_DONE) return true;
      if (nlh->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
        error = err->error < 0 ? -err->error : err->error;
        if (error == 0) continue;  // an acknowledgement
        return false;
      }
      on_message(nlh);
    }
  }
}

}  // namespace nabla::sniffer
