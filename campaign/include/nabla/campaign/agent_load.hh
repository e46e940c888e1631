#pragma once
// A campaign's load sent by load agents (nabla-loadd, `[workload] agents`):
// the LoadRunner (environment.hh) over a loadgen::RoundRunner, in production
// a loadd::AgentPool's.
//
// Each run is one round on every agent, the rate split among them; take()
// returns the merged result, its samples on this host's monotonic clock
// (within an RPC's skew of a few ms, loadgen/rounds.hh). An agent that
// fails (or refuses the round, e.g. one longer than its --max-round-s)
// throws loadgen::AgentFailure from take(), naming it, and the campaign
// fails the run. A run destroyed before take() stops every agent's round.
//
// Not sent to agents: EngineConfig::record_intended (every scheduled send's
// intended time stays on the agent), so EngineResult::intended_ns is empty;
// the campaign refuses [[experiment]] with agents (spec.cc). The TLS
// session cache is this process's, so each agent resumes its own sessions.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "nabla/campaign/environment.hh"
#include "nabla/loadd/agents.hh"
#include "nabla/loadgen/rounds.hh"

namespace nabla::campaign {

class AgentLoadRunner final : public LoadRunner {
 public:
  // `stop_all` stops every agent's round that may still run and never
  // throws; `clock` is the campaign's monotonic clock (start_ns's).
  AgentLoadRunner(loadgen::RoundRunner runner, std::function<void()> stop_all,
                  std::function<std::int64_t()> clock);
  std::unique_ptr<LoadRun> start(const loadgen::EngineConfig& config,
                                 std::int64_t start_ns) override;

 private:
  loadgen::RoundRunner runner_;
  std::function<void()> stop_all_;
  std::function<std::int64_t()> clock_;
  int rounds_ = 0;
};

// Connects to the spec's agents (throws loadgen::AgentFailure naming the
// first that does not answer as a nabla-loadd), each with its key as `nabla
// load --agent` finds it: `key_file`, else the host's key of nabla-loadd
// (common/local_keys.hh). `owner` is written into every agent's round.
std::unique_ptr<loadd::AgentPool> connect_campaign_agents(
    const std::vector<loadd::AgentAddress>& agents, const std::optional<std::string>& key_file,
    const std::string& owner);

}  // namespace nabla::campaign
