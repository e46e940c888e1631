// The discovery join; see discover.hh.
#include "nabla/campaign/discover.hh"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace nabla::campaign {
namespace {

using nlohmann::json;

const json& field(const json& obj, const char* name, const char* where) {
  if (!obj.is_object() || !obj.contains(name)) {
    throw std::invalid_argument(std::string("flow record: missing ") + where + name);
  }
  return obj.at(name);
}

std::string get_string(const json& obj, const char* name, const char* where) {
  const json& v = field(obj, name, where);
  if (!v.is_string()) {
    throw std::invalid_argument(std::string("flow record: ") + where + name + " must be a string");
  }
  return v.get<std::string>();
}

uint64_t get_uint(const json& obj, const char* name, const char* where, uint64_t max) {
  const json& v = field(obj, name, where);
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    throw std::invalid_argument(std::string("flow record: ") + where + name +
                                " must be an integer >= 0");
  }
  const uint64_t n = v.get<uint64_t>();
  if (n > max) {
    throw std::invalid_argument(std::string("flow record: ") + where + name + " out of range");
  }
  return n;
}

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
  if (with_pid) k += '|' + std::to_string(f.pid);
  return k;
}

bool has_counts(const FlowEnd& f) {
  return f.segments_out + f.segments_in + f.bytes_out + f.bytes_in > 0;
}

LinkEnd local_end(const NodeFlows& node, const FlowEnd& f) {
  return {node.name, f.pid, f.comm, f.local_port, f.pid != 0 || !f.comm.empty()};
}

std::string dot_id(const LinkEnd& e) {
  if (!e.known) return e.host + "/?";
  return e.host + "/" + e.comm + "[" + std::to_string(e.pid) + "]";
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

FlowEnd parse_flow(const json& flow) {
  FlowEnd f;
  f.proto = get_string(flow, "proto", "");
  if (f.proto != "tcp" && f.proto != "udp") {
    throw std::invalid_argument("flow record: proto must be tcp or udp");
  }
  const json& local = field(flow, "local", "");
  const json& remote = field(flow, "remote", "");
  f.local_addr = get_string(local, "addr", "local.");
  f.local_port = static_cast<uint16_t>(get_uint(local, "port", "local.", 65535));
  const json& pid = field(local, "pid", "local.");
  if (!pid.is_number_integer())
    throw std::invalid_argument("flow record: local.pid must be an integer");
  f.pid = pid.get<int32_t>();
  f.comm = get_string(local, "comm", "local.");
  f.remote_addr = get_string(remote, "addr", "remote.");
  f.remote_port = static_cast<uint16_t>(get_uint(remote, "port", "remote.", 65535));
  f.direction = flow.value("direction", std::string("unknown"));
  f.control = flow.value("control", false);
  const json& total = field(flow, "total", "");
  f.segments_out = get_uint(total, "segments_out", "total.", UINT64_MAX);
  f.segments_in = get_uint(total, "segments_in", "total.", UINT64_MAX);
  f.bytes_out = get_uint(total, "bytes_out", "total.", UINT64_MAX);
  f.bytes_in = get_uint(total, "bytes_in", "total.", UINT64_MAX);
  return f;
}

void merge_flows(std::vector<FlowEnd>& flows, const std::vector<FlowEnd>& update) {
  // Hashed by identity so a poll costs O(records), not O(records²).
  std::unordered_map<std::string, size_t> index;
  index.reserve(flows.size() + update.size());
  for (size_t i = 0; i < flows.size(); ++i) index.emplace(identity(flows[i], true), i);
  for (const FlowEnd& u : update) {
    const auto [it, inserted] = index.emplace(identity(u, true), flows.size());
    if (inserted) {
      flows.push_back(u);
    } else {
      flows[it->second] = u;
    }
  }
}

std::vector<Link> join_flows(const std::vector<NodeFlows>& nodes, const JoinOptions& options) {
  // Address → index of the node owning it (the first node to claim it wins;
  // loopback addresses are per node and never enter the map).
  std::unordered_map<std::string, size_t> owner;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& a : nodes[i].addrs) {
      if (!is_loopback(a)) owner.emplace(a, i);
    }
    for (const FlowEnd& f : nodes[i].flows) {
      if (!is_loopback(f.local_addr)) owner.emplace(f.local_addr, i);
    }
  }

  // node index | proto, local end, remote end → that node's records.
  std::unordered_map<std::string, std::vector<const FlowEnd*>> by_end;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const FlowEnd& f : nodes[i].flows) {
      by_end[std::to_string(i) + '|' + identity(f, false)].push_back(&f);
    }
  }

  std::map<LinkKey, Totals> links;
  auto add = [&](const std::string& proto, const LinkEnd& src, const LinkEnd& dst, uint64_t segs,
                 uint64_t bytes, bool counted) {
    Totals& t = links[{proto, src, dst}];
    t.segments += segs;
    t.bytes += bytes;
    t.counted = t.counted || counted;
  };

  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeFlows& node = nodes[i];
    for (const FlowEnd& f : node.flows) {
      if (f.control && !options.include_control) continue;
      // The node holding the other end, if any.
      const NodeFlows* peer_node = nullptr;
      if (is_loopback(f.remote_addr)) {
        peer_node = &node;
      } else if (auto it = owner.find(f.remote_addr); it != owner.end()) {
        peer_node = &nodes[it->second];
      }
      // Its matching record: prefer a known process, then the busiest.
      const FlowEnd* match = nullptr;
      if (peer_node != nullptr) {
        const auto it = by_end.find(
            std::to_string(peer_node - nodes.data()) + '|' +
            flow_key(f.proto, f.remote_addr, f.remote_port, f.local_addr, f.local_port));
        if (it != by_end.end()) {
          for (const FlowEnd* g : it->second) {
            if (match == nullptr || (match->pid == 0 && g->pid != 0) ||
                ((match->pid == 0) == (g->pid == 0) &&
                 g->segments_out + g->segments_in > match->segments_out + match->segments_in)) {
              match = g;
            }
          }
        }
      }
      const LinkEnd here = local_end(node, f);
      LinkEnd there;
      if (match != nullptr) {
        there = local_end(*peer_node, *match);
      } else {
        there.host = peer_node != nullptr ? peer_node->name : f.remote_addr;
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
  }

  std::vector<Link> out;
  for (const auto& [key, t] : links) {
    if (t.counted && t.segments < options.min_messages) continue;
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), t.segments, t.bytes});
  }
  return out;
}

json links_to_json(const std::vector<Link>& links) {
  auto end = [](const LinkEnd& e) {
    return json{
        {"host", e.host}, {"pid", e.pid}, {"comm", e.comm}, {"port", e.port}, {"known", e.known}};
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
        out << "  " << dot_quote(id) << (e->known ? "" : " [style=dashed]") << ";\n";
      }
    }
  }
  for (const Link& l : links) {
    const uint16_t port = l.dst.port != 0 ? l.dst.port : l.src.port;
    out << "  " << dot_quote(dot_id(l.src)) << " -> " << dot_quote(dot_id(l.dst)) << " [label="
        << dot_quote(l.proto + " " + std::to_string(port) + " " + std::to_string(l.segments) +
                     " msgs")
        << "];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace nabla::campaign
