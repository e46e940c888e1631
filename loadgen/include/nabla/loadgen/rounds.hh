#pragma once
// Who runs a controller round (controller.hh): one local engine, or several
// load agents on other machines (nabla-loadd, loadd/), each sending a share
// of the rate. The controller's methodology is the same either way; only
// this seam changes.
//
//   RoundRequest (whole target rate, the round's sending time, its lead)
//     ──RoundRunner──▶ RoundOutcome
//        merged: one EngineResult, sample times on the controller's clock
//        agents: what each agent did and its own checks (empty: local)
//
// Clocks. An agent times every sample on its own monotonic clock; latencies
// are differences of two readings of that one clock, never of two machines'.
// To merge, each agent's sample times are shifted so that its round start
// falls on the controller's (RoundOutcome::start_ns). That only orders the
// merged series (for the independence check, within an RPC's skew of a few
// ms) and drops every agent's own warm-up; nothing subtracts times of two
// agents.
//
// Checks. Lancet's calibration checks (controller_checks.hh) are the
// sender's: an agent checks its own send gaps (Anderson–Darling), lateness
// and connection slots against its own share of the rate and reports them.
// A round passes when every agent's check passes and the merged throughput
// is within the tolerance of the merged offered rate (combine_checks).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nabla/analysis/histogram.hh"
#include "nabla/loadgen/controller_checks.hh"
#include "nabla/loadgen/engine.hh"

namespace nabla::loadgen {

// Lancet's agent kinds.
//   throughput: open-loop load, no latency recorded (record_samples off);
//   latency: a small share of the rate on few connections, every sample
//     recorded (busy polling and socket timestamps where the agent can);
//   symmetric: both, a full share of the rate with every sample recorded.
enum class AgentKind { kSymmetric, kThroughput, kLatency };

const char* to_string(AgentKind kind);
// "symmetric" | "throughput" | "latency"; nullopt otherwise.
std::optional<AgentKind> parse_agent_kind(const std::string& text);

// One round as the controller asks for it.
struct RoundRequest {
  EngineConfig engine;  // the whole workload: schedule.rate_per_s is the total rate
  int64_t duration_ns = 0;
  int64_t lead_ns = 0;  // first intended send this long after the request
  bool calibration = false;
  int index = 0;  // the round's number in this run
};

// What one agent did in one round, against its own share.
struct AgentRound {
  std::string agent;  // as named on the command line: host:port
  AgentKind kind = AgentKind::kSymmetric;
  double rate_per_s = 0;  // its share of the target rate
  uint64_t scheduled = 0, sent = 0, completed = 0, late = 0;
  ErrorCounts errors;
  std::size_t samples = 0;                    // returned (0 for a throughput agent)
  CalibrationCheck check;                     // the agent's own, against its share
  analysis::LatencyHistogram timer_lateness;  // its own send timer's lateness
  SendTimer timer;
};

struct RoundOutcome {
  // Every agent's counts and histograms added (exact), samples of the
  // latency and symmetric agents on the controller's clock, sorted by
  // intended time.
  EngineResult merged;
  // The round's start (first intended send before any setup shift) on the
  // controller's clock; the warm-up is dropped after it.
  int64_t start_ns = 0;
  std::vector<AgentRound> agents;  // empty: one local engine
};

// One agent over the whole run: its rounds added up (the run history's
// per-agent breakdown).
struct AgentSummary {
  std::string agent;
  AgentKind kind = AgentKind::kSymmetric;
  double rate_per_s = 0;
  int rounds = 0;
  int rounds_failed = 0;  // rounds whose own check failed
  uint64_t sent = 0, completed = 0, late = 0;
  ErrorCounts errors;
  std::size_t samples = 0;
  analysis::LatencyHistogram timer_lateness;
  std::vector<std::string> last_reasons;  // of its last failed round
  void add(const AgentRound& round);
};

// Runs one round. It throws to end the run (an agent that died or became
// unreachable: AgentFailure); the controller then ends the run with what
// was measured and ControllerResult::failure set.
using RoundRunner = std::function<RoundOutcome(const RoundRequest&)>;

// An agent that cannot go on; names it and says why.
class AgentFailure : public std::runtime_error {
 public:
  AgentFailure(std::string agent, const std::string& why)
      : std::runtime_error("agent " + agent + ": " + why), agent_(std::move(agent)) {}
  const std::string& agent() const noexcept { return agent_; }

 private:
  std::string agent_;
};

// The runner of one local engine (what the controller uses without one):
// run_engine at clock() + lead_ns.
RoundRunner local_round_runner(std::function<int64_t()> clock);

// How the target rate is shared. Latency agents together send
// latency_share of it (split evenly), the others the rest (split evenly);
// with only latency agents, or only others, they share all of it. The sum
// of the shares is the target rate exactly. Throws std::invalid_argument for
// no agent or a share outside (0, 1).
std::vector<double> split_rate(double total_rate, const std::vector<AgentKind>& kinds,
                               double latency_share = 0.05);

// The engine an agent of this kind runs for its share: rate_per_s = share,
// record_samples off for a throughput agent, connections = threads for a
// latency agent (few connections, as lancet's), the seed made distinct per
// agent (agent_index) so that the agents' schedules are independent.
EngineConfig agent_engine(const EngineConfig& whole, AgentKind kind, double share,
                          std::size_t agent_index);

// A round's check from the agents' own checks and the merged counts: every
// agent's reasons, prefixed with its name, and the merged throughput against
// the merged offered rate (limits.rate_tolerance). Offered rate and
// throughput are the sums of the agents' own; late_ok only when every
// agent's is, late counts and fractions over all sends; closed_loop when any
// agent's is (slots, slots needed and capacity added, in-flight time
// weighted by sends); the Anderson–Darling result is the worst agent's
// (largest A² over its critical value), passed only when all applied passed.
CalibrationCheck combine_checks(const std::vector<AgentRound>& agents, const EngineResult& merged,
                                double target_rps, const CalibrationLimits& limits);

// Moves every time of `result` (samples, intended times, first and last
// intended) by `by_ns`: an agent's round onto the controller's clock,
// by_ns = RoundOutcome::start_ns - the start the agent was given.
void shift_times(EngineResult& result, int64_t by_ns);

// Adds `part` (one agent's round, its samples already on the controller's
// clock) into `into`: counts, errors, per-type counts, histograms (exact
// merges), timers, setup; samples appended (sort once at the end with
// sort_samples).
void merge_into(EngineResult& into, EngineResult part);
void sort_samples(EngineResult& result);

}  // namespace nabla::loadgen
