#pragma once
// One node's sniffer. Three sources feed one flow table:
//   - scans: each dumps TCP/UDP sockets (sock_diag) with their counters and
//     maps them to processes (/proc);
//   - destroy notifications (sock_diag multicast): every socket freed in
//     between, with its final tcp_info, so a connection that lives 1 ms is
//     reported with its segments and bytes;
//   - conntrack: NEW/DESTROY events, and at each scan a dump of the live
//     entries with their counters (conntrack_counts.hh), kept live by
//     nabla's own iptables chain (conntrack_rule.hh); they give UDP flows
//     their packet and byte counts while they live and when they end, and
//     TCP flows when destroy notifications are unavailable (when they are, a
//     TCP event marks its flow and names the connecting process but adds no
//     counts, so nothing is counted twice).
// sources() says which are active, and why one is inert.
//
// Owners: see attribution.hh (the socket's process, else the listener on its
// port, else the owner of the same tuple at the last scan). For conntrack
// events, the connecting socket of an outbound connection is looked up by
// its exact tuple when the NEW event arrives (the socket exists from the SYN
// on) among processes that owned sockets at the last scan.
//
// nabla's own control connections (ports in `control_ports`, by default the
// injectd and sniffd ports) are labelled `control` and left out of the link
// graph unless asked for.
//
// Network namespaces: a Sniffer scans the namespace it was made in and,
// with `namespaces` set, every selected namespace of the node (namespaces.hh)
// through a Sniffer of its own whose sockets were opened inside it (scan,
// destroy and conntrack sources, the last with its chain in that namespace,
// removed there when the sniffer stops). They share one
// process map (socket inodes are unique across namespaces) and one flow
// sequence (one cursor reads them all). The list is refreshed at every
// scan; each flow is reported with its namespace.
//
// Not thread-safe: drive it from one thread (nabla-sniffd runs scans, events
// and control requests on one event loop).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/sniffer/attribution.hh"
#include "nabla/sniffer/cgroups.hh"
#include "nabla/sniffer/conntrack.hh"
#include "nabla/sniffer/conntrack_counts.hh"
#include "nabla/sniffer/conntrack_rule.hh"
#include "nabla/sniffer/flow_table.hh"
#include "nabla/sniffer/interface_addresses.hh"
#include "nabla/sniffer/namespaces.hh"
#include "nabla/sniffer/proc_map.hh"
#include "nabla/sniffer/sock_diag.hh"

namespace nabla::sniffer {

struct SnifferOptions {
  int64_t interval_ns = 1'000'000'000;
  uint64_t min_messages = 1;                 // default threshold for flows()
  int64_t idle_expiry_ns = 600'000'000'000;  // drop flows idle this long
  bool conntrack = true;                     // subscribe to NEW/DESTROY events
  bool conntrack_rule = true;                // with conntrack: install the chain that keeps it live
  bool destroy_events = true;                // subscribe to sock_diag destroy notifications
  // nabla's own: the injector's, the sniffer's and the load agent's
  // default control ports (common::kInjectdPort, kSniffdPort, kLoaddPort);
  // a coordinator's calls to a load agent are no link either.
  std::vector<uint16_t> control_ports = {7311, 7312, 7313};
  size_t max_flows = kDefaultMaxFlows;  // per network namespace's table
  // Namespaces scanned besides its own, at most: each costs netlink sockets,
  // a flow table and a conntrack chain, and anyone who may create namespaces
  // could otherwise make the daemon hold thousands.
  size_t max_namespaces = 256;
  NamespaceSelection namespaces;  // scanned besides its own (default: none)
  NamespaceRoots namespace_roots;
};

// The network namespace a flow was seen in. `own`: the sniffer's own (the
// node's), reported with its inode only.
struct NetnsLabel {
  uint64_t inode = 0;
  std::string name;       // under /run/netns; empty when unnamed
  std::string container;  // short container id; empty when none
  bool own = true;
};

// One source of flows: whether it is active, and what it does or why not.
struct SourceStatus {
  std::string name;  // "scan", "destroy", "conntrack"
  bool active = false;
  std::string detail;
};

struct SnifferStats {
  uint64_t scans = 0;
  uint64_t sockets_last_scan = 0;
  int64_t last_scan_ns = 0;  // wall time of the last scan
  DumpCounters sock_diag;
  bool conntrack_enabled = false;
  ConntrackCounters conntrack;
  bool destroy_enabled = false;
  DumpCounters destroy;
  uint64_t destroy_lost = 0;  // notifications the kernel dropped (ENOBUFS)
  size_t flows = 0;
  uint64_t flows_refused = 0;     // new flows not recorded: a table was full
  size_t namespaces = 1;          // scanned, its own included
  size_t namespaces_skipped = 0;  // selected but not scanned: max_namespaces reached
};

// A flow as reported: the record plus whether it is a control connection.
struct ReportedFlow {
  FlowRecord record;
  bool control = false;
  NetnsLabel netns = {};
};

class Sniffer {
 public:
  // Opens the netlink sockets in the caller's namespace. Conntrack failure
  // (no module, no permission) only disables events; sock_diag failure throws.
  explicit Sniffer(SnifferOptions options);
  ~Sniffer();
  Sniffer(const Sniffer&) = delete;
  Sniffer& operator=(const Sniffer&) = delete;

  // One sock_diag + /proc scan at monotonic time now_ns (of every namespace,
  // after refreshing their list).
  void scan(int64_t now_ns);
  // Reads queued conntrack events (non-blocking) of every namespace into
  // the flow tables.
  size_t drain_conntrack(int64_t now_ns);
  // Reads queued destroy notifications (non-blocking) of every namespace.
  size_t drain_destroyed(int64_t now_ns);
  // The sockets to wait on, or -1 when that source is inactive. With other
  // namespaces, conntrack_fd() is an epoll descriptor readable when any
  // namespace's conntrack socket is.
  int conntrack_fd() const;
  int destroy_fd() const;
  // Each source's state, for --check and the start-up log.
  std::vector<SourceStatus> sources() const;
  // One line per other namespace scanned: its label and which of its
  // sources are active ("netns @ctr-3f2a…: scan active, destroy active,
  // conntrack inert (why)"), for --check and the start-up log.
  std::vector<std::string> namespace_sources() const;

  // Flows changed after `cursor` with at least `min_messages` messages
  // (std::nullopt: the configured default); control flows only on request.
  std::vector<ReportedFlow> flows(uint64_t cursor, std::optional<uint64_t> min_messages,
                                  bool include_control, uint64_t& next_cursor) const;
  SnifferStats stats() const;
  const SnifferOptions& options() const { return options_; }
  const PortRange& port_range() const { return table_.port_range(); }

 private:
  // A Sniffer for another namespace, made on a thread inside it.
  Sniffer(SnifferOptions options, std::shared_ptr<ProcMap> procs,
          std::shared_ptr<uint64_t> flow_sequence, NetnsLabel netns);
  void open_sources();
  std::string sources_line() const;
  void refresh_namespaces();
  void add_namespace(const FoundNamespace& ns);
  void add_namespace_stats(SnifferStats& s) const;
  SourceStatus namespaces_status() const;
  void dump_sockets();
  // Brings the /proc map up to date for this scan's sockets (see sniffer.cc).
  void read_owners(int64_t now_ns);
  size_t unknown_inodes() const;
  void account_scan(int64_t now_ns);
  void append_flows(uint64_t cursor, uint64_t min_messages, bool include_control,
                    std::vector<ReportedFlow>& out, uint64_t& next_cursor) const;
  size_t drain_own_conntrack(int64_t now_ns);
  void poll_conntrack_counts(int64_t now_ns);
  // Records a conntrack event (`event`) or a dumped entry's counts.
  void note_event(int64_t now_ns, const ConntrackEvent& ev, bool event = true);
  bool counts_conntrack(Proto proto) const;
  void resolve_initiators();
  void resolve_by_cgroup(const FlowId& id, const SocketRecord& rec);
  FlowId initiator_id(const ConntrackEvent& ev) const;
  bool is_local(const IpAddr& addr) const;
  bool is_control(const FlowId& id) const;
  void open_conntrack();

  SnifferOptions options_;
  NetnsLabel netns_;
  SockDiag diag_;
  std::shared_ptr<ProcMap> procs_;
  FlowTable table_;
  Attribution owners_;
  std::unique_ptr<DestroyListener> destroy_;
  std::string destroy_error_;  // why destroy notifications are off
  std::unique_ptr<ConntrackRule> conntrack_rule_;
  std::unique_ptr<ConntrackListener> conntrack_;
  std::unique_ptr<ConntrackTable> conntrack_table_;  // live entries' counters
  ConntrackCounts conntrack_counts_;
  ConntrackLive conntrack_live_;                   // whether a scan's dump is needed
  uint64_t conntrack_lost_seen_ = 0;               // the listener's lost count at the last look
  bool conntrack_events_on_ = true;                // net.netfilter.nf_conntrack_events != 0
  std::unique_ptr<InterfaceAddresses> addresses_;  // for conntrack: which end is local
  Cgroups cgroups_;
  std::string conntrack_error_;  // why conntrack is off or inert
  // Another namespace's Sniffer: its namespace, entered again to remove the
  // conntrack chain there.
  common::FileDescriptor netns_fd_;
  common::FileDescriptor conntrack_poll_;  // epoll over every namespace's conntrack socket
  std::vector<SocketRecord> sockets_;      // reused by every scan
  std::vector<SocketRecord> destroyed_;
  std::vector<ConntrackEvent> events_;
  std::vector<IpAddr> local_addrs_;
  std::vector<std::pair<FlowId, SocketRecord>> pending_sockets_;  // reused by resolve_initiators
  SnifferStats stats_;
  bool walked_ = false;  // a whole /proc walk was done
  int64_t last_whole_walk_ns_ = 0;
  std::map<common::NetnsId, std::unique_ptr<Sniffer>> others_;  // other namespaces
  std::set<common::NetnsId> unusable_;  // namespaces that could not be opened
  size_t user_owned_left_out_ = 0;      // at the last refresh: --user-netns not given
  size_t namespaces_skipped_ = 0;       // at the last refresh: max_namespaces reached
};

}  // namespace nabla::sniffer
