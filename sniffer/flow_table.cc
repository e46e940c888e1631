// Flow table and per-interval deltas; see flow_table.hh.
#include "nabla/sniffer/flow_table.hh"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "nabla/common/log.hh"
#include "nabla/sniffer/attribution.hh"

namespace nabla::sniffer {
namespace {

uint64_t minus(uint64_t now, uint64_t before) {
  return now >= before ? now - before : 0;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t hash_addr(uint64_t h, const IpAddr& a) {
  uint64_t lo = 0;
  uint64_t hi = 0;
  std::memcpy(&lo, a.bytes, 8);
  std::memcpy(&hi, a.bytes + 8, 8);
  return mix(mix(mix(h, a.family), lo), hi);
}

// Payload bytes sent once each, where the kernel reports it.
uint64_t unique_bytes_sent(const TcpCounters& c) {
  return minus(c.bytes_sent, c.bytes_retrans);
}

// What a socket counted since `before` (a zero baseline when it is new).
FlowCounts tcp_delta(const TcpCounters& now, const TcpCounters& before, bool is_new) {
  FlowCounts delta;
  delta.data_segs_out = minus(now.data_segs_out, before.data_segs_out);
  delta.data_segs_in = minus(now.data_segs_in, before.data_segs_in);
  if (now.has_bytes_sent) {
    delta.bytes_out = minus(unique_bytes_sent(now), is_new ? 0 : unique_bytes_sent(before));
  } else {
    // tcp_info's bytes_acked counts an active opener's SYN as one byte
    // (RFC 4898); a new socket's baseline is zero, so take it off once.
    delta.bytes_out =
        is_new ? minus(now.bytes_acked, 1) : minus(now.bytes_acked, before.bytes_acked);
  }
  delta.bytes_in = minus(now.bytes_received, before.bytes_received);
  return delta;
}

// A socket's exact tuple (no folding) as a FlowId, to reuse its hash.
FlowId exact_id(const SocketRecord& s) {
  return FlowId{s.key.proto,       normalise(s.key.local),
                s.key.local_port,  normalise(s.key.remote),
                s.key.remote_port, 0};
}

}  // namespace

FlowCounts& FlowCounts::operator+=(const FlowCounts& o) {
  data_segs_out += o.data_segs_out;
  data_segs_in += o.data_segs_in;
  bytes_out += o.bytes_out;
  bytes_in += o.bytes_in;
  return *this;
}

size_t FlowIdHash::operator()(const FlowId& id) const noexcept {
  uint64_t h = static_cast<uint64_t>(id.proto);
  h = hash_addr(h, id.local);
  h = mix(h, id.local_port);
  h = hash_addr(h, id.remote);
  h = mix(h, id.remote_port);
  h = mix(h, static_cast<uint32_t>(id.pid));
  return static_cast<size_t>(h);
}

IpAddr normalise(const IpAddr& addr) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (addr.family != AF_INET6 || std::memcmp(addr.bytes, kMapped, 12) != 0) return addr;
  IpAddr v4;
  v4.family = AF_INET;
  std::memcpy(v4.bytes, addr.bytes + 12, 4);
  return v4;
}

FlowId FlowTable::flow_id(const SocketRecord& socket, int32_t pid) const {
  FlowId id;
  id.proto = socket.key.proto;
  id.local = normalise(socket.key.local);
  id.remote = normalise(socket.key.remote);
  id.local_port = range_.fold(socket.key.local_port);
  id.remote_port = range_.fold(socket.key.remote_port);
  id.pid = pid;
  return id;
}

Direction FlowTable::direction(const SocketRecord& socket) const {
  const bool local_eph = range_.contains(socket.key.local_port);
  const bool remote_eph = range_.contains(socket.key.remote_port);
  if (local_eph && !remote_eph) return Direction::kOutbound;
  if (remote_eph && !local_eph) return Direction::kInbound;
  return Direction::kUnknown;
}

size_t FlowTable::update(int64_t now_ns, std::span<const SocketRecord> sockets,
                         const ProcMap* procs) {
  Attribution owners;
  if (procs != nullptr) owners.rebuild(sockets, *procs, range_);
  return update(now_ns, sockets, owners);
}

void FlowTable::absorb(FlowRecord& into, const FlowId& from) {
  const auto it = flows_.find(from);
  if (it == flows_.end() || &it->second == &into) return;
  const FlowRecord& u = it->second;
  into.total += u.total;
  into.conntrack_events += u.conntrack_events;
  into.closed_sockets += u.closed_sockets;
  into.first_seen_ns = std::min(into.first_seen_ns, u.first_seen_ns);
  into.last_seen_ns = std::max(into.last_seen_ns, u.last_seen_ns);
  into.updated_seq = *seq_;
  flows_.erase(it);
}

FlowRecord& FlowTable::owned_flow(int64_t now_ns, FlowId id, const Attributed& who, Direction dir,
                                  bool& created) {
  FlowId tuple = id;
  tuple.pid = 0;
  const bool certain = who.source == OwnerSource::kSocket;
  // The tuple's flow so far (under its last known pid).
  FlowId before = tuple;
  bool same_program = false;  // it is labelled with who's program
  bool guessed_before = false;
  if (const auto known = tuple_pid_.find(tuple); known != tuple_pid_.end()) {
    before.pid = known->second;
    const auto it = flows_.find(before);
    same_program =
        it != flows_.end() && who.owner != nullptr && it->second.comm == who.owner->process.comm;
    guessed_before = same_program && it->second.owner_source != OwnerSource::kSocket;
    // An unknown owner, or a guessed one of the same program (a prefork
    // server's master for its worker), stays with the tuple's flow.
    if (id.pid == 0 || (!certain && same_program)) id.pid = known->second;
  }
  if (flows_.size() >= max_flows_ && flows_.find(id) == flows_.end()) {
    ++flows_refused_;
    if ((flows_refused_ & (flows_refused_ - 1)) == 0) {  // the 1st, 2nd, 4th, ...
      common::log_warn("flow table full at ", max_flows_,
                       " flows (--max-flows): a new flow is not ", "recorded (", flows_refused_,
                       " so far)");
    }
    created = false;
    discarded_ = FlowRecord{};
    discarded_.id = id;
    return discarded_;
  }
  if (id.pid != 0) tuple_pid_.insert_or_assign(tuple, id.pid);
  auto [it, added] = flows_.try_emplace(id);
  created = added;
  FlowRecord& flow = it->second;
  if (added) {
    flow.id = id;
    flow.first_seen_ns = now_ns;
    flow.direction = dir;
  }
  if (id.pid == 0) return flow;
  // What was counted before the owner was known joins the owner's flow: the
  // pid-0 flow, and a guessed owner's of the same program.
  absorb(flow, tuple);
  if (certain && guessed_before && before.pid != id.pid) absorb(flow, before);
  return flow;
}

FlowRecord& FlowTable::flow_for(int64_t now_ns, const SocketRecord& socket,
                                const Attribution& owners, bool& created) {
  const Attributed who = owners.resolve(socket, flow_id(socket, 0));
  FlowRecord& flow =
      owned_flow(now_ns, flow_id(socket, who.owner != nullptr ? who.owner->process.pid : 0), who,
                 direction(socket), created);
  // An owner labels the flow it names (a gone owner, pid 0, does not
  // relabel the flow of a process the tuple already had).
  if (who.owner != nullptr && who.owner->process.pid == flow.id.pid) {
    const ProcessInfo& p = who.owner->process;
    if (flow.comm != p.comm) flow.comm = p.comm;
    if (flow.cgroup != p.cgroup) flow.cgroup = p.cgroup;
    flow.owner_source = who.source;
  } else if (created && flow.id.pid != 0) {
    flow.owner_source = OwnerSource::kTuple;
  }
  const uint64_t cgroup_id = socket.cgroup_id != 0  ? socket.cgroup_id
                             : who.owner != nullptr ? who.owner->cgroup_id
                                                    : 0;
  if (cgroup_id != 0) flow.cgroup_id = cgroup_id;
  return flow;
}

size_t FlowTable::update(int64_t now_ns, std::span<const SocketRecord> sockets,
                         const Attribution& owners) {
  ++generation_;
  ++*seq_;
  size_t active = 0;
  for (const SocketRecord& s : sockets) {
    // Listeners and unconnected UDP sockets have no peer: not a flow.
    if (s.state == kTcpListen || s.key.remote_port == 0) continue;
    auto [prev, is_new] = sockets_.try_emplace(s.cookie);
    prev->second.generation = generation_;
    // A TIME_WAIT leftover of a socket whose close was already counted. Its
    // cookie may differ (the kernel gives one out only when asked, and the
    // notification asks after the leftover was made), so the exact tuple
    // identifies it too.
    if (is_new && s.state == kTcpTimeWait) {
      if (const auto c = closed_tuples_.find(exact_id(s)); c != closed_tuples_.end()) {
        c->second = generation_;
        prev->second.closed = true;
      }
    }
    if (prev->second.closed) continue;
    FlowCounts delta;
    if (s.has_tcp_info) {
      delta = tcp_delta(s.tcp, prev->second.tcp, is_new);
      prev->second.tcp = s.tcp;
    }
    const bool traffic = delta.messages() > 0 || (is_new && !s.has_tcp_info);
    bool created = false;
    FlowRecord& flow = flow_for(now_ns, s, owners, created);
    if (flow.updated_seq != *seq_) {
      // First socket of this flow in this update: reset the interval view.
      flow.last_interval = FlowCounts{};
      flow.sockets = 0;
    }
    flow.sockets += 1;
    flow.last_interval += delta;
    flow.total += delta;
    if (traffic || created) {
      if (traffic) flow.last_seen_ns = now_ns;
      if (flow.updated_seq != *seq_) ++active;
      flow.updated_seq = *seq_;
    }
  }
  // Sockets missing from this scan and the one before are forgotten; one
  // scan's grace lets a late destroy notification find its baseline.
  std::erase_if(sockets_, [this](const auto& e) { return e.second.generation + 1 < generation_; });
  std::erase_if(closed_tuples_, [this](const auto& e) { return e.second + 1 < generation_; });
  return active;
}

void FlowTable::closed(int64_t now_ns, const SocketRecord& socket, const Attribution& owners) {
  if (socket.state == kTcpListen || socket.key.remote_port == 0) return;
  auto [prev, is_new] = sockets_.try_emplace(socket.cookie);
  if (prev->second.closed) return;  // a duplicate notification
  prev->second.closed = true;
  prev->second.generation = generation_;
  if (socket.key.proto == Proto::kTcp)
    closed_tuples_.insert_or_assign(exact_id(socket), generation_);
  FlowCounts delta;
  if (socket.has_tcp_info) delta = tcp_delta(socket.tcp, prev->second.tcp, is_new);
  prev->second.tcp = socket.tcp;
  ++*seq_;
  bool created = false;
  FlowRecord& flow = flow_for(now_ns, socket, owners, created);
  // Interval counts belong to scans; a close between scans adds to the
  // total only.
  flow.total += delta;
  flow.closed_sockets += 1;
  // A socket no scan saw proves a flow even without counters (UDP).
  if (delta.messages() > 0 || is_new) flow.last_seen_ns = now_ns;
  flow.updated_seq = *seq_;
}

void FlowTable::note(int64_t now_ns, const FlowId& id, Direction direction,
                     const FlowCounts& counts, const std::string& comm, const std::string& cgroup,
                     bool event) {
  ++*seq_;
  bool created = false;
  FlowRecord& flow = owned_flow(now_ns, id, Attributed{}, direction, created);
  if (created) {
    flow.comm = comm;
    flow.cgroup = cgroup;
  }
  flow.total += counts;
  if (event) flow.conntrack_events += 1;
  flow.last_seen_ns = now_ns;
  flow.updated_seq = *seq_;
}

std::vector<FlowRecord> FlowTable::since(uint64_t cursor, uint64_t min_messages,
                                         uint64_t& next_cursor) const {
  std::vector<FlowRecord> out;
  for (const auto& [id, flow] : flows_) {
    if (flow.updated_seq <= cursor) continue;
    // Segment counts decide when there are any; UDP sockets and conntrack
    // events without accounting prove a flow exists but not how busy it is.
    const uint64_t messages = flow.total.messages();
    bool pass = false;
    if (messages > 0) {
      pass = messages >= min_messages;
    } else if (id.proto == Proto::kUdp || flow.conntrack_events > 0) {
      pass = min_messages <= 1;
    } else {
      pass = min_messages == 0;  // e.g. TIME_WAIT leftovers: no counters at all
    }
    if (!pass) continue;
    out.push_back(flow);
  }
  next_cursor = *seq_;
  return out;
}

void FlowTable::expire(int64_t now_ns, int64_t idle_ns) {
  std::erase_if(flows_, [&](const auto& e) {
    const int64_t last =
        e.second.last_seen_ns != 0 ? e.second.last_seen_ns : e.second.first_seen_ns;
    return now_ns - last > idle_ns;
  });
  std::erase_if(tuple_pid_, [this](const auto& e) {
    FlowId id = e.first;
    id.pid = e.second;
    return flows_.count(id) == 0;
  });
}

}  // namespace nabla::sniffer
