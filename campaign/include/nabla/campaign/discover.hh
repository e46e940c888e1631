#pragma once
// Link discovery: joins the flow records of several nabla-sniffd nodes into
// one-way links ⟨proto, src host, src process, src port|0, dst host, dst
// process, dst port|0⟩ with data segments and bytes (see docs/design.md, "Data flow",
// and docs/cli.md, "nabla discover").
//
// Each sniffer reports, per flow, its local end (address, port, pid, comm)
// and the remote address and port, ports already folded (ephemeral → 0) by
// the same rule on both nodes. A record at node A with local (la, lp) and
// remote (ra, rp) is matched with the record at the node owning ra whose
// local is (ra, rp) and remote is (la, lp). A record yields:
//  - A → peer, counted from A's outgoing side (segments_out, bytes_out);
//  - peer → A from A's incoming side, but only when the peer has no matching
//    record (no sniffer there, or it missed the flow): otherwise the peer's
//    own record yields that direction, so no direction is counted twice.
// A peer without a record keeps an unknown process (pid 0, comm "",
// `known` false) instead of being dropped. Loopback remotes belong to the
// same node. A direction that carried no data is not a link (with
// min_messages >= 1). Records without any counts — UDP sockets, and flows
// seen only through conntrack events without nf_conntrack_acct (e.g. a TCP
// connection that lived less than a scan interval) — are seen, not counted:
// they yield one link with zero counts in the direction their `direction`
// gives (the client, who owns the ephemeral port, sends to the server), pass
// any min_messages, and give way to the peer's record when that one is
// counted.
//
// Network namespaces: a sniffer on a node reports the flows of every
// namespace it scans (containers), each with its namespace. Two ends in two
// containers of one node join like two nodes' ends (by address), and each
// end keeps its namespace, shown as `host comm[pid]@ctr-ID` (a container),
// `@NAME` (a named namespace) or `@netns-INODE`; the node's own namespace
// adds nothing.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/protocol/sniffd.hh"

namespace nabla::campaign {

// One sniffer record, as returned by flows.list (totals since first seen).
struct FlowEnd {
  std::string proto;  // "tcp" | "udp"
  std::string local_addr;
  uint16_t local_port = 0;
  int32_t pid = 0;
  std::string comm;
  std::string remote_addr;
  uint16_t remote_port = 0;
  std::string direction;  // outbound | inbound | unknown
  bool control = false;
  uint64_t segments_out = 0;
  uint64_t segments_in = 0;
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  common::protocol::FlowNetns netns = {};
  // When the sniffer last updated the record (its scan or a socket's
  // close), on the sniffer's monotonic clock.
  int64_t last_seen_ns = 0;
};

// One flows.list record as the join takes it.
FlowEnd flow_end_of(const common::protocol::Flow& flow);
// Parses one flows.list record (common::protocol::Flow); throws
// std::invalid_argument naming the missing or mistyped field.
FlowEnd parse_flow(const nlohmann::json& flow);

// Whether a record belongs to a campaign node that is one namespace: with
// `container`, records of that container (its id or a prefix of it); with a
// `netns` NAME, records of that named namespace; otherwise every record.
bool flow_in_node_namespace(const FlowEnd& flow, const std::optional<std::string>& netns,
                            const std::optional<std::string>& container);

struct NodeFlows {
  std::string name;                // the host label given with --node NAME=...
  std::vector<std::string> addrs;  // addresses known to belong to it (may be empty)
  std::vector<FlowEnd> flows;
};

struct LinkEnd {
  std::string host;  // node name, or the bare address when no node owns it
  int32_t pid = 0;
  std::string comm;
  uint16_t port = 0;   // 0 when ephemeral
  bool known = false;  // a sniffer reported this end's process
  // The end's network namespace on its node (FlowNetns); own: the node's.
  bool own_netns = true;
  uint64_t netns_inode = 0;
  std::string netns_name = {};
  std::string container = {};
  auto operator<=>(const LinkEnd&) const = default;
};

// "ctr-ID", the namespace's name, "netns-INODE", or "" for the node's own.
std::string netns_tag(const LinkEnd& end);

struct Link {
  std::string proto;
  LinkEnd src;
  LinkEnd dst;
  uint64_t segments = 0;
  uint64_t bytes = 0;
};

struct JoinOptions {
  bool include_control = false;
  uint64_t min_messages = 1;  // per one-way link (UDP links without counts pass)
};

// The join; links sorted by (proto, src, dst). A node's addresses are its
// `addrs` plus every local address its records show.
std::vector<Link> join_flows(const std::vector<NodeFlows>& nodes, const JoinOptions& options = {});

// Merges a later flows.list answer into `flows`: a record with the same
// identity (proto, local, remote, pid) replaces the earlier one (totals are
// cumulative), and a held pid-0 record of a tuple the answer reports with a
// known pid is dropped (the sniffer folded its counts into the owner's).
void merge_flows(std::vector<FlowEnd>& flows, const std::vector<FlowEnd>& update);

nlohmann::json links_to_json(const std::vector<Link>& links);
// Graphviz digraph: nodes "host/comm[pid]", edges labelled "proto port N msgs".
std::string links_to_dot(const std::vector<Link>& links);

}  // namespace nabla::campaign
