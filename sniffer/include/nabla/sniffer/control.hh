#pragma once
// nabla-sniffd's control methods (JSON-RPC over common::RpcServer):
//
//   flows.list  params {"since": cursor ≥ 0 (default 0), "min_messages": n ≥ 0
//               (default: the daemon's threshold), "include_control": bool
//               (default false)} → {"cursor": next, "flows": [flow...]}
//               Pass the returned cursor as `since` to get only what changed.
//   daemon.info params {} → version, pid, interval, port range, counters
//               (sock_diag, conntrack, destroy notifications).
//
// A flow: {"proto":"tcp", "local":{"addr","port","pid","comm","cgroup",
//   "cgroup_id","owner":"socket|listener|tuple|none"},
//   "remote":{"addr","port"}, "direction":"outbound|inbound|unknown",
//   "control":bool, "total":{"segments_out","segments_in","bytes_out",
//   "bytes_in"}, "interval":{same, for the last scan}, "sockets",
//   "conntrack_events", "closed_sockets", "first_seen_ns", "last_seen_ns"} — ports already
//   folded (ephemeral → 0), times on the daemon's monotonic clock.
#include <nlohmann/json.hpp>

#include "nabla/common/rpc.hh"
#include "nabla/sniffer/sniffer.hh"

namespace nabla::sniffer {

nlohmann::json flow_to_json(const ReportedFlow& flow);
// Validate params (throw std::invalid_argument naming the field) and answer.
nlohmann::json flows_list(const Sniffer& sniffer, const nlohmann::json& params);
nlohmann::json daemon_info(const Sniffer& sniffer);
// Registers flows.list and daemon.info. Handlers run on the server's io
// thread: `sniffer` must only be used from that thread.
void register_control_methods(common::RpcServer& server, const Sniffer& sniffer);

}  // namespace nabla::sniffer
