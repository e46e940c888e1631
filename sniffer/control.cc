// Control methods; see control.hh.
#include "nabla/sniffer/control.hh"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <compare>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "nabla/common/node_facts.hh"
#include "nabla/common/protocol/no_params.hh"
#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/version.hh"

namespace nabla::sniffer {
namespace {

namespace protocol = common::protocol;

protocol::FlowProto proto_of(Proto p) {
  return p == Proto::kTcp ? protocol::FlowProto::kTcp : protocol::FlowProto::kUdp;
}

protocol::FlowDirection direction_of(Direction d) {
  switch (d) {
    case Direction::kOutbound:
      return protocol::FlowDirection::kOutbound;
    case Direction::kInbound:
      return protocol::FlowDirection::kInbound;
    case Direction::kUnknown:
      break;
  }
  return protocol::FlowDirection::kUnknown;
}

protocol::FlowOwner owner_of(OwnerSource source) {
  switch (source) {
    case OwnerSource::kSocket:
      return protocol::FlowOwner::kSocket;
    case OwnerSource::kListener:
      return protocol::FlowOwner::kListener;
    case OwnerSource::kTuple:
      return protocol::FlowOwner::kTuple;
    case OwnerSource::kCgroup:
      return protocol::FlowOwner::kCgroup;
    case OwnerSource::kGone:
      return protocol::FlowOwner::kGone;
    case OwnerSource::kNone:
      break;
  }
  return protocol::FlowOwner::kNone;
}

std::string addr_text(const IpAddr& a) {
  char buf[64];
  const size_t n = a.format(buf, sizeof buf);
  return std::string(buf, n);
}

protocol::FlowCounts counts_of(const FlowCounts& c) {
  return {c.data_segs_out, c.data_segs_in, c.bytes_out, c.bytes_in};
}

}  // namespace

protocol::Flow flow_message(const ReportedFlow& flow) {
  const FlowRecord& r = flow.record;
  protocol::Flow f;
  f.proto = proto_of(r.id.proto);
  f.local_addr = addr_text(r.id.local);
  f.local_port = r.id.local_port;
  f.pid = r.id.pid;
  f.comm = r.comm;
  f.cgroup = r.cgroup;
  f.cgroup_id = r.cgroup_id;
  f.owner = owner_of(r.owner_source);
  f.remote_addr = addr_text(r.id.remote);
  f.remote_port = r.id.remote_port;
  f.direction = direction_of(r.direction);
  f.control = flow.control;
  f.total = counts_of(r.total);
  f.interval = counts_of(r.last_interval);
  f.sockets = r.sockets;
  f.conntrack_events = r.conntrack_events;
  f.closed_sockets = r.closed_sockets;
  f.first_seen_ns = r.first_seen_ns;
  f.last_seen_ns = r.last_seen_ns;
  f.netns = {flow.netns.inode, flow.netns.name, flow.netns.container, flow.netns.own};
  return f;
}

nlohmann::json flow_to_json(const ReportedFlow& flow) {
  return flow_message(flow).to_json();
}

namespace {

// Where a flow stands in the pages of one listing: by the sequence number
// of its last change, then its namespace, then its identity in that
// namespace's table (protocol, both ends, pid), so every flow has its own
// place and a page ends between two of them.
struct PageKey {
  uint64_t seq = 0;
  uint64_t inode = 0;
  std::string flow;
  auto operator<=>(const PageKey&) const = default;
};

PageKey page_key(const ReportedFlow& f, const protocol::Flow& m) {
  return {f.record.updated_seq, f.netns.inode,
          std::string(protocol::to_string(m.proto)) + " " + m.local_addr + " " +
              std::to_string(m.local_port) + " " + m.remote_addr + " " +
              std::to_string(m.remote_port) + " " + std::to_string(m.pid)};
}

// "UPTO/SEQ/INODE/FLOW": the listing's cursor and the last flow sent.
std::string page_token(uint64_t upto, const PageKey& last) {
  return std::to_string(upto) + "/" + std::to_string(last.seq) + "/" + std::to_string(last.inode) +
         "/" + last.flow;
}

std::pair<uint64_t, PageKey> read_page_token(std::string_view token) {
  const auto bad = [] {
    return std::invalid_argument(
        "after: not a page token of this daemon (give the next of the "
        "previous answer)");
  };
  uint64_t numbers[3] = {};
  for (uint64_t& n : numbers) {
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
    if (ec != std::errc() || end == token.data() + token.size() || *end != '/') throw bad();
    token.remove_prefix(static_cast<std::size_t>(end - token.data()) + 1);
  }
  if (token.empty()) throw bad();
  return {numbers[0], PageKey{numbers[1], numbers[2], std::string(token)}};
}

}  // namespace

nlohmann::json flows_list(const Sniffer& sniffer, const nlohmann::json& params,
                          std::size_t page_bytes) {
  const auto request = protocol::FlowsListParams::from_json(params);
  std::optional<PageKey> after;
  uint64_t upto = 0;
  if (request.after) std::tie(upto, after) = read_page_token(*request.after);
  uint64_t now = 0;
  std::vector<std::pair<PageKey, protocol::Flow>> listed;
  for (const ReportedFlow& f :
       sniffer.flows(request.since, request.min_messages, request.include_control, now)) {
    // Pages after the first hold the flows of the first one's listing:
    // what changed since is in the next listing (since = cursor).
    if (after && f.record.updated_seq > upto) continue;
    protocol::Flow m = flow_message(f);
    PageKey key = page_key(f, m);
    if (after && !(*after < key)) continue;
    listed.emplace_back(std::move(key), std::move(m));
  }
  if (!after) upto = now;
  std::sort(listed.begin(), listed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  protocol::FlowsListResult result;
  result.cursor = upto;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const std::size_t size = listed[i].second.to_json().dump().size() + 1;
    if (i > 0 && bytes + size > page_bytes) {
      result.more = true;
      result.next = page_token(upto, listed[i - 1].first);
      break;
    }
    bytes += size;
    result.flows.push_back(std::move(listed[i].second));
  }
  return result.to_json();
}

nlohmann::json daemon_info(const Sniffer& sniffer, const protocol::NodeFacts& node,
                           const protocol::ControlCounters& control) {
  const SnifferStats s = sniffer.stats();
  const SnifferOptions& o = sniffer.options();
  protocol::SnifferInfo info;
  info.version = common::nabla_version();
  info.pid = ::getpid();
  info.interval_ns = o.interval_ns;
  info.min_messages = o.min_messages;
  info.control_ports = o.control_ports;
  info.port_range_low = sniffer.port_range().low;
  info.port_range_high = sniffer.port_range().high;
  info.scans = s.scans;
  info.sockets_last_scan = s.sockets_last_scan;
  info.last_scan_ns = s.last_scan_ns;
  info.flows = s.flows;
  info.max_flows = o.max_flows;
  info.flows_refused = s.flows_refused;
  info.namespaces = s.namespaces;
  info.max_namespaces = o.max_namespaces;
  info.namespaces_skipped = s.namespaces_skipped;
  info.sock_diag = {s.sock_diag.messages, s.sock_diag.malformed, s.sock_diag.short_tcp_info,
                    s.sock_diag.errors};
  info.conntrack = {s.conntrack_enabled, s.conntrack.events, s.conntrack.ignored,
                    s.conntrack.malformed, s.conntrack.lost};
  info.destroy = {s.destroy_enabled, s.destroy.messages, s.destroy.malformed, s.destroy_lost};
  info.node = node;
  info.control = control;
  return info.to_json();
}

protocol::NodeFacts node_facts(const Sniffer& sniffer, int64_t protocol_version) {
  std::map<std::string, protocol::FeatureState> features;
  for (const SourceStatus& source : sniffer.sources()) {
    const std::string name = source.name == "scan" ? "sock_diag" : source.name;
    features[name] = {source.active, source.detail};
  }
  return common::probe_node_facts(protocol_version, std::move(features));
}

void register_control_methods(common::RpcServer& server, const Sniffer& sniffer,
                              protocol::NodeFacts node) {
  server.add_method(protocol::FlowsListParams::kMethod, [&sniffer](const nlohmann::json& params) {
    return flows_list(sniffer, params, kFlowsPageBytes);
  });
  server.add_method(protocol::DaemonInfoParams::kMethod,
                    [&sniffer, node, &server](const nlohmann::json& params) {
                      protocol::require_no_params(params, protocol::DaemonInfoParams::kMethod);
                      return daemon_info(sniffer, node, common::control_counters(server));
                    });
  common::add_clock_method(server);
}

}  // namespace nabla::sniffer
