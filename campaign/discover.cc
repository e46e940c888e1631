// The discovery join; see discover.hh.
#include "nabla/campaign/discover.hh"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "nabla/common/graphviz.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;

bool is_loopback(const std::string& addr) {
  return addr.rfind("127.", 0) == 0 || addr == "::1";
}

using LinkKey = std::tuple<std::string, LinkEnd, LinkEnd>;

struct Totals {
  uint64_t segments = 0;
  uint64_t bytes = 0;
  bool counted = false;  // some record carried counters (else: only seen, not counted)
};

std::string flow_key(const std::string& proto, const std::string& local_addr, uint16_t local_port,
                     const std::string& remote_addr, uint16_t remote_port) {
  return proto + '|' + local_addr + '|' + std::to_string(local_port) + '|' + remote_addr + '|' +
         std::to_string(remote_port);
}

// A record's identity: its two ends, and with `with_pid` its process.
std::string identity(const FlowEnd& f, bool with_pid) {
  std::string k = flow_key(f.proto, f.local_addr, f.local_port, f.remote_addr, f.remote_port);
  if (with_pid) k += '|' + std::to_string(f.pid) + '|' + std::to_string(f.netns.inode);
  return k;
}

bool has_counts(const FlowEnd& f) {
  return f.segments_out + f.segments_in + f.bytes_out + f.bytes_in > 0;
}

LinkEnd local_end(const NodeFlows& node, const FlowEnd& f) {
  return {node.name,   f.pid,         f.comm,       f.local_port,     f.pid != 0 || !f.comm.empty(),
          f.netns.own, f.netns.inode, f.netns.name, f.netns.container};
}

std::string dot_id(const LinkEnd& e) {
  const std::string tag = netns_tag(e);
  const std::string where = tag.empty() ? "" : "@" + tag;
  if (!e.known) return e.host + "/?" + where;
  return e.host + "/" + e.comm + "[" + std::to_string(e.pid) + "]" + where;
}

}  // namespace

std::string netns_tag(const LinkEnd& end) {
  if (end.own_netns) return "";
  if (!end.container.empty()) return "ctr-" + end.container;
  if (!end.netns_name.empty()) return end.netns_name;
  return "netns-" + std::to_string(end.netns_inode);
}

FlowEnd flow_end_of(const common::protocol::Flow& f) {
  FlowEnd e;
  e.proto = std::string(common::protocol::to_string(f.proto));
  e.local_addr = f.local_addr;
  e.local_port = f.local_port;
  e.pid = f.pid;
  e.comm = f.comm;
  e.remote_addr = f.remote_addr;
  e.remote_port = f.remote_port;
  e.direction = std::string(common::protocol::to_string(f.direction));
  e.control = f.control;
  e.segments_out = f.total.segments_out;
  e.segments_in = f.total.segments_in;
  e.bytes_out = f.total.bytes_out;
  e.bytes_in = f.total.bytes_in;
  e.netns = f.netns;
  e.last_seen_ns = f.last_seen_ns;
  return e;
}

bool flow_in_node_namespace(const FlowEnd& flow, const std::optional<std::string>& netns,
                            const std::optional<std::string>& container) {
  const std::string& theirs = flow.netns.container;
  if (container) {
    return !theirs.empty() &&
           (container->rfind(theirs, 0) == 0 || theirs.rfind(*container, 0) == 0);
  }
  const bool named = netns && netns->front() != '/' && netns->rfind("pid:", 0) != 0;
  return !named || flow.netns.name == *netns;
}

FlowEnd parse_flow(const json& flow) {
  return flow_end_of(common::protocol::Flow::from_json(flow));
}

void merge_flows(std::vector<FlowEnd>& flows, const std::vector<FlowEnd>& update) {
  // Hashed by identity so a poll costs O(records), not O(records²).
  std::unordered_map<std::string, size_t> index;
  index.reserve(flows.size() + update.size());
  for (size_t i = 0; i < flows.size(); ++i) index.emplace(identity(flows[i], true), i);
  std::unordered_set<std::string> owned_tuples;
  for (const FlowEnd& u : update) {
    const auto [it, inserted] = index.emplace(identity(u, true), flows.size());
    if (inserted) {
      flows.push_back(u);
    } else {
      flows[it->second] = u;
    }
    if (u.pid != 0) owned_tuples.insert(identity(u, false));
  }
  // The sniffer folds a tuple's pid-0 record into its owner's once the owner
  // is known, and reports it no more: the owner's totals now hold its counts.
  std::erase_if(flows, [&](const FlowEnd& f) {
    return f.pid == 0 && owned_tuples.contains(identity(f, false));
  });
}

namespace {

// The join of join_flows: every node's records, indexed once, each record
// then adding its link(s) with the peer record of its other end.
class FlowJoin {
 public:
  FlowJoin(const std::vector<NodeFlows>& nodes, const JoinOptions& options)
      : nodes_(nodes), options_(options) {
    index_addresses();
    index_ends();
  }

  std::vector<Link> links() {
    for (const NodeFlows& node : nodes_) {
      for (const FlowEnd& f : node.flows) {
        if (f.control && !options_.include_control) continue;
        add_record(node, f);
      }
    }
    std::vector<Link> out;
    for (const auto& [key, t] : links_) {
      if (t.counted && t.segments < options_.min_messages) continue;
      out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), t.segments, t.bytes});
    }
    return out;
  }

 private:
  // Address → index of the node owning it (the first node to claim it wins;
  // loopback addresses are per node and never enter the map).
  void index_addresses() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const std::string& a : nodes_[i].addrs) {
        if (!is_loopback(a)) owner_.emplace(a, i);
      }
      for (const FlowEnd& f : nodes_[i].flows) {
        if (!is_loopback(f.local_addr)) owner_.emplace(f.local_addr, i);
      }
    }
  }

  // node index | proto, local end, remote end → that node's records.
  void index_ends() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const FlowEnd& f : nodes_[i].flows) {
        by_end_[std::to_string(i) + '|' + identity(f, false)].push_back(&f);
      }
    }
  }

  // The node holding the other end of `f`, if any.
  const NodeFlows* peer_node_of(const NodeFlows& node, const FlowEnd& f) const {
    if (is_loopback(f.remote_addr)) return &node;
    if (auto it = owner_.find(f.remote_addr); it != owner_.end()) return &nodes_[it->second];
    return nullptr;
  }

  // The peer's matching record: prefer a known process, then the busiest.
  const FlowEnd* peer_record(const NodeFlows& peer, const FlowEnd& f) const {
    const auto it =
        by_end_.find(std::to_string(&peer - nodes_.data()) + '|' +
                     flow_key(f.proto, f.remote_addr, f.remote_port, f.local_addr, f.local_port));
    if (it == by_end_.end()) return nullptr;
    const FlowEnd* match = nullptr;
    for (const FlowEnd* g : it->second) {
      if (match == nullptr || (match->pid == 0 && g->pid != 0) ||
          ((match->pid == 0) == (g->pid == 0) &&
           g->segments_out + g->segments_in > match->segments_out + match->segments_in)) {
        match = g;
      }
    }
    return match;
  }

  void add_record(const NodeFlows& node, const FlowEnd& f) {
    const NodeFlows* peer = peer_node_of(node, f);
    const FlowEnd* match = peer != nullptr ? peer_record(*peer, f) : nullptr;
    const LinkEnd here = local_end(node, f);
    LinkEnd there;
    if (match != nullptr) {
      there = local_end(*peer, *match);
    } else {
      there.host = peer != nullptr ? peer->name : f.remote_addr;
      there.port = f.remote_port;
    }
    if (has_counts(f)) {
      add(f.proto, here, there, f.segments_out, f.bytes_out, true);
      if (match == nullptr || !has_counts(*match)) {
        add(f.proto, there, here, f.segments_in, f.bytes_in, true);
      }
    } else if (match != nullptr && has_counts(*match)) {
      // The peer's counted record yields both directions.
    } else if (f.direction == "inbound") {
      if (match == nullptr) add(f.proto, there, here, 0, 0, false);
    } else {
      add(f.proto, here, there, 0, 0, false);
    }
  }

  void add(const std::string& proto, const LinkEnd& src, const LinkEnd& dst, uint64_t segs,
           uint64_t bytes, bool counted) {
    Totals& t = links_[{proto, src, dst}];
    t.segments += segs;
    t.bytes += bytes;
    t.counted = t.counted || counted;
  }

  const std::vector<NodeFlows>& nodes_;
  const JoinOptions& options_;
  std::unordered_map<std::string, size_t> owner_;
  std::unordered_map<std::string, std::vector<const FlowEnd*>> by_end_;
  std::map<LinkKey, Totals> links_;
};

}  // namespace

std::vector<Link> join_flows(const std::vector<NodeFlows>& nodes, const JoinOptions& options) {
  return FlowJoin(nodes, options).links();
}

json links_to_json(const std::vector<Link>& links) {
  auto end = [](const LinkEnd& e) {
    json out{
        {"host", e.host}, {"pid", e.pid}, {"comm", e.comm}, {"port", e.port}, {"known", e.known}};
    if (!e.own_netns) {
      out["netns"] = {{"inode", e.netns_inode}, {"name", e.netns_name}, {"container", e.container}};
    }
    return out;
  };
  json arr = json::array();
  for (const Link& l : links) {
    arr.push_back({{"proto", l.proto},
                   {"src", end(l.src)},
                   {"dst", end(l.dst)},
                   {"segments", l.segments},
                   {"bytes", l.bytes}});
  }
  return arr;
}

std::string links_to_dot(const std::vector<Link>& links) {
  std::ostringstream out;
  out << "digraph nabla_links {\n  rankdir=LR;\n  node [shape=box];\n";
  std::map<std::string, bool> seen;
  for (const Link& l : links) {
    for (const LinkEnd* e : {&l.src, &l.dst}) {
      const std::string id = dot_id(*e);
      if (seen.emplace(id, true).second) {
        out << "  " << common::dot_quote(id) << (e->known ? "" : " [style=dashed]") << ";\n";
      }
    }
  }
  for (const Link& l : links) {
    const uint16_t port = l.dst.port != 0 ? l.dst.port : l.src.port;
    out << "  " << common::dot_quote(dot_id(l.src)) << " -> " << common::dot_quote(dot_id(l.dst))
        << " [label="
        << common::dot_quote(l.proto + " " + std::to_string(port) + " " +
                             std::to_string(l.segments) + " msgs")
        << "];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace nabla::campaign
