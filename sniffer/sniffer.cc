// One node's sniffer; see sniffer.hh.
#include "nabla/sniffer/sniffer.hh"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "nabla/common/clock.hh"
#include "nabla/common/error.hh"
#include "nabla/common/log.hh"
#include "nabla/common/netns.hh"

namespace nabla::sniffer {
namespace {

NetnsLabel own_namespace_label() {
  NetnsLabel label;
  try {
    label.inode = common::current_netns_id().inode;
  } catch (const std::system_error&) {
    label.inode = 0;  // no /proc: the label stays unknown, the scan works
  }
  return label;
}

}  // namespace

Sniffer::Sniffer(SnifferOptions options)
    : Sniffer(std::move(options), std::make_shared<ProcMap>(), std::make_shared<uint64_t>(0),
              own_namespace_label()) {
  if (!options_.namespaces.only_own()) {
    conntrack_poll_ = common::FileDescriptor(::epoll_create1(EPOLL_CLOEXEC));
    common::check_syscall("epoll_create1", conntrack_poll_.get());
    if (conntrack_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      common::check_syscall(
          "epoll_ctl", ::epoll_ctl(conntrack_poll_.get(), EPOLL_CTL_ADD, conntrack_->fd(), &ev));
    }
  }
  refresh_namespaces();
}

Sniffer::Sniffer(SnifferOptions options, std::shared_ptr<ProcMap> procs,
                 std::shared_ptr<uint64_t> flow_sequence, NetnsLabel netns)
    : options_(std::move(options)),
      netns_(std::move(netns)),
      procs_(std::move(procs)),
      table_(PortRange::read_system(), std::move(flow_sequence)) {
  table_.set_max_flows(options_.max_flows);
  open_sources();
}

Sniffer::~Sniffer() {
  // Another namespace's chain is removed from inside that namespace (the
  // iptables commands run in the caller's).
  if (!conntrack_rule_ || !netns_fd_.valid()) return;
  try {
    common::run_in_netns(netns_fd_.get(), [this] { conntrack_rule_.reset(); });
  } catch (const std::exception& e) {
    common::log_warn("removing ", conntrack_rule_->chain(), " in namespace ", netns_.inode, ": ",
                     e.what());
  }
}

void Sniffer::open_sources() {
  if (options_.destroy_events) {
    try {
      destroy_ = std::make_unique<DestroyListener>();
    } catch (const std::system_error& e) {
      destroy_error_ = e.what();  // reported by sources()
    }
  } else {
    destroy_error_ = "turned off (--no-destroy-events)";
  }
  if (options_.conntrack) {
    open_conntrack();
  } else {
    conntrack_error_ = "turned off (--no-conntrack)";
  }
}

void Sniffer::open_conntrack() {
  if (options_.conntrack_rule) {
    try {
      conntrack_rule_ = std::make_unique<ConntrackRule>();
    } catch (const std::exception& e) {
      conntrack_error_ = std::string("no rule keeps it live (") + e.what() + ")";
    }
  } else {
    conntrack_error_ = "no rule of nabla's keeps it live (--no-conntrack-rule)";
  }
  try {
    conntrack_ = std::make_unique<ConntrackListener>();
    conntrack_table_ = std::make_unique<ConntrackTable>();
    addresses_ = std::make_unique<InterfaceAddresses>();
    // With events turned off in this namespace, only dumps see new entries.
    std::ifstream events("/proc/sys/net/netfilter/nf_conntrack_events");
    int setting = 1;
    conntrack_events_on_ = !(events >> setting) || setting != 0;
  } catch (const std::system_error& e) {
    conntrack_.reset();
    conntrack_table_.reset();
    conntrack_rule_.reset();
    conntrack_error_ = e.what();
  }
}

int Sniffer::conntrack_fd() const {
  if (conntrack_poll_.valid()) return conntrack_poll_.get();
  return conntrack_ ? conntrack_->fd() : -1;
}

int Sniffer::destroy_fd() const {
  return destroy_ ? destroy_->fd() : -1;
}

std::vector<SourceStatus> Sniffer::sources() const {
  std::vector<SourceStatus> out;
  out.push_back({"scan", true, "sock_diag dump of TCP/UDP sockets and /proc owners every scan"});
  if (destroy_) {
    out.push_back({"destroy", true,
                   "sock_diag destroy notifications: final counters of every "
                   "socket closed between scans"});
  } else {
    out.push_back({"destroy", false,
                   destroy_error_ + "; connections that open and close between two scans are "
                                    "seen only through conntrack"});
  }
  if (conntrack_ && conntrack_rule_) {
    out.push_back(
        {"conntrack", true,
         "NEW/DESTROY events, tracking kept on by chain " + conntrack_rule_->chain() +
             (conntrack_rule_->accounting() ? ", nf_conntrack_acct=1; live entries' counters "
                                              "dumped at the scans while one lives"
                                            : ", but nf_conntrack_acct is off: no UDP counts")});
  } else if (conntrack_) {
    out.push_back({"conntrack", false,
                   "subscribed, but " + conntrack_error_ +
                       ": events come only if another rule in this namespace uses conntrack"});
  } else {
    out.push_back({"conntrack", false, conntrack_error_ + "; UDP flows carry no counts"});
  }
  if (!options_.namespaces.only_own()) out.push_back(namespaces_status());
  return out;
}

void Sniffer::scan(int64_t now_ns) {
  const int64_t t0 = common::monotonic_ns();
  refresh_namespaces();
  dump_sockets();
  for (auto& [id, other] : others_) other->dump_sockets();
  read_owners(now_ns);
  account_scan(now_ns);
  for (auto& [id, other] : others_) other->account_scan(now_ns);
  stats_.scans += 1;
  stats_.last_scan_ns = common::monotonic_ns() - t0;
}

size_t Sniffer::unknown_inodes() const {
  size_t unknown = 0;
  auto count = [&](const std::vector<SocketRecord>& sockets) {
    for (const SocketRecord& s : sockets) {
      if (s.inode != 0 && procs_->find(s.inode) == nullptr) ++unknown;
    }
  };
  count(sockets_);
  for (const auto& [id, other] : others_) count(other->sockets_);
  return unknown;
}

void Sniffer::read_owners(int64_t now_ns) {
  // Walking all of /proc costs about what the kernel's socket dump does,
  // and under churn most scans find only sockets of processes already
  // known. So: when every socket's inode is known, no walk (but a whole one
  // at least every kWholeWalkMaxNs, for exec and exits); else the processes
  // that owned sockets at the last walk (a server's new connections); and
  // all of /proc only when sockets are still unknown and the last whole walk
  // is kWholeWalkMinNs old (a new process is named within about a second;
  // at intervals of 1 s and more, every scan that needs a walk gets one).
  constexpr int64_t kWholeWalkMaxNs = 5'000'000'000;
  constexpr int64_t kWholeWalkMinNs = 900'000'000;
  const int64_t since_whole = now_ns - last_whole_walk_ns_;
  bool whole = since_whole >= kWholeWalkMaxNs || !walked_;
  if (!whole && unknown_inodes() > 0) {
    procs_->rescan_known();
    whole = since_whole >= kWholeWalkMinNs && unknown_inodes() > 0;
  }
  if (!whole) return;
  procs_->scan();
  last_whole_walk_ns_ = now_ns;
  walked_ = true;
}

void Sniffer::dump_sockets() {
  // With destroy notifications, a TIME_WAIT leftover's connection was
  // counted when it closed: under churn they outnumber live sockets, and
  // leaving them out of the dump is most of a scan's cost.
  diag_.dump_all(sockets_, /*include_listeners=*/true, /*include_time_wait=*/!destroy_);
}

void Sniffer::account_scan(int64_t now_ns) {
  if (addresses_) addresses_->list(local_addrs_);  // only conntrack asks is_local
  owners_.rebuild(sockets_, *procs_, table_.port_range());
  table_.update(now_ns, sockets_, owners_);
  poll_conntrack_counts(now_ns);
  table_.expire(now_ns, options_.idle_expiry_ns);
  stats_.sockets_last_scan = sockets_.size();
}

bool Sniffer::counts_conntrack(Proto proto) const {
  // Destroy notifications and scans count every local TCP socket exactly:
  // with them, conntrack adds no TCP counts (they would count twice).
  return proto == Proto::kUdp || !destroy_;
}

void Sniffer::poll_conntrack_counts(int64_t now_ns) {
  if (!conntrack_table_) return;
  const bool udp_only = destroy_ != nullptr;
  // Events dropped since the last scan: what lives is known again only
  // from a dump.
  // (conntrack_ and conntrack_table_ are opened and reset together.)
  if (conntrack_->counters().lost != conntrack_lost_seen_) {
    conntrack_lost_seen_ = conntrack_->counters().lost;
    conntrack_live_.lost();
  }
  // A dump walks the kernel's whole table: skipped while the events say no
  // entry of the counted kind lives (ConntrackLive).
  if (conntrack_events_on_ && !conntrack_live_.dump_needed(udp_only)) return;
  events_.clear();
  if (conntrack_table_->dump(udp_only, events_)) conntrack_live_.dumped(events_, udp_only);
  for (const ConntrackEvent& entry : events_) {
    const ConntrackEvent delta = conntrack_counts_.live(entry);
    if (!delta.has_counters || delta.orig_packets + delta.reply_packets == 0) continue;
    note_event(now_ns, delta, /*event=*/false);
  }
  conntrack_counts_.end_dump();
}

size_t Sniffer::drain_destroyed(int64_t now_ns) {
  size_t n = 0;
  for (auto& [id, other] : others_) n += other->drain_destroyed(now_ns);
  if (!destroy_) return n;
  destroyed_.clear();
  n += destroy_->read_available(destroyed_);
  for (const SocketRecord& s : destroyed_) table_.closed(now_ns, s, owners_);
  return n;
}

size_t Sniffer::drain_conntrack(int64_t now_ns) {
  size_t n = drain_own_conntrack(now_ns);
  for (auto& [id, other] : others_) n += other->drain_own_conntrack(now_ns);
  return n;
}

size_t Sniffer::drain_own_conntrack(int64_t now_ns) {
  if (!conntrack_) return 0;
  events_.clear();
  const size_t n = conntrack_->read_available(events_);
  resolve_initiators();
  for (const ConntrackEvent& ev : events_) {
    conntrack_live_.seen(ev);
    if (ev.type == ConntrackEventType::kDestroy && counts_conntrack(ev.proto)) {
      note_event(now_ns, conntrack_counts_.destroyed(ev));
    } else {
      note_event(now_ns, ev);
    }
  }
  return n;
}

void Sniffer::resolve_initiators() {
  // A NEW event arrives with the SYN, while the connecting socket still
  // exists: find it by its exact tuple, and its owner among the processes
  // that owned sockets at the last scan (one partial /proc pass per batch,
  // and only for (process, service) pairs not resolved before).
  bool unknown = false;
  for (const ConntrackEvent& ev : events_) {
    if (ev.type != ConntrackEventType::kNew || !is_local(ev.src)) continue;
    if (owners_.tuple_owner(initiator_id(ev)) != nullptr) continue;
    SocketRecord rec;
    if (!diag_.lookup(ev.proto, ev.src, ev.src_port, ev.dst, ev.dst_port, rec)) continue;
    pending_sockets_.emplace_back(initiator_id(ev), rec);
    unknown = unknown || procs_->find(rec.inode) == nullptr;
  }
  if (unknown) procs_->rescan_known();
  for (const auto& [id, rec] : pending_sockets_) {
    if (const ProcessInfo* owner = procs_->find(rec.inode)) {
      owners_.add_socket(rec.cookie, id, Owner{*owner, rec.cgroup_id});
    } else {
      resolve_by_cgroup(id, rec);
    }
  }
  pending_sockets_.clear();
}

void Sniffer::resolve_by_cgroup(const FlowId& id, const SocketRecord& rec) {
  // A connecting process that owned no socket at the last scan (a client
  // that lives for one connection) is looked for among the processes of the
  // socket's cgroup, when they are few: a container's or a service's.
  constexpr size_t kMaxProcesses = 64;
  const std::string& path = cgroups_.path(rec.cgroup_id);
  const std::vector<pid_t> pids = cgroups_.processes(path);
  if (pids.size() <= kMaxProcesses) procs_->scan_processes(pids);
  if (const ProcessInfo* owner = procs_->find(rec.inode)) {
    owners_.add_socket(rec.cookie, id, Owner{*owner, rec.cgroup_id});
    return;
  }
  if (pids.size() == 1) {
    if (ProcessInfo only = procs_->read_process(pids.front()); only.pid != 0) {
      owners_.add_socket(rec.cookie, id, Owner{std::move(only), rec.cgroup_id},
                         OwnerSource::kCgroup);
      return;
    }
  }
  ProcessInfo gone;
  gone.cgroup = path;
  owners_.add_socket(rec.cookie, id, Owner{std::move(gone), rec.cgroup_id}, OwnerSource::kGone);
}

FlowId Sniffer::initiator_id(const ConntrackEvent& ev) const {
  const PortRange& range = table_.port_range();
  FlowId id;
  id.proto = ev.proto;
  id.local = normalise(ev.src);
  id.local_port = range.fold(ev.src_port);
  id.remote = normalise(ev.dst);
  id.remote_port = range.fold(ev.dst_port);
  return id;
}

bool Sniffer::is_local(const IpAddr& addr) const {
  const IpAddr a = normalise(addr);
  if (a.family == AF_INET && a.bytes[0] == 127) return true;
  return std::find(local_addrs_.begin(), local_addrs_.end(), a) != local_addrs_.end();
}

void Sniffer::note_event(int64_t now_ns, const ConntrackEvent& ev, bool event) {
  const PortRange& range = table_.port_range();
  auto direction_of = [&range](uint16_t local_port, uint16_t remote_port) {
    const bool l = range.contains(local_port);
    const bool r = range.contains(remote_port);
    return l && !r ? Direction::kOutbound : r && !l ? Direction::kInbound : Direction::kUnknown;
  };
  auto record = [&](const IpAddr& local, uint16_t lport, const IpAddr& remote, uint16_t rport,
                    bool initiator) {
    FlowId id;
    id.proto = ev.proto;
    id.local = normalise(local);
    id.local_port = range.fold(lport);
    id.remote = normalise(remote);
    id.remote_port = range.fold(rport);
    const Owner* who = owners_.tuple_owner(id);
    // An unconnected UDP socket is in the listener table under its own
    // port, so a UDP client that sends with sendto() is found there too.
    if (who == nullptr && (!initiator || ev.proto == Proto::kUdp)) {
      who = owners_.listener(ev.proto, local, lport);
    }
    id.pid = who != nullptr ? who->process.pid : 0;
    FlowCounts counts;
    if (ev.has_counters && counts_conntrack(ev.proto)) {
      counts.data_segs_out = initiator ? ev.orig_packets : ev.reply_packets;
      counts.data_segs_in = initiator ? ev.reply_packets : ev.orig_packets;
      counts.bytes_out = initiator ? ev.orig_bytes : ev.reply_bytes;
      counts.bytes_in = initiator ? ev.reply_bytes : ev.orig_bytes;
    }
    table_.note(now_ns, id, direction_of(lport, rport), counts,
                who != nullptr ? who->process.comm : std::string(),
                who != nullptr ? who->process.cgroup : std::string(), event);
  };
  if (is_local(ev.src)) record(ev.src, ev.src_port, ev.dst, ev.dst_port, true);
  if (is_local(ev.dst)) record(ev.dst, ev.dst_port, ev.src, ev.src_port, false);
}

bool Sniffer::is_control(const FlowId& id) const {
  const auto& ports = options_.control_ports;
  return std::find(ports.begin(), ports.end(), id.local_port) != ports.end() ||
         std::find(ports.begin(), ports.end(), id.remote_port) != ports.end();
}

std::vector<ReportedFlow> Sniffer::flows(uint64_t cursor, std::optional<uint64_t> min_messages,
                                         bool include_control, uint64_t& next_cursor) const {
  std::vector<ReportedFlow> out;
  const uint64_t threshold = min_messages.value_or(options_.min_messages);
  append_flows(cursor, threshold, include_control, out, next_cursor);
  for (const auto& [id, other] : others_) {
    other->append_flows(cursor, threshold, include_control, out, next_cursor);
  }
  return out;
}

void Sniffer::append_flows(uint64_t cursor, uint64_t min_messages, bool include_control,
                           std::vector<ReportedFlow>& out, uint64_t& next_cursor) const {
  for (FlowRecord& r : table_.since(cursor, min_messages, next_cursor)) {
    const bool control = is_control(r.id);
    if (control && !include_control) continue;
    out.push_back(ReportedFlow{std::move(r), control, netns_});
  }
}

SnifferStats Sniffer::stats() const {
  SnifferStats s = stats_;
  s.sock_diag = diag_.counters();
  s.conntrack_enabled = conntrack_ != nullptr;
  if (conntrack_) s.conntrack = conntrack_->counters();
  s.destroy_enabled = destroy_ != nullptr;
  if (destroy_) {
    s.destroy = destroy_->counters();
    s.destroy_lost = destroy_->lost();
  }
  s.flows = table_.size();
  s.flows_refused = table_.flows_refused();
  add_namespace_stats(s);
  return s;
}

}  // namespace nabla::sniffer
