// TEMP stub of loadd/agents.hh: every agent is refused.
#include <stdexcept>

#include "nabla/common/host_port.hh"

#include "nabla/loadd/agents.hh"

namespace nabla::loadd {

struct AgentPool::State {
  std::vector<AgentAddress> agents;
};

std::string AgentAddress::name() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

AgentAddress parse_agent(const std::string& text) {
  AgentAddress a;
  std::string rest = text;
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    const auto kind = loadgen::parse_agent_kind(rest.substr(slash + 1));
    if (!kind) throw std::invalid_argument("unknown agent kind in '" + text + "'");
    a.kind = *kind;
    rest = rest.substr(0, slash);
  }
  const common::HostPort hp = common::parse_host_port(rest, common::kLoaddPort, "--agent");
  a.host = hp.host;
  a.port = hp.port;
  return a;
}

AgentPool::AgentPool(std::vector<AgentAddress> agents, AgentPoolOptions)
    : state_(std::make_shared<State>()) {
  state_->agents = std::move(agents);
  throw loadgen::AgentFailure(state_->agents.empty() ? "?" : state_->agents.front().name(),
                              "load agents are not in this build");
}

AgentPool::~AgentPool() = default;

loadgen::RoundRunner AgentPool::runner() {
  return {};
}

void AgentPool::stop_all() noexcept {}

const std::vector<AgentAddress>& AgentPool::agents() const {
  return state_->agents;
}

}  // namespace nabla::loadd
