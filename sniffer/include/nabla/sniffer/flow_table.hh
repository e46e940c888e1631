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
// Bytes sent are payload bytes (tcp_info bytes_sent − bytes_retrans) where
// the kernel reports them, else bytes_acked less the SYN byte.
//
// Closed sockets: a destroy notification carries a socket's final counters.
// closed() adds what they hold beyond the last scan's baseline (all of it
// for a socket no scan saw) and marks the socket closed; a later TIME_WAIT
// record with the same cookie or exact tuple adds nothing and creates no flow. A socket
// missing from a scan keeps its baseline for one more update, since its
// notification may be read after that scan. (A received FIN counts as one
// byte in tcp_info bytes_received; a closed socket's bytes_in may include it.)
//
// UDP sockets carry no counters in sock_diag: a connected UDP socket marks
// its flow active when first seen; its traffic is known only from conntrack
// accounting (note(): the live entries' counters at each scan, the rest at
// DESTROY).
//
// Owners: each socket's flow is labelled through an Attribution (its own
// process, else the listener on its port, ...; see attribution.hh). A flow
// whose owner nothing names (pid 0: a client socket that opened and closed
// before its process could be found) takes the last owner the table knew
// for the same folded tuple; once an owner is known, what the tuple's pid-0
// flow counted joins the owner's flow, so a link does not split in two. Like
// that, a guessed owner (listener, tuple) of the same program as the
// tuple's flow keeps that flow, and a socket's own process takes over what
// a guessed owner of its program counted (a prefork server's master was
// guessed before a scan saw the worker's accepted connection).
#include <cstdint>
#include <memory>
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
  std::string cgroup;      // the owner's cgroup path; empty when unknown
  uint64_t cgroup_id = 0;  // the socket's cgroup id (sock_diag); 0 when unknown
  OwnerSource owner_source = OwnerSource::kNone;  // how id.pid was found
  Direction direction = Direction::kUnknown;
  FlowCounts last_interval;       // deltas from the most recent update that saw it
  FlowCounts total;               // since first seen
  uint32_t sockets = 0;           // sockets behind it in the most recent update
  uint32_t conntrack_events = 0;  // NEW/DESTROY events attributed to it
  uint32_t closed_sockets = 0;    // destroy notifications folded into it
  int64_t first_seen_ns = 0;
  int64_t last_seen_ns = 0;  // last update with traffic (or a conntrack event)
  uint64_t updated_seq = 0;  // table sequence number of the last change
};

class Attribution;

// Normalises an address: IPv4-mapped IPv6 → IPv4.
IpAddr normalise(const IpAddr& addr);

// Flows one table keeps by default (sniffd --max-flows): a flood of new
// tuples (a port scan, a SYN flood from many addresses) must not grow the
// daemon's memory without bound.
inline constexpr size_t kDefaultMaxFlows = 65536;

class FlowTable {
 public:
  explicit FlowTable(PortRange range) : range_(range) {}
  // Tables sharing `sequence` number their changes from one counter, so one
  // cursor reads them all (one table per network namespace).
  FlowTable(PortRange range, std::shared_ptr<uint64_t> sequence)
      : range_(range), seq_(std::move(sequence)) {}

  // Applies one scan. `procs` may be nullptr (no process labels). Returns
  // the number of flows that saw traffic in this interval.
  size_t update(int64_t now_ns, std::span<const SocketRecord> sockets, const ProcMap* procs);
  // The same, with owners from `owners` (rebuilt from this scan).
  size_t update(int64_t now_ns, std::span<const SocketRecord> sockets, const Attribution& owners);

  // Folds one destroy notification (a socket's final counters) into its
  // flow, labelled through `owners`.
  void closed(int64_t now_ns, const SocketRecord& socket, const Attribution& owners);

  // Records a flow seen by some other means (a conntrack event, or with
  // `event` false a live conntrack entry's counts) with the given counts;
  // creates the flow if needed.
  void note(int64_t now_ns, const FlowId& id, Direction direction, const FlowCounts& counts,
            const std::string& comm, const std::string& cgroup = {}, bool event = true);

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
  // At most this many flows: a new flow beyond it is not recorded (its
  // traffic is lost to discovery) and counted in flows_refused(); flows
  // already there go on counting, and expire() makes room again.
  void set_max_flows(size_t max_flows) { max_flows_ = max_flows; }
  size_t max_flows() const { return max_flows_; }
  uint64_t flows_refused() const { return flows_refused_; }
  uint64_t seq() const { return *seq_; }
  const std::shared_ptr<uint64_t>& shared_sequence() const { return seq_; }
  const PortRange& port_range() const { return range_; }
  // The flow id a socket maps to (folding and normalisation applied).
  FlowId flow_id(const SocketRecord& socket, int32_t pid) const;
  Direction direction(const SocketRecord& socket) const;

 private:
  struct SocketPrev {
    TcpCounters tcp;
    uint64_t generation = 0;  // last update that saw it (or its close)
    bool closed = false;      // its destroy notification was folded in
  };
  // The flow of `id` owned as `who` says (see the header comment).
  FlowRecord& owned_flow(int64_t now_ns, FlowId id, const Attributed& who, Direction dir,
                         bool& created);
  // Moves the counts of flow `from` (if any, and not `into`) into `into`.
  void absorb(FlowRecord& into, const FlowId& from);
  // The flow `socket` belongs to, created if new, with its labels refreshed.
  FlowRecord& flow_for(int64_t now_ns, const SocketRecord& socket, const Attribution& owners,
                       bool& created);
  PortRange range_;
  uint64_t generation_ = 0;
  std::shared_ptr<uint64_t> seq_ = std::make_shared<uint64_t>(0);
  std::unordered_map<uint64_t, SocketPrev> sockets_;  // by cookie
  // Exact tuples (ports unfolded) of closed TCP sockets → last update that
  // saw them or their TIME_WAIT leftover.
  std::unordered_map<FlowId, uint64_t, FlowIdHash> closed_tuples_;
  std::unordered_map<FlowId, FlowRecord, FlowIdHash> flows_;
  std::unordered_map<FlowId, int32_t, FlowIdHash> tuple_pid_;  // folded tuple → last owner
  size_t max_flows_ = kDefaultMaxFlows;
  uint64_t flows_refused_ = 0;
  // What a refused flow's counts go into: never listed, reset at each use.
  FlowRecord discarded_;
};

}  // namespace nabla::sniffer
