#pragma once
// NETLINK_SOCK_DIAG dumps of TCP and UDP sockets (IPv4 and IPv6) with
// INET_DIAG_INFO, i.e. tcp_info counters. The dump path reuses one receive
// buffer and the caller's output vector, so a steady-state scan allocates
// nothing. Every attribute is validated before it is read (nabla/common/netlink_reader.hh).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/netlink_dump.hh"
#include "nabla/sniffer/socket_record.hh"

struct nlmsghdr;

namespace nabla::sniffer {

// Per-dump error counts (the data path counts, it does not throw).
struct DumpCounters {
  uint64_t messages = 0;        // inet_diag_msg records seen
  uint64_t malformed = 0;       // records or attributes that failed validation
  uint64_t short_tcp_info = 0;  // INET_DIAG_INFO shorter than the fields we read
  uint64_t errors = 0;          // NLMSG_ERROR or recv failures (e.g. ENOBUFS)
};

enum class ParseResult { kOk, kSkipped, kMalformed };

// Parses one SOCK_DIAG_BY_FAMILY message into `out`. Pure: no syscalls, so
// tests can feed recorded or constructed messages. `proto` is the protocol
// the dump asked for (inet_diag_msg does not carry it).
ParseResult parse_inet_diag(const nlmsghdr* nlh, Proto proto, SocketRecord& out,
                            DumpCounters& counters);
// Parses one socket-destroy notification: an inet_diag_msg whose protocol is
// in INET_DIAG_PROTOCOL, with tcp_info as it was when the socket was freed.
// The kernel sends no uid, inode or cgroup with it (the socket has no file
// any more). kSkipped for protocols other than TCP and UDP.
ParseResult parse_destroyed_socket(const nlmsghdr* nlh, SocketRecord& out, DumpCounters& counters);

// Where the replies to one SOCK_DIAG request go.
struct DiagReplies {
  Proto proto;             // the protocol asked for
  bool include_listeners;  // false: TCP listeners are left out
  std::vector<SocketRecord>* out;
  DumpCounters* counters;
};

// Walks one received buffer of replies to the SOCK_DIAG request numbered
// `seq`, appending each record parse_inet_diag takes to replies.out. kDone
// at NLMSG_DONE or an acknowledgement; kFailed at an NLMSG_ERROR with an
// errno, at a message of another sequence number (0 on either side matches
// any) and at a dump the kernel marks interrupted (NLM_F_DUMP_INTR); kMore
// once every whole message is walked. Pure: no system call, so the fuzzer
// and the tests call what SockDiag's loop calls. `received` must be aligned
// for nlmsghdr.
DumpStep walk_diag_replies(std::span<const std::byte> received, uint32_t seq, DiagReplies& replies);

class SockDiag {
 public:
  // Opens the NETLINK_SOCK_DIAG socket. Throws std::system_error.
  SockDiag();
  // Uses a NETLINK_SOCK_DIAG socket made elsewhere (e.g. inside a network
  // namespace with NetNamespace::socket); dumps then cover that namespace.
  explicit SockDiag(common::FileDescriptor fd);

  // Appends every TCP (all states except LISTEN unless include_listeners,
  // and TIME_WAIT unless include_time_wait) or UDP socket of `family`
  // (AF_INET/AF_INET6) to `out`. Returns false if the dump failed (counted);
  // what was parsed before stays in `out`.
  bool dump(Proto proto, int family, std::vector<SocketRecord>& out, bool include_listeners,
            bool include_time_wait = true);
  // Looks up the one socket with this exact local/remote tuple (a
  // non-dump SOCK_DIAG request). False when there is none (counted as
  // nothing: a closed socket is a normal outcome).
  bool lookup(Proto proto, const IpAddr& local, uint16_t local_port, const IpAddr& remote,
              uint16_t remote_port, SocketRecord& out);
  // TCP+UDP × IPv4+IPv6 into `out` (cleared first).
  void dump_all(std::vector<SocketRecord>& out, bool include_listeners = false,
                bool include_time_wait = true);

  const DumpCounters& counters() const { return counters_; }

 private:
  common::FileDescriptor fd_;
  uint32_t seq_ = 0;
  std::vector<std::byte> buf_;
  DumpCounters counters_;
};

// The kernel's socket-destroy notifications (sock_diag multicast groups for
// TCP and UDP over IPv4 and IPv6): one message per socket of this network
// namespace when it is freed, so a connection that opens and closes between
// two scans is still seen, with its final counters. Joining the groups needs
// CAP_NET_ADMIN. Notifications the kernel drops (ENOBUFS) are counted.
class DestroyListener {
 public:
  // Opens a socket in the caller's namespace and joins the groups. Throws
  // std::system_error naming the failing call.
  DestroyListener();
  // Uses a NETLINK_SOCK_DIAG socket made elsewhere (e.g. in a namespace).
  explicit DestroyListener(common::FileDescriptor fd);

  int fd() const { return fd_.get(); }
  // Reads every queued notification (non-blocking) into `out`; returns how
  // many were appended.
  size_t read_available(std::vector<SocketRecord>& out);
  const DumpCounters& counters() const { return counters_; }
  uint64_t lost() const { return lost_; }

 private:
  common::FileDescriptor fd_;
  std::vector<std::byte> buf_;
  DumpCounters counters_;
  uint64_t lost_ = 0;
};

}  // namespace nabla::sniffer
