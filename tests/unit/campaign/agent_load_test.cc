// The load agents' LoadRunner over a fake RoundRunner (no agent): the round
// it asks for, the merged result it returns, an agent's failure rethrown
// from take(), and a run destroyed before take() stopping the agents.
#include "nabla/campaign/agent_load.hh"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "nabla/common/clock.hh"

namespace nabla::campaign {
namespace {

std::int64_t now_ns() {
  return common::monotonic_ns();
}

TEST(AgentLoadRunner, RunsOneRoundAndReturnsTheMergedResult) {
  loadgen::RoundRequest seen;
  loadgen::RoundRunner runner = [&](const loadgen::RoundRequest& r) {
    seen = r;
    loadgen::RoundOutcome out;
    out.merged.scheduled = 7;
    out.merged.samples.push_back(loadgen::Sample{});
    out.merged.samples.back().intended_ns = r.lead_ns;
    return out;
  };
  int stops = 0;
  AgentLoadRunner load(
      runner, [&] { ++stops; }, now_ns);
  loadgen::EngineConfig config;
  config.duration_ns = 3'000'000'000;
  config.schedule.rate_per_s = 400;
  const std::int64_t start = now_ns() + 500'000'000;
  auto run = load.start(config, start);
  const loadgen::EngineResult r = run->take();
  EXPECT_EQ(r.scheduled, 7u);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(seen.duration_ns, 3'000'000'000);
  EXPECT_EQ(seen.engine.duration_ns, 3'000'000'000);
  EXPECT_DOUBLE_EQ(seen.engine.schedule.rate_per_s, 400);  // the whole rate: the pool splits it
  // The lead is from when the round was asked for: start_ns on this clock.
  EXPECT_GT(seen.lead_ns, 400'000'000);
  EXPECT_LE(seen.lead_ns, 500'000'000);
  run.reset();
  EXPECT_EQ(stops, 0);  // taken: nothing left to stop
  // A start already past: no negative lead.
  auto late = load.start(config, now_ns() - 1'000'000'000);
  late->take();
  EXPECT_EQ(seen.lead_ns, 0);
  EXPECT_EQ(seen.index, 1);
}

TEST(AgentLoadRunner, AnAgentsFailureIsRethrownFromTake) {
  AgentLoadRunner load(
      [](const loadgen::RoundRequest&) -> loadgen::RoundOutcome {
        throw loadgen::AgentFailure("10.0.0.9:7313",
                                    "load.start: engine.duration_ns: 90 s is above this agent's "
                                    "--max-round-s 60 s");
      },
      [] {}, now_ns);
  auto run = load.start(loadgen::EngineConfig{}, now_ns());
  try {
    run->take();
    FAIL() << "no failure";
  } catch (const loadgen::AgentFailure& e) {
    EXPECT_EQ(e.agent(), "10.0.0.9:7313");
    EXPECT_NE(std::string(e.what()).find("agent 10.0.0.9:7313: load.start"), std::string::npos);
  }
}

TEST(AgentLoadRunner, ARunDestroyedBeforeTakeStopsTheAgents) {
  // A round that runs until stopped, as an agent's polled round does.
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::atomic<int> stops{0};
  std::atomic<bool> running{false};
  AgentLoadRunner load(
      [&](const loadgen::RoundRequest&) -> loadgen::RoundOutcome {
        running.store(true);
        std::unique_lock lock(mu);
        if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return stopped; })) {
          return loadgen::RoundOutcome();
        }
        throw loadgen::AgentFailure("10.0.0.9:7313", "round stopped");
      },
      [&] {
        ++stops;
        std::lock_guard lock(mu);
        stopped = true;
        cv.notify_all();
      },
      now_ns);
  loadgen::EngineConfig config;
  config.duration_ns = 60'000'000'000;
  auto run = load.start(config, now_ns());
  while (!running.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto t0 = std::chrono::steady_clock::now();
  run.reset();  // unwinding: no take()
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_GE(stops.load(), 1);
}

TEST(AgentLoadRunner, AStopBeforeTheRoundIsKnownIsRepeated) {
  // The first stop comes while the round is still being started (the pool
  // does not know its id yet and stops nothing); the next one stops it.
  std::atomic<int> stops{0};
  AgentLoadRunner load(
      [&](const loadgen::RoundRequest&) -> loadgen::RoundOutcome {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (stops.load() < 2 && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        throw loadgen::AgentFailure("10.0.0.9:7313", "round stopped");
      },
      [&] { ++stops; }, now_ns);
  auto run = load.start(loadgen::EngineConfig{}, now_ns());
  const auto t0 = std::chrono::steady_clock::now();
  run.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_GE(stops.load(), 2);
}

}  // namespace
}  // namespace nabla::campaign
