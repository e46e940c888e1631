// ctnetlink events; see conntrack.hh.
#include "nabla/sniffer/conntrack.hh"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "nabla/common/error.hh"
#include "nabla/sniffer/netlink_events.hh"
#include "nabla/sniffer/netlink_dump.hh"

namespace nabla::sniffer {
namespace {

constexpr size_t kRecvBytes = 64 * 1024;
constexpr int kRcvBufBytes = 4 * 1024 * 1024;

using netlink::AttrKind;

// Collects the attributes of one nesting level after validating each.
template <int kMax>
struct Attrs {
  const nlattr* at[kMax + 1] = {};
  bool malformed = false;
};

// What each attribute read must hold, by level; kBinary = not read as a number.
AttrKind top_kind(uint16_t type) {
  switch (type) {
    case CTA_TUPLE_ORIG:
    case CTA_TUPLE_REPLY:
    case CTA_COUNTERS_ORIG:
    case CTA_COUNTERS_REPLY:
      return AttrKind::kNested;
    case CTA_ID:
      return AttrKind::kU32;
    default:
      return AttrKind::kBinary;
  }
}
AttrKind tuple_kind(uint16_t type) {
  return type == CTA_TUPLE_IP || type == CTA_TUPLE_PROTO ? AttrKind::kNested : AttrKind::kBinary;
}
AttrKind ip_kind(uint16_t type) {
  switch (type) {
    case CTA_IP_V4_SRC:
    case CTA_IP_V4_DST:
      return AttrKind::kU32;
    default:
      return AttrKind::kBinary;  // v6 addresses are checked by length below
  }
}
AttrKind proto_kind(uint16_t type) {
  switch (type) {
    case CTA_PROTO_NUM:
      return AttrKind::kU8;
    case CTA_PROTO_SRC_PORT:
    case CTA_PROTO_DST_PORT:
      return AttrKind::kU16;
    default:
      return AttrKind::kBinary;
  }
}
AttrKind counter_kind(uint16_t type) {
  return type == CTA_COUNTERS_PACKETS || type == CTA_COUNTERS_BYTES ? AttrKind::kU64
                                                                    : AttrKind::kBinary;
}

template <int kMax, AttrKind (*KindOf)(uint16_t)>
bool collect(netlink::AttrWalk walk, Attrs<kMax>& out) {
  while (const nlattr* attr = walk.next()) {
    const uint16_t type = netlink::attr_type(attr);
    if (type > kMax) continue;  // newer kernel: skip
    if (!netlink::attr_valid(attr, KindOf(type))) {
      out.malformed = true;
      continue;
    }
    out.at[type] = attr;
  }
  return !out.malformed;
}

template <int kMax, AttrKind (*KindOf)(uint16_t)>
bool parse_nested(const nlattr* nest, Attrs<kMax>& out) {
  return collect<kMax, KindOf>(netlink::nested_attrs(nest), out);
}

bool read_addr(const nlattr* attr, int family, IpAddr& out) {
  if (attr == nullptr) return false;
  const size_t len = family == AF_INET ? 4 : 16;
  if (netlink::payload_len(attr) != len) return false;
  out.family = static_cast<uint8_t>(family);
  std::memset(out.bytes, 0, sizeof out.bytes);
  std::memcpy(out.bytes, netlink::payload(attr), len);
  return true;
}

// Returns kOk, kIgnored (not TCP/UDP) or kMalformed.
ConntrackParse parse_tuple(const nlattr* tuple, ConntrackEvent& out) {
  Attrs<CTA_TUPLE_MAX> t;
  if (tuple == nullptr || !parse_nested<CTA_TUPLE_MAX, tuple_kind>(tuple, t)) {
    return ConntrackParse::kMalformed;
  }
  Attrs<CTA_IP_MAX> ip;
  Attrs<CTA_PROTO_MAX> proto;
  if (t.at[CTA_TUPLE_IP] == nullptr || t.at[CTA_TUPLE_PROTO] == nullptr ||
      !parse_nested<CTA_IP_MAX, ip_kind>(t.at[CTA_TUPLE_IP], ip) ||
      !parse_nested<CTA_PROTO_MAX, proto_kind>(t.at[CTA_TUPLE_PROTO], proto) ||
      proto.at[CTA_PROTO_NUM] == nullptr) {
    return ConntrackParse::kMalformed;
  }
  const uint8_t num = netlink::attr_get<uint8_t>(proto.at[CTA_PROTO_NUM]);
  if (num != IPPROTO_TCP && num != IPPROTO_UDP) return ConntrackParse::kIgnored;
  out.proto = num == IPPROTO_TCP ? Proto::kTcp : Proto::kUdp;
  const bool v4 = ip.at[CTA_IP_V4_SRC] != nullptr;
  const int family = v4 ? AF_INET : AF_INET6;
  if (!read_addr(ip.at[v4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC], family, out.src) ||
      !read_addr(ip.at[v4 ? CTA_IP_V4_DST : CTA_IP_V6_DST], family, out.dst) ||
      proto.at[CTA_PROTO_SRC_PORT] == nullptr || proto.at[CTA_PROTO_DST_PORT] == nullptr) {
    return ConntrackParse::kMalformed;
  }
  out.src_port = ntohs(netlink::attr_get<uint16_t>(proto.at[CTA_PROTO_SRC_PORT]));
  out.dst_port = ntohs(netlink::attr_get<uint16_t>(proto.at[CTA_PROTO_DST_PORT]));
  return ConntrackParse::kOk;
}

bool read_counters(const nlattr* nest, uint64_t& packets, uint64_t& bytes) {
  Attrs<CTA_COUNTERS_MAX> c;
  if (!parse_nested<CTA_COUNTERS_MAX, counter_kind>(nest, c) ||
      c.at[CTA_COUNTERS_PACKETS] == nullptr || c.at[CTA_COUNTERS_BYTES] == nullptr) {
    return false;
  }
  packets = be64toh(netlink::attr_get<uint64_t>(c.at[CTA_COUNTERS_PACKETS]));
  bytes = be64toh(netlink::attr_get<uint64_t>(c.at[CTA_COUNTERS_BYTES]));
  return true;
}

}  // namespace

ConntrackParse parse_conntrack_event(const nlmsghdr* nlh, ConntrackEvent& out) {
  if ((nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK) return ConntrackParse::kIgnored;
  const int msg = nlh->nlmsg_type & 0xff;
  if (msg != IPCTNL_MSG_CT_NEW && msg != IPCTNL_MSG_CT_DELETE) return ConntrackParse::kIgnored;
  if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(nfgenmsg)) return ConntrackParse::kMalformed;
  out = ConntrackEvent{};
  out.type = msg == IPCTNL_MSG_CT_NEW ? ConntrackEventType::kNew : ConntrackEventType::kDestroy;
  Attrs<CTA_MAX> top;
  if (!collect<CTA_MAX, top_kind>(netlink::message_attrs(nlh, sizeof(nfgenmsg)), top)) {
    return ConntrackParse::kMalformed;
  }
  const ConntrackParse tuple = parse_tuple(top.at[CTA_TUPLE_ORIG], out);
  if (tuple != ConntrackParse::kOk) return tuple;
  if (top.at[CTA_ID] != nullptr) out.id = ntohl(netlink::attr_get<uint32_t>(top.at[CTA_ID]));
  if (top.at[CTA_COUNTERS_ORIG] != nullptr && top.at[CTA_COUNTERS_REPLY] != nullptr) {
    if (!read_counters(top.at[CTA_COUNTERS_ORIG], out.orig_packets, out.orig_bytes) ||
        !read_counters(top.at[CTA_COUNTERS_REPLY], out.reply_packets, out.reply_bytes)) {
      return ConntrackParse::kMalformed;
    }
    out.has_counters = true;
  }
  return ConntrackParse::kOk;
}

DumpStep walk_conntrack_dump(std::span<const std::byte> received, uint32_t seq, bool udp_only,
                             std::vector<ConntrackEvent>& out, int& error) {
  return walk_dump(received, seq, error, [&](const nlmsghdr* m) {
    ConntrackEvent ev;
    if (parse_conntrack_event(m, ev) != ConntrackParse::kOk) return;
    if (udp_only && ev.proto != Proto::kUdp) return;
    ev.type = ConntrackEventType::kNew;
    out.push_back(ev);
  });
}

ConntrackListener::ConntrackListener()
    : ConntrackListener(common::FileDescriptor::socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER)) {}

ConntrackListener::ConntrackListener(common::FileDescriptor fd)
    : fd_(std::move(fd)), buf_(kRecvBytes) {
  subscribe();
}

void ConntrackListener::subscribe() {
  // A burst of short connections must not overflow the queue; FORCE (root)
  // lifts the rmem_max cap, the plain call is the unprivileged fallback.
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kRcvBufBytes, sizeof kRcvBufBytes) !=
      0) {
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &kRcvBufBytes, sizeof kRcvBufBytes);
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = NF_NETLINK_CONNTRACK_NEW | NF_NETLINK_CONNTRACK_DESTROY;
  common::check_syscall("bind(NETLINK_NETFILTER, conntrack NEW|DESTROY)",
                        ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local));
}

size_t ConntrackListener::read_available(std::vector<ConntrackEvent>& out) {
  size_t added = 0;
  drain_netlink(fd_.get(), buf_, counters_.lost, [&](const nlmsghdr* nlh) {
    ConntrackEvent ev;
    switch (parse_conntrack_event(nlh, ev)) {
      case ConntrackParse::kOk:
        ++counters_.events;
        out.push_back(ev);
        ++added;
        break;
      case ConntrackParse::kIgnored:
        ++counters_.ignored;
        break;
      case ConntrackParse::kMalformed:
        ++counters_.malformed;
        break;
    }
  });
  return added;
}

ConntrackTable::ConntrackTable()
    : ConntrackTable(common::FileDescriptor::socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER)) {}

ConntrackTable::ConntrackTable(common::FileDescriptor fd) : fd_(std::move(fd)), buf_(kRecvBytes) {
  bind_netlink(fd_.get(), "bind(NETLINK_NETFILTER)");
}

bool ConntrackTable::dump(bool udp_only, std::vector<ConntrackEvent>& out) {
  if (udp_only && filter_works_) {
    const size_t before = out.size();
    if (request(true, true, out)) return true;
    out.resize(before);
    filter_works_ = false;  // an older kernel: filter here from now on
  }
  if (request(false, udp_only, out)) return true;
  ++counters_.lost;
  return false;
}

bool ConntrackTable::request(bool filtered, bool udp_only, std::vector<ConntrackEvent>& out) {
  // The kernel's filter flag for the protocol number
  // (CTA_FILTER_F_CTA_PROTO_NUM, not in the uapi headers).
  constexpr uint32_t kFilterProtoNum = 1u << 3;
  alignas(nlmsghdr) std::byte msg[256] = {};
  nlmsghdr* nlh = mnl_nlmsg_put_header(msg);
  nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = ++seq_;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = AF_UNSPEC;
  nfg->version = NFNETLINK_V0;
  if (filtered) {
    nlattr* tuple = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
    nlattr* proto = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
    mnl_attr_put_u8(nlh, CTA_PROTO_NUM, IPPROTO_UDP);
    mnl_attr_nest_end(nlh, proto);
    mnl_attr_nest_end(nlh, tuple);
    nlattr* filter = mnl_attr_nest_start(nlh, CTA_FILTER);
    mnl_attr_put_u32(nlh, CTA_FILTER_ORIG_FLAGS, kFilterProtoNum);
    mnl_attr_put_u32(nlh, CTA_FILTER_REPLY_FLAGS, 0);
    mnl_attr_nest_end(nlh, filter);
  }
  int error = 0;
  return netlink_dump(fd_.get(), buf_, msg, nlh->nlmsg_len, error,
                      [&](std::span<const std::byte> received, int& walk_error) {
                        return walk_conntrack_dump(received, seq_, udp_only, out, walk_error);
                      });
}

}  // namespace nabla::sniffer
