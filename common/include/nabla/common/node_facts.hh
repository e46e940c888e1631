#pragma once
// What a daemon finds out about its node at start for daemon.info
// (protocol/node.hh), and the clock.now method both daemons serve.
#include <map>
#include <string>

#include "nabla/common/cpu_latency.hh"
#include "nabla/common/protocol/node.hh"

namespace nabla::common {

class RpcServer;

// Whether a CPU latency limit could be held: `path` opens for writing (the
// open alone requests nothing; the close drops it at once).
protocol::FeatureState cpu_latency_feature(const std::string& path = kCpuLatencyDevice);

// The daemon's own features plus the ones every node reports: the CPU
// latency limit ("cpu_latency") and the hardware timestamps of every
// interface. Probes the kernel; never throws.
protocol::NodeFacts probe_node_facts(int64_t protocol_version,
                                     std::map<std::string, protocol::FeatureState> features);

// The server's refusals and closes so far, as daemon.info reports them.
protocol::ControlCounters control_counters(const RpcServer& server);

// Registers clock.now: the daemon's CLOCK_REALTIME and CLOCK_MONOTONIC, read
// once per request.
void add_clock_method(RpcServer& server);

}  // namespace nabla::common
