// The controller with its rounds run by load agents (ControllerConfig::
// runner): a fake runner stands for three agents on other machines, each
// with its own clock, and returns synthetic rounds (rounds_test_support.hh)
// in virtual time. What is tested is the controller's side of the seam: the
// requests it makes, how it checks an agents' round, what it drops, and the
// per-agent summary.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "nabla/loadgen/controller.hh"
#include "nabla/loadgen/rounds.hh"
#include "rounds_test_support.hh"

namespace nabla::loadgen {
namespace {

struct FakeAgent {
  std::string name;
  AgentKind kind;
  int64_t clock_offset_ns;  // its clock minus the controller's
  int64_t base_latency_ns;
};

// Three agents whose rounds are synthetic Poisson rounds at their share.
// `fail` may turn an agent's own check into a failure for a round.
class FakeAgents {
 public:
  std::vector<FakeAgent> agents = {
      {"10.0.0.2:7313", AgentKind::kSymmetric, 5'000'000'000'000, 100'000},
      {"10.0.0.3:7313", AgentKind::kThroughput, -3'000'000'000, 100'000},
      {"10.0.0.4:7313", AgentKind::kLatency, 77'000'000'000, 100'000}};
  int64_t now_ns = 1'000'000'000;  // the controller's virtual clock
  std::vector<RoundRequest> requests;
  // (round index, agent index) whose own check fails.
  std::set<std::pair<int, std::size_t>> fail;
  // Throw AgentFailure at this round.
  int throw_at = -1;

  int64_t clock() const { return now_ns; }

  RoundOutcome run(const RoundRequest& req) {
    requests.push_back(req);
    if (req.index == throw_at) throw AgentFailure(agents[1].name, "connection reset");
    RoundOutcome out;
    out.start_ns = now_ns + req.lead_ns;
    std::vector<AgentKind> kinds;
    for (const auto& a : agents) kinds.push_back(a.kind);
    const auto shares = split_rate(req.engine.schedule.rate_per_s, kinds);
    for (std::size_t i = 0; i < agents.size(); ++i) {
      const EngineConfig e = agent_engine(req.engine, agents[i].kind, shares[i], i);
      const int64_t agent_start = out.start_ns + agents[i].clock_offset_ns;
      testing::SyntheticRound s;
      s.rate_per_s = shares[i];
      s.start_ns = agent_start;
      s.duration_ns = req.duration_ns;
      s.seed = e.seed;
      s.base_latency_ns = agents[i].base_latency_ns;
      s.record_samples = e.record_samples;
      EngineResult r = testing::synthetic_round(s);
      AgentRound a;
      a.agent = agents[i].name;
      a.kind = agents[i].kind;
      a.rate_per_s = shares[i];
      a.scheduled = r.scheduled;
      a.sent = r.sent;
      a.completed = r.completed;
      a.late = r.late;
      a.samples = r.samples.size();
      a.check = check_calibration(r, e, CalibrationLimits{});
      if (fail.count({req.index, i})) {
        a.check.late_ok = false;
        a.check.reasons.push_back("late sends: the load generator itself got to 9.0% of requests");
      }
      a.timer_lateness = r.timer_lateness;
      out.agents.push_back(std::move(a));
      shift_times(r, out.start_ns - agent_start);
      merge_into(out.merged, std::move(r));
    }
    sort_samples(out.merged);
    now_ns = out.start_ns + req.duration_ns + 5'000'000;  // the round, then its drain
    return out;
  }
};

ControllerConfig agents_config(FakeAgents& fake) {
  ControllerConfig c;
  c.engine.threads = 1;
  c.engine.connections = 4;
  c.engine.max_outstanding = 4;
  // The latency agent's 5% is then 1000 rps: a round of 0.5 s gives it ~500
  // samples, enough for its own rate check (answered over the span versus
  // (scheduled - 1) over it differ by ~1/n).
  c.engine.schedule.rate_per_s = 20'000;
  c.engine.seed = 9;
  c.percentiles = {50, 99};
  c.ci_width_ns = 50'000;
  c.calibration_ns = 500'000'000;
  c.samples_per_round = 2000;
  c.min_round_ns = 500'000'000;
  c.max_duration_ns = 20'000'000'000;
  c.runner = [&fake](const RoundRequest& r) { return fake.run(r); };
  return c;
}

TEST(ControllerAgents, ThreeAgentsConvergeAndEveryAgentIsAccountedFor) {
  FakeAgents fake;
  const ControllerConfig c = agents_config(fake);
  const ControllerResult r = run_controller(c, [&] { return fake.clock(); });
  ASSERT_TRUE(r.ok) << (r.reasons.empty() ? "" : r.reasons.front());
  ASSERT_GE(r.rounds.size(), 2u);
  EXPECT_TRUE(r.rounds.front().calibration);

  // Every round went through the runner with the whole workload.
  ASSERT_EQ(fake.requests.size(), r.rounds.size());
  std::set<uint64_t> seeds;
  for (std::size_t i = 0; i < fake.requests.size(); ++i) {
    const auto& q = fake.requests[i];
    EXPECT_EQ(q.index, static_cast<int>(i));
    EXPECT_EQ(q.calibration, r.rounds[i].calibration);
    EXPECT_EQ(q.duration_ns, r.rounds[i].duration_ns);
    EXPECT_EQ(q.engine.duration_ns, q.duration_ns);
    EXPECT_EQ(q.lead_ns, c.round_lead_ns);
    EXPECT_EQ(q.engine.schedule.rate_per_s, 20'000);
    EXPECT_TRUE(q.engine.record_samples);
    seeds.insert(q.engine.seed);
  }
  EXPECT_EQ(seeds.size(), fake.requests.size());  // a fresh schedule per round

  // The per-agent summary adds up exactly to the run's counts.
  ASSERT_EQ(r.agents.size(), 3u);
  uint64_t sent = 0, completed = 0;
  double rate = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const AgentSummary& a = r.agents[i];
    EXPECT_EQ(a.agent, fake.agents[i].name);
    EXPECT_EQ(a.kind, fake.agents[i].kind);
    EXPECT_EQ(a.rounds, static_cast<int>(r.rounds.size()));
    EXPECT_EQ(a.rounds_failed, 0);
    EXPECT_EQ(a.completed, a.sent);
    EXPECT_EQ(a.timer_lateness.count(), a.sent);
    sent += a.sent;
    completed += a.completed;
    rate += a.rate_per_s;
  }
  EXPECT_EQ(rate, 20'000);
  EXPECT_EQ(r.agents[0].rate_per_s, 9500);
  EXPECT_EQ(r.agents[2].rate_per_s, 1000);
  EXPECT_EQ(r.agents[1].samples, 0u);  // throughput: no samples
  EXPECT_GT(r.agents[2].samples, 0u);
  EXPECT_EQ(sent, r.sent);
  EXPECT_EQ(completed, r.completed);
  EXPECT_EQ(r.timer_lateness.count(), r.sent);

  // The series holds only the latency and symmetric agents' samples, on
  // the controller's clock, each round without its warm-up.
  std::size_t used = 0;
  for (const auto& round : r.rounds) used += round.samples_used;
  EXPECT_EQ(r.samples, used);
  EXPECT_LE(r.samples, r.agents[0].samples + r.agents[2].samples);
  EXPECT_GT(r.samples, 0u);
  for (const auto& s : r.kept_samples) {
    EXPECT_GE(s.intended_ns, 1'000'000'000);
    EXPECT_LE(s.intended_ns, fake.now_ns);
  }
  EXPECT_TRUE(std::is_sorted(
      r.kept_samples.begin(), r.kept_samples.end(),
      [](const Sample& a, const Sample& b) { return a.intended_ns < b.intended_ns; }));
  // Throughput over the rounds used: every agent's completions.
  EXPECT_NEAR(r.throughput_rps, 20'000, 20'000 * 0.05);
  ASSERT_EQ(r.percentiles.size(), 2u);
  EXPECT_GE(r.percentiles[0].value_ns, 100'000);
  EXPECT_LE(r.percentiles[0].value_ns, 140'000);
}

TEST(ControllerAgents, OneAgentsFailingCheckDropsTheRoundAndNamesIt) {
  FakeAgents fake;
  fake.fail = {{1, 2}};  // the first measurement round: the latency agent
  const ControllerConfig c = agents_config(fake);
  const ControllerResult r = run_controller(c, [&] { return fake.clock(); });
  ASSERT_GE(r.rounds.size(), 3u);
  const RoundRecord& dropped = r.rounds[1];
  EXPECT_FALSE(dropped.calibration);
  EXPECT_FALSE(dropped.check.passed());
  EXPECT_FALSE(dropped.check.late_ok);
  EXPECT_EQ(dropped.samples_used, 0u);
  ASSERT_EQ(dropped.check.reasons.size(), 1u);
  EXPECT_EQ(dropped.check.reasons[0],
            "agent 10.0.0.4:7313: late sends: the load generator itself got to 9.0% of requests");
  const bool noted = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.rfind("round 1 dropped: agent 10.0.0.4:7313: late sends", 0) == 0;
  });
  EXPECT_TRUE(noted);
  // One dropped round alone does not end the run.
  EXPECT_TRUE(r.ok) << (r.reasons.empty() ? "" : r.reasons.front());
  ASSERT_EQ(r.agents.size(), 3u);
  EXPECT_EQ(r.agents[2].rounds_failed, 1);
  EXPECT_EQ(r.agents[2].last_reasons.size(), 1u);
  EXPECT_EQ(r.agents[0].rounds_failed, 0);
  EXPECT_EQ(r.agents[1].rounds_failed, 0);
  for (const auto& a : r.agents) EXPECT_EQ(a.rounds, static_cast<int>(r.rounds.size()));
}

TEST(ControllerAgents, TwoFailingRoundsInARowEndTheRunWithTheAgentsReasons) {
  FakeAgents fake;
  fake.fail = {{1, 0}, {2, 0}};
  const ControllerResult r = run_controller(agents_config(fake), [&] { return fake.clock(); });
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0].rfind("agent 10.0.0.2:7313: late sends", 0), 0u) << r.reasons[0];
  EXPECT_EQ(r.rounds.size(), 3u);
  EXPECT_EQ(r.agents[0].rounds_failed, 2);
}

TEST(ControllerAgents, AFailingCalibrationIsRetriedLikeALocalOne) {
  FakeAgents fake;
  fake.fail = {{0, 1}};
  const ControllerResult r = run_controller(agents_config(fake), [&] { return fake.clock(); });
  ASSERT_GE(r.rounds.size(), 3u);
  EXPECT_TRUE(r.rounds[0].calibration);
  EXPECT_FALSE(r.rounds[0].check.passed());
  EXPECT_TRUE(r.rounds[1].calibration);
  EXPECT_TRUE(r.rounds[1].check.passed())
      << (r.rounds[1].check.reasons.empty() ? "" : r.rounds[1].check.reasons.front());
  EXPECT_TRUE(r.ok);
}

TEST(ControllerAgents, AnAgentFailureEndsTheRunWithWhatWasMeasured) {
  FakeAgents fake;
  fake.throw_at = 1;
  const ControllerConfig c = agents_config(fake);
  const ControllerResult r = run_controller(c, [&] { return fake.clock(); });
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_EQ(*r.failure, "agent 10.0.0.3:7313: connection reset");
  EXPECT_FALSE(r.ok);
  ASSERT_FALSE(r.reasons.empty());
  EXPECT_EQ(r.reasons.front(), *r.failure);
  EXPECT_EQ(fake.requests.size(), 2u);
  // The calibration round before the failure is kept, with every agent's part.
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_TRUE(r.rounds[0].calibration);
  ASSERT_EQ(r.agents.size(), 3u);
  uint64_t sent = 0;
  for (const auto& a : r.agents) {
    EXPECT_EQ(a.rounds, 1);
    sent += a.sent;
  }
  EXPECT_EQ(sent, r.sent);
}

TEST(ControllerAgents, ARunnerWithoutAgentsIsCheckedLikeOneEngine) {
  // One synthetic engine whose connection setup shifted its schedule: the
  // warm-up is dropped from the shifted start, and no agent is summarised.
  int64_t now = 1'000'000'000;
  const int64_t shift = 30'000'000;
  std::vector<std::pair<int64_t, std::size_t>> kept_after;  // (first kept time, samples kept)
  ControllerConfig c;
  c.engine.connections = 4;
  c.engine.max_outstanding = 4;
  c.engine.schedule.rate_per_s = 5000;
  c.percentiles = {50};
  c.ci_width_ns = 50'000;
  c.calibration_ns = 500'000'000;
  c.max_duration_ns = 10'000'000'000;
  c.runner = [&](const RoundRequest& req) {
    RoundOutcome out;
    out.start_ns = now + req.lead_ns;
    testing::SyntheticRound s;
    s.rate_per_s = req.engine.schedule.rate_per_s;
    s.start_ns = out.start_ns + shift;
    s.duration_ns = req.duration_ns;
    s.seed = req.engine.seed;
    out.merged = testing::synthetic_round(s);
    out.merged.setup.start_shift_ns = shift;
    const int64_t from = out.start_ns + shift + c.round_warmup_ns;
    kept_after.emplace_back(from, static_cast<std::size_t>(std::count_if(
                                      out.merged.samples.begin(), out.merged.samples.end(),
                                      [&](const Sample& x) { return x.intended_ns >= from; })));
    now = s.start_ns + req.duration_ns;
    return out;
  };
  const ControllerResult r = run_controller(c, [&] { return now; });
  ASSERT_TRUE(r.ok) << (r.reasons.empty() ? "" : r.reasons.front());
  EXPECT_TRUE(r.agents.empty());
  ASSERT_EQ(kept_after.size(), r.rounds.size());
  for (std::size_t i = 1; i < r.rounds.size(); ++i) {
    EXPECT_EQ(r.rounds[i].samples_used, kept_after[i].second) << i;
  }
  EXPECT_TRUE(r.rounds[0].check.ad.applied);
  EXPECT_EQ(r.rounds[0].check.target_rps, 5000);
}

}  // namespace
}  // namespace nabla::loadgen
