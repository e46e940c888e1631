#pragma once
// InjectorService: the control methods of nabla-injectd, each a function from
// JSON params to a JSON result. Parameters are validated before anything
// touches the kernel; errors name the field (std::invalid_argument ->
// JSON-RPC -32602).
//
// Lifecycle of an injection:
//   start: validate -> bind an NFQUEUE (queue_base + k) -> hand it to the
//          engine -> install the iptables rules (rollback on failure)
//   stop:  remove the rules -> release every held packet -> unbind
// Leases: each injection expires lease_s after its start or last renewal
// (inject.update renews too); expire_leases(now), called every 100 ms by the
// daemon's lease thread, stops lapsed injections, so rules are gone within
// ~0.2 s of a lapse. Thread-safe: one mutex serialises control operations.
// Ownership (ownership.hh): stop, update and renew take the caller that
// started the injection, or force; an injection overlapping a live one on
// the same direction is refused before the kernel is touched.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>

#include "nabla/common/cpu_latency.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/version.hh"
#include "nabla/injector/engine.hh"
#include "nabla/injector/iptables_rules.hh"
#include "nabla/injector/ownership.hh"

namespace nabla::injector {

struct ServiceOptions {
  uint16_t queue_base = 0;        // --queue-num: first queue number used
  uint32_t queue_maxlen = 65536;  // --queue-maxlen
  int max_injections = 64;
  int64_t busy_poll_ns = 0;
  // PM QoS CPU latency limit held while at least one injection is active
  // (common/cpu_latency.hh): idle CPUs then poll instead of halting, so a
  // release deadline or a queued packet is not held up by a CPU waking from
  // idle. nullopt = never. If the device cannot be opened the injection
  // still runs; daemon.info reports the error and a warning is logged.
  // Off by default (--cpu-latency-us): polling idle CPUs cost power, show
  // as 100% busy in the node's monitoring, and slow the sibling hardware
  // thread of their core (the bench's no-rule sender: 300-350k pps with a
  // 0 us limit held against 350-420k without), which would perturb the
  // services under test. Precision runs opt in.
  std::optional<int32_t> cpu_latency_us;
  std::string cpu_latency_device = common::kCpuLatencyDevice;
  std::string version = common::nabla_version();
  // daemon.info's node facts, found once at start (features "nfqueue" and
  // those of common/node_facts.hh).
  common::protocol::NodeFacts node;
  // Where the daemon injects, for the error that refuses an inject.start
  // naming another namespace. Its rules and queues are made by the thread
  // serving the request, so that thread's namespace is the one compared.
  std::string netns_description = "its own network namespace";
};

class InjectorService {
 public:
  using Clock = std::function<int64_t()>;  // monotonic ns

  InjectorService(ServiceOptions options, DelayEngine& engine, RuleBackend& rules, Clock clock);
  ~InjectorService();  // stops every injection
  InjectorService(const InjectorService&) = delete;
  InjectorService& operator=(const InjectorService&) = delete;

  // `caller`: who calls (the server tells); the default is a keyless caller.
  nlohmann::json start(const nlohmann::json& params,
                       const common::RpcCaller& caller = {});  // inject.start
  nlohmann::json update(const nlohmann::json& params,
                        const common::RpcCaller& caller = {});  // inject.update
  nlohmann::json stop(const nlohmann::json& params,
                      const common::RpcCaller& caller = {});  // inject.stop
  nlohmann::json list(const nlohmann::json& params);          // inject.list
  nlohmann::json stats(const nlohmann::json& params);         // inject.stats
  nlohmann::json renew(const nlohmann::json& params,
                       const common::RpcCaller& caller = {});  // lease.renew
  nlohmann::json info(const nlohmann::json& params);           // daemon.info

  // Stops injections whose lease lapsed at or before now_ns; returns their ids.
  std::vector<std::string> expire_leases(int64_t now_ns);
  void stop_all() noexcept;

  // Registers every method above on the server.
  void register_methods(common::RpcServer& server);

 private:
  struct Active {
    std::string id;
    uint64_t slot = 0;
    uint16_t queue_num = 0;
    InjectionConfig config;
    int64_t started_ns = 0;
    int64_t lease_ns = 0;
    int64_t expires_ns = 0;
    Owner owner;
    std::unique_ptr<InstalledRule> rule;
  };

  // Throws "id: no active injection" for an unknown id.
  Active& find(const std::string& id);
  // The live injections' links, for check_no_overlap.
  std::vector<LiveLink> live_links_locked() const;
  nlohmann::json stop_locked(const std::string& id, const char* reason);
  common::protocol::InjectionDescription describe(const Active& a, int64_t now_ns) const;
  // Takes the CPU latency request if configured and not yet held.
  void hold_cpu_latency_locked();

  ServiceOptions options_;
  DelayEngine& engine_;
  RuleBackend& rules_;
  Clock clock_;
  std::mutex mutex_;
  std::map<std::string, Active> active_;
  // Held exactly while active_ is non-empty (when configured and available).
  std::unique_ptr<common::CpuLatencyRequest> cpu_latency_;
  std::string cpu_latency_error_;  // why the last attempt failed, if it did
  uint64_t next_id_ = 1;
  // daemon.info's "control", from the server register_methods was given.
  std::function<common::protocol::ControlCounters()> control_counters_;
  std::mt19937_64 seed_source_;
  int64_t started_ns_;
};

}  // namespace nabla::injector
