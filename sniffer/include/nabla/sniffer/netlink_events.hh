#pragma once
// The read loops shared by the sniffer's netlink sockets: the event
// sockets (conntrack events, socket-destroy notifications) and the dumps
// (live conntrack entries, interface addresses), and the walk of one
// received buffer of a dump's replies, which the fuzzers call too.
#include <linux/netlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nabla/common/error.hh"
#include "nabla/sniffer/netlink_dump.hh"

namespace nabla::sniffer {

// Binds a netlink socket to a port id the kernel picks. Throws
// std::system_error naming `what` ("bind(NETLINK_ROUTE)").
inline void bind_netlink(int fd, const char* what) {
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  common::check_syscall(what, ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local));
}

// Reads every datagram queued on a netlink event socket without blocking and
// calls on_message(const nlmsghdr*) for each whole message in it
// (netlink::MessageWalk). Datagrams are read up to kNetlinkBatch at a time
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
      netlink::MessageWalk walk({static_cast<const std::byte*>(iovs[m].iov_base), msgs[m].msg_len});
      while (const nlmsghdr* nlh = walk.next()) on_message(nlh);
    }
    // A short batch emptied the queue; what comes later is read next time.
    if (static_cast<size_t>(n) < slots) return true;
  }
}

// Walks one received buffer of replies to the dump request numbered `seq`:
// on_message(const nlmsghdr*) for each data message. Messages of another
// sequence number (late replies to an earlier request) and acknowledgements
// (NLMSG_ERROR with errno 0) are skipped. kDone at NLMSG_DONE; kFailed at an
// NLMSG_ERROR, its errno in `error` (netlink::error_code); kMore once every
// whole message is walked. Pure: no system call.
template <typename OnMessage>
DumpStep walk_dump(std::span<const std::byte> received, uint32_t seq, int& error,
                   OnMessage&& on_message) {
  netlink::MessageWalk walk(received);
  while (const nlmsghdr* nlh = walk.next()) {
    if (nlh->nlmsg_seq != seq) continue;
    if (nlh->nlmsg_type == NLMSG_DONE) return DumpStep::kDone;
    if (nlh->nlmsg_type == NLMSG_ERROR) {
      const int code = netlink::error_code(nlh);
      if (code == 0) continue;
      error = code;
      return DumpStep::kFailed;
    }
    on_message(nlh);
  }
  return DumpStep::kMore;
}

// Sends one dump request (`request`, `len` bytes) and hands each received
// buffer to walk(std::span<const std::byte>, int& error) -> DumpStep (a
// walk_dump of the request's sequence number) until it says kDone or
// kFailed. Returns false on a send or receive failure or a failed walk
// (what was delivered before stays delivered); `error` gets the errno.
template <typename Walk>
bool netlink_dump(int fd, std::vector<std::byte>& buf, const void* request, size_t len, int& error,
                  Walk&& walk) {
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
    const DumpStep step =
        walk(std::span<const std::byte>(buf.data(), static_cast<size_t>(n)), error);
    if (step != DumpStep::kMore) return step == DumpStep::kDone;
  }
}

}  // namespace nabla::sniffer
