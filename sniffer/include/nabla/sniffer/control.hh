#pragma once
// nabla-sniffd's control methods (JSON-RPC over common::RpcServer):
// flows.list and daemon.info. Their params and results are the messages of
// nabla/common/protocol/sniffd.hh, which every client reads with the same
// struct; this file only fills them from the sniffer's state.
#include <nlohmann/json.hpp>

#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/rpc.hh"
#include "nabla/sniffer/sniffer.hh"

namespace nabla::sniffer {

common::protocol::Flow flow_message(const ReportedFlow& flow);
nlohmann::json flow_to_json(const ReportedFlow& flow);
// Validate params (throw std::invalid_argument naming the field) and answer.
nlohmann::json flows_list(const Sniffer& sniffer, const nlohmann::json& params);
nlohmann::json daemon_info(const Sniffer& sniffer);
// Registers flows.list and daemon.info. Handlers run on the server's io
// thread: `sniffer` must only be used from that thread.
void register_control_methods(common::RpcServer& server, const Sniffer& sniffer);

}  // namespace nabla::sniffer
