#pragma once
// The coordinator's side of load agents (nabla-loadd): where they are, and
// the RoundRunner (loadgen/rounds.hh) that runs each controller round on all
// of them at once.
//
// Per round: split the rate (split_rate), send every agent its engine
// (agent_engine) with the same lead, poll them until done (each poll renews
// the agent's lease), fetch every agent's summary and samples at once (one
// thread per agent), then, in the agents' order, shift each agent's sample
// times onto the controller's clock and merge. An agent that cannot be
// reached, fails, or does not finish within the round's bound throws
// loadgen::AgentFailure (the first such agent in the agents' order, once
// every fetch has returned); the caller then calls stop_all().
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nabla/common/rpc.hh"
#include "nabla/loadgen/rounds.hh"

namespace nabla::loadd {

struct AgentAddress {
  std::string host;  // a name or an address literal (IPv6 without brackets)
  uint16_t port = common::kLoaddPort;
  loadgen::AgentKind kind = loadgen::AgentKind::kSymmetric;
  std::string name() const;  // host:port, [v6]:port
};

// "HOST[:PORT][/KIND]": 10.0.0.2, 10.0.0.2:7313/latency, [fd00::2]/throughput.
// Throws std::invalid_argument naming what is wrong.
AgentAddress parse_agent(const std::string& text);

struct AgentPoolOptions {
  std::string owner;              // written into every agent's round (who loads)
  std::chrono::seconds lease{5};  // an agent stops a round nobody polled for this long
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds poll_interval{50};
  // The key for each agent (by its address), as the other daemons' clients
  // find theirs (common/local_keys.hh).
  std::function<common::Key(const AgentAddress&)> key_for;
  std::function<int64_t()> clock;  // the controller's monotonic clock
};

class AgentPool {
 public:
  // Connects to every agent and checks it is a nabla-loadd; throws
  // loadgen::AgentFailure naming the first that is not.
  AgentPool(std::vector<AgentAddress> agents, AgentPoolOptions options);
  ~AgentPool();  // stop_all()
  AgentPool(const AgentPool&) = delete;
  AgentPool& operator=(const AgentPool&) = delete;

  loadgen::RoundRunner runner();
  // Stops every agent's round that may still run; never throws.
  void stop_all() noexcept;
  const std::vector<AgentAddress>& agents() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace nabla::loadd
