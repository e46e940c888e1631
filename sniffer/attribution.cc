// Flow owners for sockets that are gone; see attribution.hh.
#include "nabla/sniffer/attribution.hh"

#include <sys/socket.h>

#include <cstring>

namespace nabla::sniffer {
namespace {

IpAddr wildcard(uint8_t family) {
  IpAddr any;
  any.family = family;
  return any;
}

}  // namespace

size_t Attribution::ListenKeyHash::operator()(const ListenKey& key) const noexcept {
  uint64_t lo = 0;
  uint64_t hi = 0;
  std::memcpy(&lo, key.addr.bytes, 8);
  std::memcpy(&hi, key.addr.bytes + 8, 8);
  const uint64_t h = (lo * 0x9e3779b97f4a7c15ULL) ^ (hi + 0x7f4a7c15ULL) ^
                     (uint64_t{key.port} << 40) ^ (uint64_t{key.addr.family} << 32) ^
                     static_cast<uint64_t>(key.proto);
  return static_cast<size_t>(h);
}

size_t Attribution::intern(const Owner& owner) {
  if (owner.process.pid == 0) {  // an owner gone: one entry each, by its cgroup
    owners_.push_back(owner);
    return owners_.size() - 1;
  }
  const auto [it, added] = owner_index_.try_emplace(owner.process.pid, owners_.size());
  if (added) owners_.push_back(owner);
  return it->second;
}

void Attribution::add_listener(Proto proto, const IpAddr& addr, uint16_t port, const Owner& owner) {
  listeners_.try_emplace(ListenKey{proto, normalise(addr), port}, intern(owner));
}

void Attribution::add_socket(uint64_t cookie, const FlowId& folded_tuple, const Owner& owner,
                             OwnerSource source) {
  const size_t index = intern(owner);
  cookies_.try_emplace(cookie, CookieOwner{index, source});
  // Only a process tells whose the tuple's other sockets are.
  if (owner.process.pid != 0) tuples_.try_emplace(folded_tuple, index);
}

void Attribution::add_accepted(Proto proto, const IpAddr& addr, uint16_t port, const Owner& owner) {
  if (const ListenKey* key = listen_key(proto, addr, port))
    accepting_.insert_or_assign(*key, owner);
}

void Attribution::rebuild(std::span<const SocketRecord> sockets, const ProcMap& procs,
                          const PortRange& range) {
  std::swap(previous_owners_, owners_);
  std::swap(previous_cookies_, cookies_);
  owners_.clear();
  owner_index_.clear();
  listeners_.clear();
  cookies_.clear();
  tuples_.clear();
  auto is_listener = [](const SocketRecord& s) {
    return s.state == kTcpListen || s.key.remote_port == 0;
  };
  for (const SocketRecord& s : sockets) {
    const ProcessInfo* process = procs.find(s.inode);
    if (process == nullptr || !is_listener(s) || s.key.local_port == 0) continue;
    add_listener(s.key.proto, s.key.local, s.key.local_port, Owner{*process, s.cgroup_id});
  }
  // Accepting processes of listeners that are gone, or that exited, go.
  std::erase_if(accepting_, [&](const auto& e) {
    return listeners_.count(e.first) == 0 || !procs.has_process(e.second.process.pid);
  });
  FlowTable folding(range);
  for (const SocketRecord& s : sockets) {
    const ProcessInfo* process = procs.find(s.inode);
    if (process == nullptr || is_listener(s)) continue;
    const Owner owner{*process, s.cgroup_id};
    add_socket(s.cookie, folding.flow_id(s, 0), owner);
    add_accepted(s.key.proto, s.key.local, s.key.local_port, owner);
  }
}

Attributed Attribution::by_cookie(uint64_t cookie) const {
  if (const auto it = cookies_.find(cookie); it != cookies_.end()) {
    return {&owners_[it->second.index], it->second.source};
  }
  if (const auto it = previous_cookies_.find(cookie); it != previous_cookies_.end()) {
    return {&previous_owners_[it->second.index], it->second.source};
  }
  return {};
}

const Attribution::ListenKey* Attribution::listen_key(Proto proto, const IpAddr& addr,
                                                      uint16_t port) const {
  const IpAddr local = normalise(addr);
  auto it = listeners_.find(ListenKey{proto, local, port});
  if (it == listeners_.end()) it = listeners_.find(ListenKey{proto, wildcard(local.family), port});
  // A dual-stack listener ([::]) also accepts IPv4 connections.
  if (it == listeners_.end() && local.family == AF_INET) {
    it = listeners_.find(ListenKey{proto, wildcard(AF_INET6), port});
  }
  return it == listeners_.end() ? nullptr : &it->first;
}

const Owner* Attribution::listener(Proto proto, const IpAddr& addr, uint16_t port) const {
  const ListenKey* key = listen_key(proto, addr, port);
  if (key == nullptr) return nullptr;
  if (const auto a = accepting_.find(*key); a != accepting_.end()) return &a->second;
  return &owners_[listeners_.at(*key)];
}

const Owner* Attribution::tuple_owner(const FlowId& folded_tuple) const {
  const auto it = tuples_.find(folded_tuple);
  return it == tuples_.end() ? nullptr : &owners_[it->second];
}

Attributed Attribution::resolve(const SocketRecord& socket, const FlowId& folded_tuple) const {
  if (const Attributed a = by_cookie(socket.cookie); a.owner != nullptr) return a;
  if (const Owner* o = listener(socket.key.proto, socket.key.local, socket.key.local_port)) {
    return {o, OwnerSource::kListener};
  }
  if (const Owner* o = tuple_owner(folded_tuple)) return {o, OwnerSource::kTuple};
  return {};
}

}  // namespace nabla::sniffer
