// One node's sniffer; see sniffer.hh.
#include "nabla/sniffer/sniffer.hh"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "nabla/common/clock.hh"
#include "nabla/common/netns.hh"

namespace nabla::sniffer {
namespace {

void interface_addresses(std::vector<IpAddr>& out) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    IpAddr a;
    if (i->ifa_addr->sa_family == AF_INET) {
      a.family = AF_INET;
      std::memcpy(a.bytes, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      a.family = AF_INET6;
      std::memcpy(a.bytes, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    out.push_back(a);
  }
  ::freeifaddrs(list);
}

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
  refresh_namespaces();
}

Sniffer::Sniffer(SnifferOptions options, std::shared_ptr<ProcMap> procs,
                 std::shared_ptr<uint64_t> flow_sequence, NetnsLabel netns)
    : options_(std::move(options)),
      netns_(std::move(netns)),
      procs_(std::move(procs)),
      table_(PortRange::read_system(), std::move(flow_sequence)) {
  open_sources();
}

Sniffer::~Sniffer() = default;

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
  } catch (const std::system_error& e) {
    conntrack_rule_.reset();
    conntrack_error_ = e.what();
  }
}

int Sniffer::conntrack_fd() const {
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
    out.push_back({"conntrack", true,
                   "NEW/DESTROY events, tracking kept on by chain " + conntrack_rule_->chain() +
                       (conntrack_rule_->accounting() ? ", nf_conntrack_acct=1"
                                                      : ", but nf_conntrack_acct is off: no "
                                                        "UDP counts")});
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
  procs_->scan();
  account_scan(now_ns);
  for (auto& [id, other] : others_) other->account_scan(now_ns);
  stats_.scans += 1;
  stats_.last_scan_ns = common::monotonic_ns() - t0;
}

void Sniffer::dump_sockets() {
  // With destroy notifications, a TIME_WAIT leftover's connection was
  // counted when it closed: under churn they outnumber live sockets, and
  // leaving them out of the dump is most of a scan's cost.
  diag_.dump_all(sockets_, /*include_listeners=*/true, /*include_time_wait=*/!destroy_);
}

void Sniffer::account_scan(int64_t now_ns) {
  local_addrs_.clear();
  if (conntrack_) interface_addresses(local_addrs_);  // only conntrack events ask is_local
  owners_.rebuild(sockets_, *procs_, table_.port_range());
  table_.update(now_ns, sockets_, owners_);
  table_.expire(now_ns, options_.idle_expiry_ns);
  stats_.sockets_last_scan = sockets_.size();
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
  if (!conntrack_) return 0;
  events_.clear();
  const size_t n = conntrack_->read_available(events_);
  resolve_initiators();
  for (const ConntrackEvent& ev : events_) note_event(now_ns, ev);
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
    }
  }
  pending_sockets_.clear();
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

void Sniffer::note_event(int64_t now_ns, const ConntrackEvent& ev) {
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
    if (who == nullptr && !initiator) who = owners_.listener(ev.proto, local, lport);
    id.pid = who != nullptr ? who->process.pid : 0;
    FlowCounts counts;
    // Destroy notifications count every local TCP socket exactly: with them,
    // a TCP event marks its flow but adds no counts (they would count twice).
    if (ev.has_counters && !(destroy_ && ev.proto == Proto::kTcp)) {
      counts.data_segs_out = initiator ? ev.orig_packets : ev.reply_packets;
      counts.data_segs_in = initiator ? ev.reply_packets : ev.orig_packets;
      counts.bytes_out = initiator ? ev.orig_bytes : ev.reply_bytes;
      counts.bytes_in = initiator ? ev.reply_bytes : ev.orig_bytes;
    }
    table_.note(now_ns, id, direction_of(lport, rport), counts,
                who != nullptr ? who->process.comm : std::string(),
                who != nullptr ? who->process.cgroup : std::string());
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
  add_namespace_stats(s);
  return s;
}

}  // namespace nabla::sniffer
