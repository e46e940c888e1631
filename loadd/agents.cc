// The coordinator's side of load agents; see agents.hh.
#include "nabla/loadd/agents.hh"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "nabla/common/clock.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/log.hh"
#include "nabla/common/protocol/node.hh"
#include "nabla/loadd/protocol.hh"
#include "nabla/loadgen/wire.hh"

namespace nabla::loadd {

namespace {

// Slack over a round's own time (lead + duration + request timeout) before
// an agent that has not finished counts as failed.
constexpr int64_t kRoundSlackNs = 5'000'000'000;
// Each call's own bound.
constexpr std::chrono::milliseconds kCallTimeout{5000};

uint16_t parse_port(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw std::invalid_argument("agent '" + whole + "': port '" + text + "' is not 1 .. 65535");
  }
  const int port = std::stoi(text);
  if (port < 1 || port > 65535) {
    throw std::invalid_argument("agent '" + whole + "': port '" + text + "' is not 1 .. 65535");
  }
  return static_cast<uint16_t>(port);
}

}  // namespace

std::string AgentAddress::name() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

AgentAddress parse_agent(const std::string& text) {
  AgentAddress a;
  std::string rest = text;
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    const std::string kind = rest.substr(slash + 1);
    const auto parsed = loadgen::parse_agent_kind(kind);
    if (!parsed) {
      throw std::invalid_argument("agent '" + text + "': kind '" + kind +
                                  "' is not symmetric, throughput or latency");
    }
    a.kind = *parsed;
    rest = rest.substr(0, slash);
  }
  if (rest.empty()) throw std::invalid_argument("agent '" + text + "': no host");
  if (rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) {
      throw std::invalid_argument("agent '" + text + "': '[' without ']'");
    }
    a.host = rest.substr(1, close - 1);
    const std::string after = rest.substr(close + 1);
    if (a.host.empty() || a.host.find(':') == std::string::npos) {
      throw std::invalid_argument("agent '" + text + "': brackets hold an IPv6 address");
    }
    if (!after.empty()) {
      if (after.front() != ':') {
        throw std::invalid_argument("agent '" + text + "': expected ':PORT' after ']'");
      }
      a.port = parse_port(after.substr(1), text);
    }
    return a;
  }
  const auto colon = rest.find(':');
  if (colon != std::string::npos && rest.find(':', colon + 1) != std::string::npos) {
    // An IPv6 address without brackets: no port can follow.
    a.host = rest;
    return a;
  }
  a.host = rest.substr(0, colon);
  if (a.host.empty()) throw std::invalid_argument("agent '" + text + "': no host");
  if (colon != std::string::npos) a.port = parse_port(rest.substr(colon + 1), text);
  return a;
}

struct AgentPool::State {
  struct Agent {
    AgentAddress address;
    std::string name;
    std::mutex mu;  // one call at a time on the client
    std::optional<common::RpcClient> client;
    std::string round;  // the id of its round that may still run
  };
  std::vector<std::unique_ptr<Agent>> agents;
  std::vector<AgentAddress> addresses;
  AgentPoolOptions options;

  common::Key key_of(const AgentAddress& a) const {
    if (options.key_for) return options.key_for(a);
    return common::client_key(std::nullopt, common::kLoaddKeyName, a.host, a.port);
  }

  // mu held. Throws RpcConnectionError / RpcError as RpcClient does.
  common::RpcClient& client(Agent& agent) {
    if (!agent.client || !agent.client->connected()) {
      agent.client.reset();
      agent.client.emplace(
          common::RpcClient::connect(agent.address.host, agent.address.port, key_of(agent.address),
                                     options.connect_timeout, common::kLoaddKeyName));
    }
    return *agent.client;
  }

  template <class Message>
  auto call(Agent& agent, const Message& message) {
    std::lock_guard lock(agent.mu);
    try {
      return client(agent).call(message, kCallTimeout);
    } catch (const common::RpcConnectionError&) {
      agent.client.reset();
      throw;
    }
  }

  void stop(Agent& agent) noexcept {
    std::string id;
    {
      std::lock_guard lock(agent.mu);
      id = std::exchange(agent.round, "");
    }
    if (id.empty()) return;
    try {
      call(agent, protocol::LoadStopParams{{id, options.owner}});
    } catch (const std::exception& e) {
      common::log_debug("agent ", agent.name, ": load.stop ", id, ": ", e.what());
    }
  }

  void stop_all() noexcept {
    for (auto& a : agents) stop(*a);
  }

  loadgen::RoundOutcome run(const loadgen::RoundRequest& request);
  loadgen::RoundOutcome run_checked(const loadgen::RoundRequest& request);
  std::optional<loadgen::RoundSummary> fetch(Agent& agent, const std::string& id,
                                             const std::atomic<bool>& abandon);
};

namespace {

// An agent's failure, named; what the runner throws.
template <class F>
auto failing(const std::string& agent, const std::string& what, F&& f) {
  try {
    return f();
  } catch (const loadgen::AgentFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw loadgen::AgentFailure(agent, what + ": " + e.what());
  }
}

}  // namespace

// A done round's summary and every sample, page by page, on the agent's own
// clock; then the agent is freed for the next round. Nothing (nullopt) once
// `abandon` is set: another agent failed, so the round is lost anyway.
std::optional<loadgen::RoundSummary> AgentPool::State::fetch(Agent& agent, const std::string& id,
                                                             const std::atomic<bool>& abandon) {
  const auto result = failing(agent.name, "load.result", [&] {
    return call(agent, protocol::LoadResultParams{{id, options.owner}});
  });
  loadgen::RoundSummary summary = failing(agent.name, "load.result summary", [&] {
    return loadgen::round_summary_from_json(result.summary);
  });
  std::vector<loadgen::Sample>& samples = summary.result.samples;
  samples.reserve(result.samples);
  while (samples.size() < result.samples) {
    if (abandon) return std::nullopt;
    protocol::LoadSamplesParams page{id, options.owner, samples.size(), protocol::kMaxSamplesPage};
    const auto got = failing(agent.name, "load.samples", [&] { return call(agent, page); });
    auto more = failing(agent.name, "load.samples page",
                        [&] { return loadgen::samples_from_json(got.samples); });
    if (more.empty()) {
      throw loadgen::AgentFailure(agent.name, "load.samples: an empty page at " +
                                                  std::to_string(page.offset) + " of " +
                                                  std::to_string(result.samples));
    }
    samples.insert(samples.end(), more.begin(), more.end());
  }
  stop(agent);  // frees the agent for the next round
  return summary;
}

loadgen::RoundOutcome AgentPool::State::run(const loadgen::RoundRequest& request) {
  try {
    return run_checked(request);
  } catch (...) {
    stop_all();  // leaves nothing running behind a failed round
    throw;
  }
}

loadgen::RoundOutcome AgentPool::State::run_checked(const loadgen::RoundRequest& request) {
  const auto clock = options.clock ? options.clock : [] { return common::monotonic_ns(); };
  const std::size_t n = agents.size();
  std::vector<loadgen::AgentKind> kinds;
  for (const auto& a : agents) kinds.push_back(a->address.kind);
  const std::vector<double> shares = loadgen::split_rate(request.engine.schedule.rate_per_s, kinds);

  loadgen::RoundOutcome outcome;
  outcome.start_ns = clock() + request.lead_ns;
  std::vector<loadgen::EngineConfig> engines;
  // This round's id on each agent: read here only, so that a stop_all() from
  // another thread (which frees the rounds) turns the next poll into a
  // refusal rather than a race.
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < n; ++i) {
    Agent& agent = *agents[i];
    loadgen::EngineConfig engine =
        loadgen::agent_engine(request.engine, agent.address.kind, shares[i], i);
    if (request.duration_ns > 0) engine.duration_ns = request.duration_ns;
    protocol::LoadStartParams start;
    start.owner = options.owner;
    start.lease_s = static_cast<double>(options.lease.count());
    start.lead_ns = request.lead_ns;
    start.kind = agent.address.kind;
    start.engine = loadgen::engine_config_to_json(engine);
    const auto started = failing(agent.name, "load.start", [&] { return call(agent, start); });
    {
      std::lock_guard lock(agent.mu);
      agent.round = started.id;
    }
    ids.push_back(started.id);
    engines.push_back(std::move(engine));
  }

  // Poll every agent until all are done (each poll renews its lease).
  int64_t longest_ns = 0;
  for (const auto& e : engines) {
    longest_ns = std::max(longest_ns, e.duration_ns + e.request_timeout_ns);
  }
  const int64_t deadline = clock() + request.lead_ns + longest_ns + kRoundSlackNs;
  std::vector<bool> done(n, false);
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      Agent& agent = *agents[i];
      const auto status = failing(agent.name, "load.status", [&] {
        return call(agent, protocol::LoadStatusParams{{ids[i], options.owner}});
      });
      switch (status.state) {
        case protocol::RoundState::kRunning:
          all = false;
          break;
        case protocol::RoundState::kDone:
          done[i] = true;
          break;
        default:
          throw loadgen::AgentFailure(agent.name,
                                      "round " + status.id + " " +
                                          std::string(protocol::to_string(status.state)) +
                                          (status.error.empty() ? "" : ": " + status.error));
      }
    }
    if (all) break;
    if (clock() > deadline) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!done[i]) {
          throw loadgen::AgentFailure(agents[i]->name, "round not done within its bound");
        }
      }
    }
    std::this_thread::sleep_for(options.poll_interval);
  }

  // Every agent's result and samples at once, one thread each; then, in
  // the agents' order, each shifted onto the controller's clock and merged.
  std::vector<std::optional<loadgen::RoundSummary>> parts(n);
  std::vector<std::exception_ptr> failures(n);
  std::atomic<bool> abandon{false};
  {
    std::vector<std::jthread> fetchers;
    fetchers.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      fetchers.emplace_back([&, i] {
        try {
          parts[i] = fetch(*agents[i], ids[i], abandon);
        } catch (...) {
          failures[i] = std::current_exception();
          abandon = true;
        }
      });
    }
  }
  // The first failing agent in the agents' order (one abandoned for
  // another's failure has none of its own).
  for (const std::exception_ptr& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  for (std::size_t i = 0; i < n; ++i) {
    Agent& agent = *agents[i];
    loadgen::RoundSummary& summary = *parts[i];
    loadgen::EngineResult part = std::move(summary.result);
    loadgen::shift_times(part, outcome.start_ns);  // its times are from its own round start

    loadgen::AgentRound round;
    round.agent = agent.name;
    round.kind = agent.address.kind;
    round.rate_per_s = shares[i];
    round.scheduled = part.scheduled;
    round.sent = part.sent;
    round.completed = part.completed;
    round.late = part.late;
    round.errors = part.errors;
    round.samples = part.samples.size();
    round.check = std::move(summary.check);
    round.timer_lateness = part.timer_lateness;
    round.timer = part.timer;
    outcome.agents.push_back(std::move(round));
    loadgen::merge_into(outcome.merged, std::move(part));
  }
  loadgen::sort_samples(outcome.merged);
  return outcome;
}

AgentPool::AgentPool(std::vector<AgentAddress> agents, AgentPoolOptions options)
    : state_(std::make_shared<State>()) {
  if (agents.empty()) throw std::invalid_argument("no load agent given");
  state_->options = std::move(options);
  state_->addresses = agents;
  for (auto& a : agents) {
    auto agent = std::make_unique<State::Agent>();
    agent->name = a.name();
    agent->address = std::move(a);
    state_->agents.push_back(std::move(agent));
  }
  for (auto& agent : state_->agents) {
    std::lock_guard lock(agent->mu);
    try {
      const nlohmann::json info = state_->client(*agent).call(
          common::protocol::DaemonInfoParams::kMethod, nlohmann::json::object(), kCallTimeout);
      const auto loadd = protocol::LoaddInfo::from_json(info);
      if (loadd.name != "nabla-loadd") {
        throw std::invalid_argument("answers as " + loadd.name + ", not nabla-loadd");
      }
      if (loadd.protocol_version != common::kProtocolVersion) {
        throw std::invalid_argument(
            "speaks protocol version " + std::to_string(loadd.protocol_version) + ", this nabla " +
            std::to_string(common::kProtocolVersion) + ": install the same nabla version on both");
      }
    } catch (const std::exception& e) {
      throw loadgen::AgentFailure(agent->name, e.what());
    }
  }
}

AgentPool::~AgentPool() {
  stop_all();
}

loadgen::RoundRunner AgentPool::runner() {
  return [state = state_](const loadgen::RoundRequest& request) { return state->run(request); };
}

void AgentPool::stop_all() noexcept {
  if (state_) state_->stop_all();
}

const std::vector<AgentAddress>& AgentPool::agents() const {
  return state_->addresses;
}

}  // namespace nabla::loadd
