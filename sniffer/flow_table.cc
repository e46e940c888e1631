// Flow table and per-interval deltas; see flow_table.hh.
#include "nabla/sniffer/flow_table.hh"

#include <sys/socket.h>

#include <cstring>

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
  ++generation_;
  ++seq_;
  size_t active = 0;
  for (const SocketRecord& s : sockets) {
    // Listeners and unconnected UDP sockets have no peer: not a flow.
    if (s.state == kTcpListen || s.key.remote_port == 0) continue;
    const ProcessInfo* owner = procs != nullptr ? procs->find(s.inode) : nullptr;
    FlowCounts delta;
    auto [prev, is_new] = sockets_.try_emplace(s.cookie);
    prev->second.generation = generation_;
    if (s.has_tcp_info) {
      const TcpCounters& before = prev->second.tcp;
      delta.data_segs_out = minus(s.tcp.data_segs_out, before.data_segs_out);
      delta.data_segs_in = minus(s.tcp.data_segs_in, before.data_segs_in);
      // tcp_info's bytes_acked counts the SYN as one byte (RFC 4898); a new
      // socket's baseline is zero, so take the SYN off here once.
      delta.bytes_out =
          is_new ? minus(s.tcp.bytes_acked, 1) : minus(s.tcp.bytes_acked, before.bytes_acked);
      delta.bytes_in = minus(s.tcp.bytes_received, before.bytes_received);
      prev->second.tcp = s.tcp;
    }
    const bool traffic = delta.messages() > 0 || (is_new && !s.has_tcp_info);
    const FlowId id = flow_id(s, owner != nullptr ? owner->pid : 0);
    auto [it, created] = flows_.try_emplace(id);
    FlowRecord& flow = it->second;
    if (created) {
      flow.id = id;
      flow.first_seen_ns = now_ns;
      flow.direction = direction(s);
    }
    if (owner != nullptr && flow.comm != owner->comm) flow.comm = owner->comm;
    if (flow.updated_seq != seq_) {
      // First socket of this flow in this update: reset the interval view.
      flow.last_interval = FlowCounts{};
      flow.sockets = 0;
    }
    flow.sockets += 1;
    flow.last_interval += delta;
    flow.total += delta;
    if (traffic || created) {
      if (traffic) flow.last_seen_ns = now_ns;
      if (flow.updated_seq != seq_) ++active;
      flow.updated_seq = seq_;
    }
  }
  std::erase_if(sockets_, [this](const auto& e) { return e.second.generation != generation_; });
  return active;
}

void FlowTable::note(int64_t now_ns, const FlowId& id, Direction direction,
                     const FlowCounts& counts, const std::string& comm) {
  ++seq_;
  auto [it, created] = flows_.try_emplace(id);
  FlowRecord& flow = it->second;
  if (created) {
    flow.id = id;
    flow.first_seen_ns = now_ns;
    flow.direction = direction;
    flow.comm = comm;
  }
  flow.total += counts;
  flow.conntrack_events += 1;
  flow.last_seen_ns = now_ns;
  flow.updated_seq = seq_;
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
  next_cursor = seq_;
  return out;
}

void FlowTable::expire(int64_t now_ns, int64_t idle_ns) {
  std::erase_if(flows_, [&](const auto& e) {
    const int64_t last =
        e.second.last_seen_ns != 0 ? e.second.last_seen_ns : e.second.first_seen_ns;
    return now_ns - last > idle_ns;
  });
}

}  // namespace nabla::sniffer
