// The coordinator's AgentPool against three agents in this process, each a
// real RpcServer on loopback serving nabla-loadd's methods over a real
// LoadService whose round body stands in for the engine (it returns its
// samples at once). The pool fetches every agent's results at the same time,
// merges them exactly in the agents' order, and names the agent whose fetch
// fails, leaving no round behind on any agent.
#include <gtest/gtest.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/rpc.hh"
#include "nabla/loadd/agents.hh"
#include "nabla/loadd/daemon.hh"
#include "nabla/loadd/protocol.hh"
#include "nabla/loadd/service.hh"

namespace nabla::loadd {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kAgents = 3;

// Waits (bounded) until `expected` callers have arrived; returns whether
// they all did within `limit`.
class Rendezvous {
 public:
  explicit Rendezvous(std::size_t expected) : expected_(expected) {}
  bool meet(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    ++arrived_;
    cv_.notify_all();
    return cv_.wait_for(lock, limit, [this] { return arrived_ >= expected_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t arrived_ = 0;
  const std::size_t expected_;
};

common::Key test_key() {
  return common::Key(std::vector<uint8_t>(32, 0x5a));
}

// Agent `index`: `count` samples, the k-th at (3k + index + 1) us after its
// round's start with latency (index + 1) us, so that the agents' samples
// interleave and each sample says whose it is.
RoundBody samples_body(std::size_t index, std::size_t count) {
  return [index, count](const loadgen::EngineConfig&, int64_t start_ns) {
    RoundReport r;
    for (std::size_t k = 0; k < count; ++k) {
      loadgen::Sample s;
      s.intended_ns = start_ns + static_cast<int64_t>(3 * k + index + 1) * 1000;
      s.latency_ns = static_cast<int64_t>(index + 1) * 1000;
      r.result.samples.push_back(s);
    }
    r.result.scheduled = r.result.sent = r.result.completed = count;
    r.result.first_intended_ns = r.result.samples.front().intended_ns;
    r.result.last_intended_ns = r.result.samples.back().intended_ns;
    return r;
  };
}

// One agent: nabla-loadd's methods on a loopback RpcServer run by a thread
// of its own; `wrap` may replace a method's handler by one around it.
class InProcessAgent {
 public:
  using Wrap = std::function<common::RpcServer::Handler(const std::string& method,
                                                        common::RpcServer::Handler real)>;
  InProcessAgent(RoundBody body, const Wrap& wrap)
      : service_(ServiceOptions{}, std::move(body), [] { return common::monotonic_ns(); }) {
    common::RpcServerOptions o;
    o.daemon = common::kLoaddKeyName;
    o.keys = {test_key()};
    server_ = std::make_unique<common::RpcServer>(io_, o);
    for (auto& [name, handler] : method_handlers(service_, common::monotonic_ns())) {
      server_->add_method(name, wrap ? wrap(name, std::move(handler)) : std::move(handler));
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  ~InProcessAgent() {
    server_->stop();
    thread_.join();
    server_.reset();
    service_.stop_all();
  }
  AgentAddress address() const { return {"127.0.0.1", server_->port()}; }
  std::string name() const { return address().name(); }
  LoadService& service() { return service_; }

 private:
  asio::io_context io_;
  LoadService service_;
  std::unique_ptr<common::RpcServer> server_;
  std::thread thread_;
};

AgentPoolOptions pool_options() {
  AgentPoolOptions o;
  o.owner = "pool-test";
  o.lease = 5s;
  o.poll_interval = 10ms;
  o.key_for = [](const AgentAddress&) { return test_key(); };
  return o;
}

loadgen::RoundRequest request() {
  loadgen::RoundRequest r;
  r.engine.host = "127.0.0.1";
  r.engine.port = 9;
  r.engine.connections = 2;
  r.engine.schedule.kind = loadgen::ScheduleKind::kFixed;
  r.engine.schedule.rate_per_s = 300;
  r.engine.duration_ns = 100'000'000;
  r.duration_ns = 100'000'000;
  r.lead_ns = 10'000'000;
  return r;
}

// Agent 1 returns more than a page of samples, so its fetch takes several calls.
std::size_t samples_of(std::size_t agent) {
  return agent == 1 ? protocol::kMaxSamplesPage + 7 : 5 + agent;
}

TEST(AgentPool, FetchesEveryAgentAtOnceAndMergesExactlyInTheAgentsOrder) {
  // Every agent's load.result waits until all three have been asked: one
  // agent fetched after another would wait out the bound alone.
  Rendezvous all_asked(kAgents);
  std::atomic<int> met{0};
  const InProcessAgent::Wrap wrap = [&](const std::string& method,
                                        common::RpcServer::Handler real) {
    if (method != protocol::LoadResultParams::kMethod) return real;
    return common::RpcServer::Handler([&, real](const nlohmann::json& params) {
      if (all_asked.meet(4s)) ++met;
      return real(params);
    });
  };
  std::vector<std::unique_ptr<InProcessAgent>> agents;
  std::vector<AgentAddress> addresses;
  for (std::size_t i = 0; i < kAgents; ++i) {
    agents.push_back(std::make_unique<InProcessAgent>(samples_body(i, samples_of(i)), wrap));
    addresses.push_back(agents.back()->address());
  }
  AgentPool pool(addresses, pool_options());
  const loadgen::RoundOutcome outcome = pool.runner()(request());
  EXPECT_EQ(met.load(), static_cast<int>(kAgents));

  ASSERT_EQ(outcome.agents.size(), kAgents);
  std::size_t total = 0;
  for (std::size_t i = 0; i < kAgents; ++i) {
    EXPECT_EQ(outcome.agents[i].agent, agents[i]->name());
    EXPECT_EQ(outcome.agents[i].samples, samples_of(i));
    EXPECT_EQ(outcome.agents[i].completed, samples_of(i));
    total += samples_of(i);
  }
  EXPECT_EQ(outcome.merged.completed, total);
  const auto& merged = outcome.merged.samples;
  ASSERT_EQ(merged.size(), total);
  EXPECT_TRUE(std::is_sorted(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
    return a.intended_ns < b.intended_ns;
  }));
  // Each sample where its agent put it, on the controller's clock.
  std::vector<std::size_t> seen(kAgents, 0);
  for (const loadgen::Sample& s : merged) {
    const auto agent = static_cast<std::size_t>(s.latency_ns / 1000 - 1);
    ASSERT_LT(agent, kAgents);
    const int64_t offset = s.intended_ns - outcome.start_ns;
    EXPECT_EQ(offset, static_cast<int64_t>(3 * seen[agent] + agent + 1) * 1000);
    ++seen[agent];
  }
  for (std::size_t i = 0; i < kAgents; ++i) EXPECT_EQ(seen[i], samples_of(i));
  // Each agent was freed for the next round.
  for (const auto& a : agents) EXPECT_FALSE(a->service().current());
}

TEST(AgentPool, AFailedFetchNamesItsAgentAndLeavesNoRoundOnAny) {
  const InProcessAgent::Wrap broken = [](const std::string& method,
                                         common::RpcServer::Handler real) {
    if (method != protocol::LoadSamplesParams::kMethod) return real;
    return common::RpcServer::Handler(
        [](const nlohmann::json&) -> nlohmann::json { throw std::runtime_error("disk gone"); });
  };
  std::vector<std::unique_ptr<InProcessAgent>> agents;
  std::vector<AgentAddress> addresses;
  for (std::size_t i = 0; i < kAgents; ++i) {
    agents.push_back(std::make_unique<InProcessAgent>(samples_body(i, samples_of(i)),
                                                      i == 2 ? broken : InProcessAgent::Wrap{}));
    addresses.push_back(agents.back()->address());
  }
  AgentPool pool(addresses, pool_options());
  try {
    pool.runner()(request());
    FAIL() << "the round succeeded";
  } catch (const loadgen::AgentFailure& e) {
    EXPECT_EQ(e.agent(), agents[2]->name());
    EXPECT_NE(std::string(e.what()).find("load.samples: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("disk gone"), std::string::npos) << e.what();
  }
  for (const auto& a : agents) EXPECT_FALSE(a->service().current());
}

}  // namespace
}  // namespace nabla::loadd
