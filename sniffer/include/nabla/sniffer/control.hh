#pragma once
// nabla-sniffd's control methods (JSON-RPC over common::RpcServer):
// flows.list and daemon.info. Their params and results are the messages of
// nabla/common/protocol/sniffd.hh, which every client reads with the same
// struct; this file only fills them from the sniffer's state.
#include <cstddef>
#include <nlohmann/json.hpp>

#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/rpc.hh"
#include "nabla/sniffer/sniffer.hh"

namespace nabla::sniffer {

common::protocol::Flow flow_message(const ReportedFlow& flow);
nlohmann::json flow_to_json(const ReportedFlow& flow);
// A flows.list answer holds flows up to about this many bytes of JSON, far
// below the 1 MiB frame limit; a busy node answers in pages.
inline constexpr std::size_t kFlowsPageBytes = 512 * 1024;
// Validate params (throw std::invalid_argument naming the field) and answer
// one page of at most `page_bytes` of flows (at least one flow). Pages are
// ordered by each flow's last change, then namespace and identity; the page
// token in `next` names the last flow sent and the listing's cursor, so a
// flow that changes while the pages are read is left to the next listing,
// never skipped or sent twice within one.
nlohmann::json flows_list(const Sniffer& sniffer, const nlohmann::json& params,
                          std::size_t page_bytes = kFlowsPageBytes);
// `node`: what the daemon found of its node at start (node_facts()).
nlohmann::json daemon_info(const Sniffer& sniffer, const common::protocol::NodeFacts& node = {},
                           const common::protocol::ControlCounters& control = {});
// The node facts of daemon.info: the sniffer's sources as features
// ("sock_diag", "destroy", "conntrack") plus what every daemon reports
// (common/node_facts.hh). Probes the kernel once.
common::protocol::NodeFacts node_facts(const Sniffer& sniffer, int64_t protocol_version);
// Registers flows.list, daemon.info and clock.now. Handlers run on the
// server's io thread: `sniffer` must only be used from that thread.
void register_control_methods(common::RpcServer& server, const Sniffer& sniffer,
                              common::protocol::NodeFacts node = {});

}  // namespace nabla::sniffer
