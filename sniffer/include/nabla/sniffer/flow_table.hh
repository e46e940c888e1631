#pragma once
// The sniffer's flow table: sockets from each sock_diag scan are turned into
// per-interval deltas (data segments and bytes each way) and aggregated into
// flows keyed by the folded 5-tuple plus the local process — the node-local
// half of a link ⟨proto, src host, src process, src port|0, dst host, dst
// process, dst port|0⟩ that the coordinator joins with the other end.
//
// Deltas: a socket is identified by its kernel cookie. A socket seen before
// contributes (now − previous) counters; a socket seen for the first time
// contributes everything it has counted so far (its life up to now falls in
// this interval or, at start-up, before it — for discovery that is traffic
// worth reporting), with tcp_info's SYN byte removed from bytes_acked.
// Sockets that vanished are forgotten at the next update. UDP sockets carry
// no counters in sock_diag: a connected UDP socket marks its flow active when
// first seen; its traffic is known only from conntrack accounting.
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "nabla/sniffer/proc_map.hh"
#include "nabla/sniffer/socket_record.hh"

namespace nabla::sniffer {

// Who opened the connection, judged by ports: the side with the ephemeral
// port is the client. kOutbound: this node's process connected out.
enum class Direction : uint8_t { kOutbound, kInbound, kUnknown };

struct FlowId {
  Proto proto = Proto::kTcp;
  IpAddr local;             // IPv4-mapped IPv6 addresses are stored as IPv4
  uint16_t local_port = 0;  // 0 when ephemeral
  IpAddr remote;
  uint16_t remote_port = 0;  // 0 when ephemeral
  int32_t pid = 0;           // 0 when the owner is unknown (e.g. exited)
  bool operator==(const FlowId&) const = default;
};

struct FlowIdHash {
  size_t operator()(const FlowId& id) const noexcept;
};

struct FlowCounts {
  uint64_t data_segs_out = 0;
  uint64_t data_segs_in = 0;
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  uint64_t messages() const { return data_segs_out + data_segs_in; }
  FlowCounts& operator+=(const FlowCounts& o);
};

struct FlowRecord {
  FlowId id;
  std::string comm;
  Direction direction = Direction::kUnknown;
  FlowCounts last_interval;       // deltas from the most recent update that saw it
  FlowCounts total;               // since first seen
  uint32_t sockets = 0;           // sockets behind it in the most recent update
  uint32_t conntrack_events = 0;  // NEW/DESTROY events attributed to it
  int64_t first_seen_ns = 0;
  int64_t last_seen_ns = 0;  // last update with traffic (or a conntrack event)
  uint64_t updated_seq = 0;  // table sequence number of the last change
};

// Normalises an address: IPv4-mapped IPv6 → IPv4.
IpAddr normalise(const IpAddr& addr);

class FlowTable {
 public:
  explicit FlowTable(PortRange range) : range_(range) {}

  // Applies one scan. `procs` may be nullptr (no process labels). Returns
  // the number of flows that saw traffic in this interval.
  size_t update(int64_t now_ns, std::span<const SocketRecord> sockets, const ProcMap* procs);

  // Records a flow seen by some other means (a conntrack event) with the
  // given counts; creates the flow if needed.
  void note(int64_t now_ns, const FlowId& id, Direction direction, const FlowCounts& counts,
            const std::string& comm);

  // Flows changed after `cursor` with at least `min_messages` messages in
  // total. Flows without segment counts (UDP sockets, conntrack events
  // without nf_conntrack_acct) pass when min_messages <= 1; TCP flows with no
  // counted message at all (TIME_WAIT leftovers) only when it is 0. Returns
  // the new cursor in `next_cursor`.
  std::vector<FlowRecord> since(uint64_t cursor, uint64_t min_messages,
                                uint64_t& next_cursor) const;
  // Drops flows idle for longer than `idle_ns`.
  void expire(int64_t now_ns, int64_t idle_ns);

  size_t size() const { return flows_.size(); }
  uint64_t seq() const { return seq_; }
  const PortRange& port_range() const { return range_; }
  // The flow id a socket maps to (folding and normalisation applied).
  FlowId flow_id(const SocketRecord& socket, int32_t pid) const;
  Direction direction(const SocketRecord& socket) const;

 private:
  struct SocketPrev {
    TcpCounters tcp;
    uint64_t generation = 0;
  };
  PortRange range_;
  uint64_t generation_ = 0;
  uint64_t seq_ = 0;
  std::unordered_map<uint64_t, SocketPrev> sockets_;  // by cookie
  std::unordered_map<FlowId, FlowRecord, FlowIdHash> flows_;
};

}  // namespace nabla::sniffer
