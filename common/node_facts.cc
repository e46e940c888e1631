// Node facts for daemon.info and the clock.now method; see node_facts.hh.
#include "nabla/common/node_facts.hh"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/hw_timestamps.hh"
#include "nabla/common/protocol/no_params.hh"
#include "nabla/common/rpc.hh"

namespace nabla::common {

protocol::FeatureState cpu_latency_feature(const std::string& path) {
  const FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return {false, path + " not writable: " + std::strerror(errno)};
  return {true, path + " writable"};
}

protocol::NodeFacts probe_node_facts(int64_t protocol_version,
                                     std::map<std::string, protocol::FeatureState> features) {
  protocol::NodeFacts facts;
  facts.protocol_version = protocol_version;
  facts.features = std::move(features);
  facts.features["cpu_latency"] = cpu_latency_feature();
  for (const InterfaceTimestamping& i : interface_timestamping()) {
    const HardwareTimestampInfo& hw = i.hardware;
    facts.hw_timestamps.push_back(
        {i.name, i.addresses, hw.available,
         hw.available ? "PTP clock /dev/ptp" + std::to_string(hw.phc_index) : hw.reason});
  }
  return facts;
}

protocol::ControlCounters control_counters(const RpcServer& server) {
  const RpcServerCounters c = server.counters();
  return protocol::ControlCounters{c.refused_full, c.refused_per_peer, c.auth_timeouts,
                                   c.idle_closed};
}

void add_clock_method(RpcServer& server) {
  server.add_method(protocol::ClockNowParams::kMethod, [](const nlohmann::json& params) {
    protocol::require_no_params(params, protocol::ClockNowParams::kMethod);
    return protocol::ClockNowResult{realtime_ns(), monotonic_ns()}.to_json();
  });
}

}  // namespace nabla::common
