// sock_diag dumps; see sock_diag.hh.
#include "nabla/sniffer/sock_diag.hh"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>

#include "nabla/common/error.hh"
#include "nabla/sniffer/netlink_events.hh"
#include "nabla/sniffer/netlink_dump.hh"

namespace nabla::sniffer {
namespace {

constexpr uint32_t kAllStates = ~0u;
// Receive buffer: a sock_diag dump fills at most ~32 KiB per recv.
constexpr size_t kRecvBytes = 64 * 1024;
// tcp_info must reach at least bytes_received to be useful; data_segs_* sit
// further on (Linux 4.6+) and are read only when present.
constexpr size_t kMinTcpInfo = offsetof(tcp_info, tcpi_bytes_received) + sizeof(uint64_t);
constexpr size_t kDataSegsEnd = offsetof(tcp_info, tcpi_data_segs_out) + sizeof(uint32_t);
constexpr size_t kBytesRetransEnd = offsetof(tcp_info, tcpi_bytes_retrans) + sizeof(uint64_t);
// Destroy notifications arrive in bursts (a server closing thousands of
// connections at once): a large buffer keeps them from overflowing.
constexpr int kDestroyRcvBufBytes = 8 * 1024 * 1024;

struct AttrTable {
  const nlattr* info = nullptr;
  const nlattr* protocol = nullptr;
  const nlattr* cgroup_id = nullptr;
  bool malformed = false;
};

// The attributes read, with what each must hold.
const nlattr** attr_slot(AttrTable& table, uint16_t type, netlink::AttrKind& expected) {
  switch (type) {
    case INET_DIAG_INFO:
      expected = netlink::AttrKind::kBinary;
      return &table.info;
    case INET_DIAG_PROTOCOL:
      expected = netlink::AttrKind::kU8;
      return &table.protocol;
    case INET_DIAG_CGROUP_ID:
      expected = netlink::AttrKind::kU64;
      return &table.cgroup_id;
    default:
      return nullptr;
  }
}

// Unknown (newer-kernel) attributes are skipped, never read.
void take_attr(const nlattr* attr, AttrTable& table) {
  netlink::AttrKind expected = netlink::AttrKind::kBinary;
  const nlattr** slot = attr_slot(table, netlink::attr_type(attr), expected);
  if (slot == nullptr) return;
  if (!netlink::attr_valid(attr, expected)) {
    table.malformed = true;
    return;
  }
  *slot = attr;
}

void copy_addr(int family, const __be32 raw[4], IpAddr& out) {
  out.family = static_cast<uint8_t>(family);
  std::memset(out.bytes, 0, sizeof out.bytes);
  std::memcpy(out.bytes, raw, family == AF_INET ? 4 : 16);
}

// A dump's record, unless it is a listener the dump leaves out.
void take_record(const nlmsghdr* nlh, DiagReplies& replies) {
  SocketRecord rec;
  if (parse_inet_diag(nlh, replies.proto, rec, *replies.counters) != ParseResult::kOk) return;
  if (!replies.include_listeners && replies.proto == Proto::kTcp && rec.state == kTcpListen) return;
  replies.out->push_back(rec);
}

// A zero sequence number on either side matches any.
bool seq_matches(const nlmsghdr* nlh, uint32_t seq) {
  return nlh->nlmsg_seq == 0 || seq == 0 || nlh->nlmsg_seq == seq;
}

// A SOCK_DIAG_BY_FAMILY request for `proto` sockets of `family`, with
// tcp_info asked for on TCP; callers fill in the states or the socket id.
struct DiagRequest {
  nlmsghdr nlh;
  inet_diag_req_v2 req;
};

DiagRequest make_request(Proto proto, uint8_t family, uint16_t flags, uint32_t seq) {
  DiagRequest request{};
  request.nlh.nlmsg_len = sizeof request;
  request.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.nlh.nlmsg_flags = flags;
  request.nlh.nlmsg_seq = seq;
  request.req.sdiag_family = family;
  request.req.sdiag_protocol = proto == Proto::kTcp ? IPPROTO_TCP : IPPROTO_UDP;
  request.req.idiag_ext = proto == Proto::kTcp ? (1u << (INET_DIAG_INFO - 1)) : 0;
  return request;
}

// Sends one SOCK_DIAG request and walks the replies: a dump until the
// kernel says it is done, a lookup until its record (or the error that says
// the socket is gone). False when the exchange itself failed (counted).
bool exchange(int fd, std::vector<std::byte>& buf, uint32_t seq, const void* request, size_t size,
              DiagReplies& replies, bool until_first_record) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, request, size, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    ++replies.counters->errors;
    return false;
  }
  while (true) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      ++replies.counters->errors;
      return false;
    }
    const DumpStep step = walk_diag_replies({buf.data(), static_cast<size_t>(n)}, seq, replies);
    if (until_first_record) {
      if (step != DumpStep::kMore || !replies.out->empty()) return true;
      continue;
    }
    if (step == DumpStep::kDone) return true;
    if (step == DumpStep::kFailed) {
      ++replies.counters->errors;
      return false;
    }
  }
}

void copy_tcp_info(const nlattr* info, SocketRecord& out, DumpCounters& counters) {
  const size_t len = netlink::payload_len(info);
  if (len < kMinTcpInfo) {
    ++counters.short_tcp_info;
    return;
  }
  tcp_info ti{};
  std::memcpy(&ti, netlink::payload(info), std::min(len, sizeof ti));
  out.has_tcp_info = true;
  out.tcp.segs_in = ti.tcpi_segs_in;
  out.tcp.segs_out = ti.tcpi_segs_out;
  out.tcp.bytes_acked = ti.tcpi_bytes_acked;
  out.tcp.bytes_received = ti.tcpi_bytes_received;
  if (len >= kDataSegsEnd) {
    out.tcp.data_segs_in = ti.tcpi_data_segs_in;
    out.tcp.data_segs_out = ti.tcpi_data_segs_out;
  }
  if (len >= kBytesRetransEnd) {
    out.tcp.has_bytes_sent = true;
    out.tcp.bytes_sent = ti.tcpi_bytes_sent;
    out.tcp.bytes_retrans = ti.tcpi_bytes_retrans;
  }
}

// Parses one inet_diag_msg; `proto` is the dump's protocol, or nullopt to
// take it from INET_DIAG_PROTOCOL (destroy notifications carry it).
ParseResult parse_message(const nlmsghdr* nlh, std::optional<Proto> proto, SocketRecord& out,
                          DumpCounters& counters) {
  if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY) return ParseResult::kSkipped;
  if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(inet_diag_msg)) {
    ++counters.malformed;
    return ParseResult::kMalformed;
  }
  ++counters.messages;
  const auto* msg = static_cast<const inet_diag_msg*>(netlink::message_payload(nlh));
  if (msg->idiag_family != AF_INET && msg->idiag_family != AF_INET6) {
    ++counters.malformed;
    return ParseResult::kMalformed;
  }
  // The walk stops quietly at an attribute whose length overruns the
  // message; such trailing garbage makes the whole record suspect.
  AttrTable table;
  netlink::AttrWalk attrs = netlink::message_attrs(nlh, sizeof *msg);
  while (const nlattr* attr = attrs.next()) take_attr(attr, table);
  if (attrs.leftover() > 0 || table.malformed) {
    ++counters.malformed;
    return ParseResult::kMalformed;
  }
  if (!proto) {
    const uint8_t number =
        table.protocol != nullptr ? netlink::attr_get<uint8_t>(table.protocol) : 0;
    if (number != IPPROTO_TCP && number != IPPROTO_UDP) return ParseResult::kSkipped;
    proto = number == IPPROTO_TCP ? Proto::kTcp : Proto::kUdp;
  }
  out = SocketRecord{};
  out.key.proto = *proto;
  copy_addr(msg->idiag_family, msg->id.idiag_src, out.key.local);
  copy_addr(msg->idiag_family, msg->id.idiag_dst, out.key.remote);
  out.key.local_port = ntohs(msg->id.idiag_sport);
  out.key.remote_port = ntohs(msg->id.idiag_dport);
  out.state = msg->idiag_state;
  out.uid = msg->idiag_uid;
  out.inode = msg->idiag_inode;
  out.cookie = (uint64_t{msg->id.idiag_cookie[1]} << 32) | msg->id.idiag_cookie[0];
  if (table.cgroup_id != nullptr) out.cgroup_id = netlink::attr_get<uint64_t>(table.cgroup_id);
  if (table.info != nullptr && *proto == Proto::kTcp) copy_tcp_info(table.info, out, counters);
  return ParseResult::kOk;
}

}  // namespace

ParseResult parse_inet_diag(const nlmsghdr* nlh, Proto proto, SocketRecord& out,
                            DumpCounters& counters) {
  return parse_message(nlh, proto, out, counters);
}

ParseResult parse_destroyed_socket(const nlmsghdr* nlh, SocketRecord& out, DumpCounters& counters) {
  return parse_message(nlh, std::nullopt, out, counters);
}

DumpStep walk_diag_replies(std::span<const std::byte> received, uint32_t seq,
                           DiagReplies& replies) {
  netlink::MessageWalk walk(received);
  while (const nlmsghdr* nlh = walk.next()) {
    // A reply to another request, or a dump the kernel interrupted (the
    // table changed under it): the exchange failed.
    if (!seq_matches(nlh, seq) || (nlh->nlmsg_flags & NLM_F_DUMP_INTR) != 0) {
      return DumpStep::kFailed;
    }
    if (nlh->nlmsg_type >= NLMSG_MIN_TYPE) {
      take_record(nlh, replies);
    } else if (nlh->nlmsg_type == NLMSG_DONE) {
      return DumpStep::kDone;
    } else if (nlh->nlmsg_type == NLMSG_ERROR) {
      return netlink::error_code(nlh) == 0 ? DumpStep::kDone : DumpStep::kFailed;
    }
  }
  return DumpStep::kMore;
}

SockDiag::SockDiag()
    : SockDiag(common::FileDescriptor::socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG)) {}

SockDiag::SockDiag(common::FileDescriptor fd) : fd_(std::move(fd)), buf_(kRecvBytes) {
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  common::check_syscall("bind(NETLINK_SOCK_DIAG)",
                        ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local));
}

bool SockDiag::dump(Proto proto, int family, std::vector<SocketRecord>& out, bool include_listeners,
                    bool include_time_wait) {
  DiagRequest request =
      make_request(proto, static_cast<uint8_t>(family), NLM_F_REQUEST | NLM_F_DUMP, ++seq_);
  uint32_t states = kAllStates;
  if (proto == Proto::kTcp && !include_listeners) states &= ~(1u << kTcpListen);
  if (proto == Proto::kTcp && !include_time_wait) states &= ~(1u << kTcpTimeWait);
  request.req.idiag_states = states;
  DiagReplies replies{proto, include_listeners, &out, &counters_};
  return exchange(fd_.get(), buf_, seq_, &request, sizeof request, replies, false);
}

bool SockDiag::lookup(Proto proto, const IpAddr& local, uint16_t local_port, const IpAddr& remote,
                      uint16_t remote_port, SocketRecord& out) {
  if (local.family != remote.family || (local.family != AF_INET && local.family != AF_INET6)) {
    return false;
  }
  DiagRequest request = make_request(proto, local.family, NLM_F_REQUEST, ++seq_);
  request.req.idiag_states = kAllStates;
  request.req.id.idiag_sport = htons(local_port);
  request.req.id.idiag_dport = htons(remote_port);
  std::memcpy(request.req.id.idiag_src, local.bytes, local.family == AF_INET ? 4 : 16);
  std::memcpy(request.req.id.idiag_dst, remote.bytes, remote.family == AF_INET ? 4 : 16);
  request.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  request.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  std::vector<SocketRecord> found;  // at most one record; lookups are rare
  DiagReplies replies{proto, true, &found, &counters_};
  if (!exchange(fd_.get(), buf_, seq_, &request, sizeof request, replies, true)) return false;
  if (found.empty()) return false;
  out = found.front();
  return true;
}

void SockDiag::dump_all(std::vector<SocketRecord>& out, bool include_listeners,
                        bool include_time_wait) {
  out.clear();
  for (Proto proto : {Proto::kTcp, Proto::kUdp}) {
    for (int family : {AF_INET, AF_INET6}) {
      dump(proto, family, out, include_listeners, include_time_wait);
    }
  }
}

DestroyListener::DestroyListener()
    : DestroyListener(common::FileDescriptor::socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG)) {}

DestroyListener::DestroyListener(common::FileDescriptor fd) : fd_(std::move(fd)), buf_(kRecvBytes) {
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  common::check_syscall("bind(NETLINK_SOCK_DIAG)",
                        ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local));
  // SO_RCVBUFFORCE needs CAP_NET_ADMIN, which the groups need anyway.
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kDestroyRcvBufBytes,
                   sizeof kDestroyRcvBufBytes) != 0) {
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &kDestroyRcvBufBytes,
                 sizeof kDestroyRcvBufBytes);
  }
  for (int group : {SKNLGRP_INET_TCP_DESTROY, SKNLGRP_INET_UDP_DESTROY, SKNLGRP_INET6_TCP_DESTROY,
                    SKNLGRP_INET6_UDP_DESTROY}) {
    common::check_syscall(
        "setsockopt(NETLINK_ADD_MEMBERSHIP, sock_diag destroy group)",
        ::setsockopt(fd_.get(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group));
  }
}

size_t DestroyListener::read_available(std::vector<SocketRecord>& out) {
  size_t added = 0;
  const bool drained = drain_netlink(fd_.get(), buf_, lost_, [&](const nlmsghdr* nlh) {
    SocketRecord rec;
    if (parse_destroyed_socket(nlh, rec, counters_) != ParseResult::kOk) return;
    out.push_back(rec);
    ++added;
  });
  if (!drained) ++counters_.errors;
  return added;
}

}  // namespace nabla::sniffer
