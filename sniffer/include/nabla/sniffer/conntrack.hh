#pragma once
// Conntrack NEW/DESTROY event subscription (NETLINK_NETFILTER, ctnetlink
// groups NEW and DESTROY), so connections that open and close
// between two sock_diag scans are still seen. DESTROY events carry packet
// and byte counters when net.netfilter.nf_conntrack_acct=1.
//
// Conntrack only tracks a network namespace once something there needs it
// (an iptables/nftables rule using conntrack or NAT); without that, no events
// arrive. Lost events (ENOBUFS: the receive buffer overflowed) are counted,
// never hidden.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/netlink_dump.hh"
#include "nabla/sniffer/socket_record.hh"

struct nlmsghdr;

namespace nabla::sniffer {

enum class ConntrackEventType : uint8_t { kNew, kDestroy };

struct ConntrackEvent {
  ConntrackEventType type = ConntrackEventType::kNew;
  Proto proto = Proto::kTcp;
  // The original direction: src is the side that initiated the connection.
  IpAddr src;
  uint16_t src_port = 0;
  IpAddr dst;
  uint16_t dst_port = 0;
  uint32_t id = 0;            // the entry's conntrack id (CTA_ID); 0 when absent
  bool has_counters = false;  // only with nf_conntrack_acct=1, on DESTROY
  uint64_t orig_packets = 0;
  uint64_t orig_bytes = 0;
  uint64_t reply_packets = 0;
  uint64_t reply_bytes = 0;
};

struct ConntrackCounters {
  uint64_t events = 0;
  uint64_t ignored = 0;    // other protocols (ICMP, SCTP...) or message types
  uint64_t malformed = 0;  // failed attribute validation
  uint64_t lost = 0;       // ENOBUFS: the kernel dropped events
};

enum class ConntrackParse { kOk, kIgnored, kMalformed };

// Parses one ctnetlink message. Pure (no syscalls); TCP and UDP only.
ConntrackParse parse_conntrack_event(const nlmsghdr* nlh, ConntrackEvent& out);

// Walks one received buffer of a conntrack dump's replies to the request
// numbered `seq` (walk_dump in netlink_events.hh: late replies and
// acknowledgements skipped, kDone at NLMSG_DONE, kFailed with the errno in
// `error` at an NLMSG_ERROR), appending each TCP or UDP entry (UDP only when
// `udp_only`) to `out`, typed kNew. Pure: no system call, so the fuzzer and
// the tests call what ConntrackTable's loop calls. `received` must be
// aligned for nlmsghdr.
DumpStep walk_conntrack_dump(std::span<const std::byte> received, uint32_t seq, bool udp_only,
                             std::vector<ConntrackEvent>& out, int& error);

class ConntrackListener {
 public:
  // Opens and subscribes a socket in the caller's network namespace.
  // Throws std::system_error naming the failing call.
  ConntrackListener();
  // Uses a NETLINK_NETFILTER socket made elsewhere (e.g. inside a test's
  // namespace with NetNamespace::socket) and subscribes it.
  explicit ConntrackListener(common::FileDescriptor fd);

  int fd() const { return fd_.get(); }
  // Reads every event already queued (non-blocking) and appends it to `out`.
  // Returns the number appended.
  size_t read_available(std::vector<ConntrackEvent>& out);
  const ConntrackCounters& counters() const { return counters_; }

 private:
  void subscribe();
  common::FileDescriptor fd_;
  std::vector<std::byte> buf_;
  ConntrackCounters counters_;
};

// The live conntrack entries of a namespace with their counters (a
// ctnetlink dump), so a flow that lasts has counts while it lives, not only
// once its DESTROY event comes. The dump asks the kernel for UDP entries
// only when `udp_only` (a filter, Linux 5.9+; where the kernel refuses it,
// every entry comes and the others are skipped here).
class ConntrackTable {
 public:
  // Opens a NETLINK_NETFILTER socket in the caller's network namespace.
  // Throws std::system_error naming the failing call.
  ConntrackTable();
  explicit ConntrackTable(common::FileDescriptor fd);

  // Appends every live TCP and UDP entry (UDP only when udp_only) to `out`,
  // typed kNew. Returns false when the dump failed (counted in lost).
  bool dump(bool udp_only, std::vector<ConntrackEvent>& out);
  const ConntrackCounters& counters() const { return counters_; }

 private:
  bool request(bool filtered, bool udp_only, std::vector<ConntrackEvent>& out);
  common::FileDescriptor fd_;
  std::vector<std::byte> buf_;
  uint32_t seq_ = 0;
  bool filter_works_ = true;
  ConntrackCounters counters_;
};

}  // namespace nabla::sniffer
