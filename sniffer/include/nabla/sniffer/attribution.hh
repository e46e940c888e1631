#pragma once
// Which process a flow belongs to when its socket can no longer say.
//
// A socket found in a scan is owned by the process holding its file (the
// inode map). A socket known only from a destroy notification, or a TIME_WAIT
// leftover, has no file any more; it is attributed, in this order, to:
//   1. kSocket   — the owner a scan found for the same socket (its cookie),
//                  in the last two scans;
//   2. kListener — the server listening on its local address and port (an
//                  accepted connection belongs to it; a wildcard listener
//                  matches any address of its family). When several
//                  processes share the listening socket (a prefork server's
//                  master and workers), it is the one seen owning accepted
//                  connections on that port (the worker), kept across scans
//                  while that process lives; else the listening socket's
//                  owner;
//   3. kTuple    — the owner of another socket of the same folded tuple in
//                  the last scan (a client that keeps reconnecting);
// otherwise to nobody (pid 0). A socket looked up while it lived (a
// conntrack NEW event) is added by cookie with how its owner was found:
// its own process (kSocket), the one process of its cgroup (kCgroup), or
// none left (kGone: pid 0, the socket's cgroup carried). Each owner also carries its cgroup: the
// path from /proc/PID/cgroup and the socket's cgroup id from sock_diag, so a container's flows
// carry the container's identity.
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "nabla/sniffer/flow_table.hh"
#include "nabla/sniffer/proc_map.hh"
#include "nabla/sniffer/socket_record.hh"

namespace nabla::sniffer {

class Attribution {
 public:
  // Rebuilds from one scan: listening sockets (TCP LISTEN, unconnected UDP
  // with a port) and connected sockets, each with its owner in `procs`.
  void rebuild(std::span<const SocketRecord> sockets, const ProcMap& procs, const PortRange& range);

  // The pieces rebuild() adds, for tests and recorded inputs.
  void add_listener(Proto proto, const IpAddr& addr, uint16_t port, const Owner& owner);
  void add_socket(uint64_t cookie, const FlowId& folded_tuple, const Owner& owner,
                  OwnerSource source = OwnerSource::kSocket);
  // Records that `owner` holds an accepted connection on proto addr:port.
  void add_accepted(Proto proto, const IpAddr& addr, uint16_t port, const Owner& owner);

  // The owner of `socket` by the rules above; `folded_tuple` is its flow id
  // with pid 0.
  Attributed resolve(const SocketRecord& socket, const FlowId& folded_tuple) const;
  // The owner of the listener on addr:port (exact address, then wildcard).
  const Owner* listener(Proto proto, const IpAddr& addr, uint16_t port) const;
  const Owner* tuple_owner(const FlowId& folded_tuple) const;
  size_t listeners() const { return listeners_.size(); }

 private:
  struct ListenKey {
    Proto proto = Proto::kTcp;
    IpAddr addr;
    uint16_t port = 0;
    bool operator==(const ListenKey&) const = default;
  };
  struct ListenKeyHash {
    size_t operator()(const ListenKey& key) const noexcept;
  };
  size_t intern(const Owner& owner);
  // The listener entry for addr:port (exact address, then wildcards).
  const ListenKey* listen_key(Proto proto, const IpAddr& addr, uint16_t port) const;
  Attributed by_cookie(uint64_t cookie) const;
  struct CookieOwner {
    size_t index = 0;
    OwnerSource source = OwnerSource::kSocket;
  };

  std::vector<Owner> owners_;  // one per process seen in the scan
  std::unordered_map<int32_t, size_t> owner_index_;
  std::unordered_map<ListenKey, size_t, ListenKeyHash> listeners_;
  std::unordered_map<ListenKey, Owner, ListenKeyHash> accepting_;  // kept across scans
  std::unordered_map<uint64_t, CookieOwner> cookies_;
  // The previous scan's owners and sockets (swapped, not copied): a socket
  // freed just before a scan has its notification read after it.
  std::vector<Owner> previous_owners_;
  std::unordered_map<uint64_t, CookieOwner> previous_cookies_;
  std::unordered_map<FlowId, size_t, FlowIdHash> tuples_;
};

}  // namespace nabla::sniffer
