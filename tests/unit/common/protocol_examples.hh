#pragma once
// One fixed example of every control message, shared by the protocol tests:
// each golden file under golden/ is the JSON of one of these.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/node.hh"
#include "nabla/common/protocol/sniffd.hh"

namespace nabla::common::protocol::examples {

inline InjectionSettings settings() {
  InjectionSettings s;
  s.delay = Wave::square(5'000'000, 1'000'000'000, 0.25, 10);
  s.delay->phase_ns = 250'000'000;
  s.faults.jitter = JitterFault{std::nullopt, 1'000'000, JitterDistribution::kNormal, 0.5};
  s.faults.loss = LossFault{
      Wave::square(0, 10'000'000'000, 0.5), LossModel::kGilbertElliott, 0.0625, 0.25, 0.5, 0.125};
  s.faults.partition = PartitionFault{Wave::square(0, 2'000'000'000, 0.125, 3)};
  s.faults.reorder = ReorderFault{std::nullopt, 0.25, 5};
  s.faults.corrupt = CorruptFault{std::nullopt, 0.0078125, false};
  s.faults.duplicate = DuplicateFault{std::nullopt, 0.015625};
  s.faults.rate_limit = RateLimitFault{Wave::constant(0), 10'000'000.0, 3000};
  s.lease_s = 5.0;
  s.seed = 42;
  return s;
}

inline InjectStartParams inject_start_params() {
  InjectStartParams p{"udp 10.0.0.1 -> 10.0.0.2:9000", Direction::kIn, settings()};
  p.owner = "run-5f3a9c";
  p.release = Release::kSleep;
  return p;
}

inline InjectUpdateParams inject_update_params() {
  InjectUpdateParams p{"inj-1", {}};
  p.settings.delay = Wave::constant(3'000'000);
  p.settings.lease_s = 20.0;
  p.owner = "run-5f3a9c";
  return p;
}

inline InjectionDescription injection_description() {
  return InjectionDescription{"inj-1",
                              "udp 10.0.0.1:* -> 10.0.0.2:9000",
                              Direction::kOut,
                              3,
                              42,
                              Wave::square(5'000'000, 1'000'000'000),
                              10.0,
                              7.5,
                              2.5,
                              "session run-5f3a9c, key 0123456789abcdef"};
}

inline DelaySummary delay(int64_t mean_ns) {
  return DelaySummary{200,
                      static_cast<double>(mean_ns),
                      12'500.0,
                      mean_ns,
                      mean_ns + 40'000,
                      mean_ns - 20'000,
                      mean_ns + 60'000};
}

inline InjectionStats injection_stats(bool with_cycles) {
  InjectionStats s;
  s.counters = PacketCounters{400, 40'000, 200, 3, 1, 2, 4, 0, 0, 0};
  s.actual_delay = delay(2'500'000);
  s.high = delay(5'000'000);
  s.low = delay(50'000);
  if (with_cycles) s.cycles = std::vector<CycleDelay>{{0, delay(5'000'000), delay(50'000)}};
  return s;
}

inline InjectStopResult inject_stop_result() {
  return InjectStopResult{injection_description(), injection_stats(false)};
}

inline InjectStatsResult inject_stats_result() {
  return InjectStatsResult{injection_description(), injection_stats(true),
                           QueueStats{2, 65536, 0, 150, 60, 0, 300, 180, 9'000'000, 5000},
                           KernelQueueStats{1, 0, 0, 401}};
}

// The node facts both daemons report: their own features plus the CPU
// latency limit, and one interface without hardware timestamps.
inline NodeFacts node_facts(std::map<std::string, FeatureState> features) {
  NodeFacts n;
  n.protocol_version = 1;
  n.features = std::move(features);
  n.features["cpu_latency"] = {true, "/dev/cpu_dma_latency writable"};
  n.hw_timestamps = {{"eth0",
                      {"10.213.0.2", "fe80::1"},
                      false,
                      "eth0: driver offers no hardware RX/TX timestamps (software only)"}};
  return n;
}

inline InjectorInfo injectd_info() {
  InjectorInfo info;
  info.version = "0.1.0";
  info.pid = 812;
  info.queue_base = 0;
  info.queue_maxlen = 65536;
  info.max_injections = 64;
  info.timer = {true, 12.5, {4.5, 8.0, 20.25, 60.0, 256, 1000}, 0.75, 0.0625};
  info.busy_poll_us = 0;
  info.cpu_latency = {0, true, ""};
  info.injections = 1;
  info.uptime_s = 12.0;
  info.node = node_facts({{"nfqueue", {true, "queue 0 binds; iptables works"}}});
  info.control = {0, 120, 8, 1};
  return info;
}

inline Flow flow() {
  Flow f;
  f.proto = FlowProto::kTcp;
  f.local_addr = "10.213.0.2";
  f.local_port = 0;
  f.pid = 812;
  f.comm = "nabla-tier";
  f.cgroup = "/system.slice/tier.service";
  f.cgroup_id = 4242;
  f.owner = FlowOwner::kListener;
  f.remote_addr = "10.213.0.3";
  f.remote_port = 8081;
  f.direction = FlowDirection::kOutbound;
  f.total = {200, 200, 9400, 30000};
  f.interval = {20, 20, 940, 3000};
  f.sockets = 1;
  f.closed_sockets = 3;
  f.first_seen_ns = 1234;
  f.last_seen_ns = 5678;
  f.netns = {4026532301, "web", "3f2a9c1d0b7e", false};
  return f;
}

inline SnifferInfo sniffd_info() {
  SnifferInfo s;
  s.version = "0.1.0";
  s.pid = 813;
  s.interval_ns = 1'000'000'000;
  s.min_messages = 1;
  s.control_ports = {7311, 7312};
  s.port_range_low = 32768;
  s.port_range_high = 60999;
  s.scans = 12;
  s.sockets_last_scan = 40;
  s.last_scan_ns = 1'700'000'000'000'000'000;
  s.flows = 6;
  s.max_flows = 65536;
  s.flows_refused = 2;
  s.max_namespaces = 256;
  s.namespaces_skipped = 0;
  s.namespaces = 3;
  s.sock_diag = {480, 0, 0, 0};
  s.conntrack = {true, 30, 2, 0, 0};
  s.destroy = {true, 31, 0, 0};
  s.node = node_facts({{"sock_diag", {true, "sock_diag dump"}},
                       {"conntrack", {false, "turned off (--no-conntrack)"}},
                       {"destroy", {true, "destroy notifications"}}});
  s.control = {0, 120, 8, 1};
  return s;
}

}  // namespace nabla::common::protocol::examples
