#pragma once
// One node's sniffer: each scan dumps TCP/UDP sockets (sock_diag), maps them
// to processes (/proc) and folds them into the flow table; conntrack events
// in between add flows that opened and closed before the next scan.
//
// Conntrack flows are attributed to processes as far as the node can know:
// the local end of an inbound connection is the process listening on its
// port; an outbound one is the owner of the connecting socket, looked up by
// its exact tuple when the NEW event arrives (the socket exists from the SYN
// on) among processes that owned sockets at the last scan, and cached per
// folded tuple. Otherwise (a process born since the last scan that connects
// and closes at once) pid 0.
//
// nabla's own control connections (ports in `control_ports`, by default the
// injectd and sniffd ports) are labelled `control` and left out of the link
// graph unless asked for.
//
// Not thread-safe: drive it from one thread (nabla-sniffd runs scans, events
// and control requests on one event loop).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nabla/sniffer/conntrack.hh"
#include "nabla/sniffer/flow_table.hh"
#include "nabla/sniffer/proc_map.hh"
#include "nabla/sniffer/sock_diag.hh"

namespace nabla::sniffer {

struct SnifferOptions {
  int64_t interval_ns = 1'000'000'000;
  uint64_t min_messages = 1;                 // default threshold for flows()
  int64_t idle_expiry_ns = 600'000'000'000;  // drop flows idle this long
  bool conntrack = true;                     // subscribe to NEW/DESTROY events
  std::vector<uint16_t> control_ports = {7311, 7312};
};

struct SnifferStats {
  uint64_t scans = 0;
  uint64_t sockets_last_scan = 0;
  int64_t last_scan_ns = 0;  // wall time of the last scan
  DumpCounters sock_diag;
  bool conntrack_enabled = false;
  ConntrackCounters conntrack;
  size_t flows = 0;
};

// A flow as reported: the record plus whether it is a control connection.
struct ReportedFlow {
  FlowRecord record;
  bool control = false;
};

class Sniffer {
 public:
  // Opens the netlink sockets in the caller's namespace. Conntrack failure
  // (no module, no permission) only disables events; sock_diag failure throws.
  explicit Sniffer(SnifferOptions options);

  // One sock_diag + /proc scan at monotonic time now_ns.
  void scan(int64_t now_ns);
  // Reads queued conntrack events (non-blocking) into the flow table.
  size_t drain_conntrack(int64_t now_ns);
  // The conntrack socket to wait on, or -1 when events are disabled.
  int conntrack_fd() const;

  // Flows changed after `cursor` with at least `min_messages` messages
  // (std::nullopt: the configured default); control flows only on request.
  std::vector<ReportedFlow> flows(uint64_t cursor, std::optional<uint64_t> min_messages,
                                  bool include_control, uint64_t& next_cursor) const;
  SnifferStats stats() const;
  const SnifferOptions& options() const { return options_; }
  const PortRange& port_range() const { return table_.port_range(); }

 private:
  void note_event(int64_t now_ns, const ConntrackEvent& ev);
  void resolve_initiators();
  FlowId initiator_id(const ConntrackEvent& ev) const;
  bool is_local(const IpAddr& addr) const;
  bool is_control(const FlowId& id) const;

  SnifferOptions options_;
  SockDiag diag_;
  ProcMap procs_;
  FlowTable table_;
  std::unique_ptr<ConntrackListener> conntrack_;
  std::vector<SocketRecord> sockets_;  // reused by every scan
  std::vector<ConntrackEvent> events_;
  std::vector<IpAddr> local_addrs_;
  struct Owner {
    int32_t pid = 0;
    std::string comm;
  };
  std::unordered_map<uint16_t, Owner> listener_pid_;           // listening port → owner
  std::unordered_map<FlowId, Owner, FlowIdHash> tuple_owner_;  // folded tuple (pid 0) → owner
  std::vector<std::pair<FlowId, uint64_t>> pending_inodes_;    // reused by resolve_initiators
  SnifferStats stats_;
};

}  // namespace nabla::sniffer
