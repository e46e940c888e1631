#pragma once
// The three seams of a campaign: everything it needs from outside its own
// process state. Production uses SystemClock, EngineLoadRunner (environment.hh)
// and RpcDaemons (daemons.hh); tests use fakes that run a whole campaign in
// virtual time without privileges (tests/unit/campaign/).
//
//  - Clock: monotonic "now" and a sleep. The campaign never reads the clock
//    or sleeps any other way, so a fake clock that jumps to the wake-up time
//    runs a minute-long phase in microseconds.
//  - LoadRunner: one open-loop load run per phase (loadgen::EngineConfig and
//    its first send time). Destroying a run that was not taken stops it.
//  - Daemons: what the campaign asks of nabla-injectd and nabla-sniffd:
//    flows.list with a cursor, inject.start of a square wave, inject.stop
//    with the statistics of its halves, lease.renew. A failed call throws
//    (any std::exception; the campaign adds the node and the call to the
//    message), except abandon_injection, the best-effort stop on the way
//    out.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nabla/campaign/discover.hh"
#include "nabla/common/fault_words.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::campaign {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t now_ns() = 0;  // monotonic
  virtual void sleep_until(std::int64_t t_ns) = 0;
};

class LoadRun {
 public:
  virtual ~LoadRun() = default;
  // Waits for the run's end (bounded by its duration) and returns its result;
  // rethrows what the run threw. Once.
  virtual loadgen::EngineResult take() = 0;
};

class LoadRunner {
 public:
  virtual ~LoadRunner() = default;
  virtual std::unique_ptr<LoadRun> start(const loadgen::EngineConfig& config,
                                         std::int64_t start_ns) = 0;
};

// A square wave of delay (duty 0.5, the high half first) on the packets of
// one link leaving the node.
struct InjectionRequest {
  std::string link_spec;  // common/link_spec.hh syntax, direction out
  std::int64_t amplitude_ns = 0;
  std::int64_t period_ns = 0;
  int cycles = 0;  // 0: until stopped; else the daemon ends the wave itself
  std::int64_t lease_ns = 0;
  std::uint64_t seed = 0;
  std::optional<std::string> netns = std::nullopt;  // the source node's (CampaignNode::netns)
  // A fault experiment's injection: when `fault` is set, inject.start sends
  // its delay wave (none: no delay) and faults instead of the square wave
  // above (amplitude_ns and period_ns are then unused).
  std::optional<common::FaultRequest> fault = std::nullopt;
};

// One half of the wave as the injector saw it: the packets it delayed and
// the delay it actually added (mean 0 when count is 0).
struct HalfStats {
  std::size_t count = 0;
  double mean_ns = 0;
};

// The daemon's statistics of a stopped injection.
struct InjectionStats {
  std::int64_t packets = 0;
  std::int64_t bytes = 0;
  std::int64_t delayed = 0;
  std::int64_t dropped = 0;
  HalfStats high;
  HalfStats low;
  std::optional<double> actual_std_ns;
  std::optional<double> actual_p50_ns;
  std::optional<double> actual_p99_ns;
  std::optional<double> actual_max_ns;
};

// One flows.list answer: the records changed since the cursor, and the
// cursor to ask from next.
struct FlowsPage {
  std::vector<FlowEnd> flows;
  std::uint64_t cursor = 0;
};

class Daemons {
 public:
  virtual ~Daemons() = default;
  // nullopt when the node has no sniffd.
  virtual std::optional<FlowsPage> list_flows(const std::string& node, std::uint64_t cursor) = 0;
  // Returns the injection's id.
  virtual std::string start_injection(const std::string& node, const InjectionRequest& request) = 0;
  virtual InjectionStats stop_injection(const std::string& node, const std::string& id) = 0;
  // Stops it best effort with a short timeout; logs instead of throwing (the
  // daemon ends it when its lease lapses).
  virtual void abandon_injection(const std::string& node, const std::string& id) noexcept = 0;
  virtual void renew_lease(const std::string& node, const std::string& id) = 0;
};

struct CampaignEnvironment {
  Clock& clock;
  LoadRunner& load;
  Daemons& daemons;
};

// CLOCK_MONOTONIC and a real sleep.
class SystemClock final : public Clock {
 public:
  std::int64_t now_ns() override;
  void sleep_until(std::int64_t t_ns) override;
};

// loadgen::run_engine on a thread per run. A run destroyed before take()
// (unwinding on a signal or an error) tells the engine to stop, which it
// does within ~10 ms, so Ctrl-C never waits for the rest of a long phase and
// unwinding never leaves a thread behind.
class EngineLoadRunner final : public LoadRunner {
 public:
  std::unique_ptr<LoadRun> start(const loadgen::EngineConfig& config,
                                 std::int64_t start_ns) override;
};

}  // namespace nabla::campaign
