// The arithmetic of the load-agent seam (rounds.hh): how the rate is split,
// what each agent runs, how the agents' rounds merge and how their checks
// combine. No sockets; rounds are synthetic (rounds_test_support.hh).
#include "nabla/loadgen/rounds.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

#include "rounds_test_support.hh"

namespace nabla::loadgen {
namespace {

using K = AgentKind;

double sum_in_order(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

TEST(AgentKind, NamesRoundTrip) {
  for (K k : {K::kSymmetric, K::kThroughput, K::kLatency}) {
    EXPECT_EQ(parse_agent_kind(to_string(k)), k);
  }
  EXPECT_STREQ(to_string(K::kLatency), "latency");
  EXPECT_FALSE(parse_agent_kind("Latency"));
  EXPECT_FALSE(parse_agent_kind(""));
  EXPECT_FALSE(parse_agent_kind("lat"));
}

TEST(SplitRate, LatencyAgentsTogetherSendFivePercentTheOthersTheRest) {
  const auto shares = split_rate(2000, {K::kThroughput, K::kLatency, K::kSymmetric, K::kLatency});
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_DOUBLE_EQ(shares[1], 50);
  EXPECT_DOUBLE_EQ(shares[3], 50);
  EXPECT_DOUBLE_EQ(shares[0], 950);
  EXPECT_DOUBLE_EQ(shares[2], 950);
  EXPECT_EQ(sum_in_order(shares), 2000);
  const auto custom = split_rate(1000, {K::kLatency, K::kThroughput}, 0.2);
  EXPECT_DOUBLE_EQ(custom[0], 200);
  EXPECT_DOUBLE_EQ(custom[1], 800);
}

TEST(SplitRate, OneGroupAloneSharesEverythingEvenly) {
  const auto latency = split_rate(900, {K::kLatency, K::kLatency, K::kLatency});
  for (double s : latency) EXPECT_DOUBLE_EQ(s, 300);
  EXPECT_EQ(sum_in_order(latency), 900);
  const auto others = split_rate(900, {K::kThroughput, K::kSymmetric});
  for (double s : others) EXPECT_DOUBLE_EQ(s, 450);
  EXPECT_EQ(split_rate(123.25, {K::kSymmetric}), std::vector<double>{123.25});
  EXPECT_EQ(split_rate(123.25, {K::kLatency}), std::vector<double>{123.25});
}

TEST(SplitRate, SharesSumToTheTotalExactly) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> rate(1, 5e6);
  std::uniform_int_distribution<int> kind(0, 2);
  std::uniform_int_distribution<int> count(1, 12);
  std::uniform_real_distribution<double> share(0.001, 0.999);
  for (int i = 0; i < 20000; ++i) {
    std::vector<K> kinds(static_cast<std::size_t>(count(rng)));
    for (auto& k : kinds) k = static_cast<K>(kind(rng));
    const double total = i % 2 ? rate(rng) : std::floor(rate(rng));
    const double latency_share = i % 3 ? 0.05 : share(rng);
    const auto shares = split_rate(total, kinds, latency_share);
    ASSERT_EQ(shares.size(), kinds.size());
    ASSERT_EQ(sum_in_order(shares), total) << i;
    for (std::size_t a = 0; a < kinds.size(); ++a) {
      ASSERT_GT(shares[a], 0);
      for (std::size_t b = 0; b < kinds.size(); ++b) {
        // Agents of one group share evenly (up to the ulps the sum took up).
        if ((kinds[a] == K::kLatency) == (kinds[b] == K::kLatency)) {
          ASSERT_NEAR(shares[a], shares[b], 1e-9 * total);
        }
      }
    }
  }
}

TEST(SplitRate, RefusesNoAgentABadShareOrRate) {
  EXPECT_THROW(split_rate(1000, {}), std::invalid_argument);
  EXPECT_THROW(split_rate(1000, {K::kLatency}, 0), std::invalid_argument);
  EXPECT_THROW(split_rate(1000, {K::kLatency}, 1), std::invalid_argument);
  EXPECT_THROW(split_rate(1000, {K::kLatency}, -0.1), std::invalid_argument);
  EXPECT_THROW(split_rate(1000, {K::kLatency}, NAN), std::invalid_argument);
  EXPECT_THROW(split_rate(0, {K::kLatency}), std::invalid_argument);
  EXPECT_THROW(split_rate(-5, {K::kThroughput}), std::invalid_argument);
}

EngineConfig whole_engine() {
  EngineConfig e;
  e.threads = 2;
  e.connections = 16;
  e.max_outstanding = 4;
  e.schedule.rate_per_s = 10'000;
  e.seed = 42;
  e.record_samples = true;
  return e;
}

TEST(AgentEngine, EachKindRunsItsShare) {
  const EngineConfig whole = whole_engine();
  const EngineConfig sym = agent_engine(whole, K::kSymmetric, 4750, 0);
  EXPECT_EQ(sym.schedule.rate_per_s, 4750);
  EXPECT_TRUE(sym.record_samples);
  EXPECT_EQ(sym.connections, 16);
  EXPECT_EQ(sym.threads, 2);
  EXPECT_EQ(sym.max_outstanding, 4);

  const EngineConfig tput = agent_engine(whole, K::kThroughput, 4750, 1);
  EXPECT_EQ(tput.schedule.rate_per_s, 4750);
  EXPECT_FALSE(tput.record_samples);
  EXPECT_EQ(tput.connections, 16);

  const EngineConfig lat = agent_engine(whole, K::kLatency, 500, 2);
  EXPECT_EQ(lat.schedule.rate_per_s, 500);
  EXPECT_TRUE(lat.record_samples);
  EXPECT_EQ(lat.connections, lat.threads);
  EXPECT_EQ(lat.connections, 2);
  EXPECT_EQ(lat.max_outstanding, 4);

  EXPECT_THROW(agent_engine(whole, K::kLatency, 0, 0), std::invalid_argument);
}

TEST(AgentEngine, SeedsAreDistinctPerAgentAndReproducible) {
  const EngineConfig whole = whole_engine();
  std::set<uint64_t> seeds;
  for (std::size_t i = 0; i < 1000; ++i) {
    seeds.insert(agent_engine(whole, K::kSymmetric, 1, i).seed);
  }
  EXPECT_EQ(seeds.size(), 1000u);
  EXPECT_EQ(agent_engine(whole, K::kSymmetric, 1, 3).seed,
            agent_engine(whole, K::kLatency, 9, 3).seed);
  EngineConfig next = whole;
  ++next.seed;  // the controller's next round
  EXPECT_NE(agent_engine(next, K::kSymmetric, 1, 0).seed,
            agent_engine(whole, K::kSymmetric, 1, 0).seed);
  EXPECT_NE(agent_engine(whole, K::kSymmetric, 1, 0).seed,
            agent_engine(whole, K::kSymmetric, 1, 1).seed);
}

EngineResult part(double rate, int64_t start, uint64_t seed, int64_t base_latency) {
  testing::SyntheticRound s;
  s.rate_per_s = rate;
  s.start_ns = start;
  s.seed = seed;
  s.base_latency_ns = base_latency;
  s.types = 2;
  s.duration_ns = 500'000'000;
  return testing::synthetic_round(s);
}

TEST(MergeInto, CountsAndHistogramsAddExactly) {
  std::vector<EngineResult> parts = {part(3000, 1'000'000'000, 1, 100'000),
                                     part(2000, 1'000'000'000, 2, 900'000),
                                     part(500, 1'000'050'000, 3, 5'000'000)};
  parts[1].errors.timeout = 3;
  parts[1].errors.grpc_status[14] = 2;
  parts[2].errors.timeout = 1;
  parts[2].slot_late = 4;
  parts[0].reconnects = 5;
  parts[2].setup.start_shift_ns = 7'000;
  analysis::LatencyHistogram all;
  uint64_t scheduled = 0, completed = 0, type0 = 0;
  for (const auto& p : parts) {
    for (const auto& s : p.samples) all.record(s.latency_ns);
    scheduled += p.scheduled;
    completed += p.completed;
    type0 += p.by_type[0].completed;
  }
  EngineResult merged;
  for (auto& p : parts) merge_into(merged, p);
  sort_samples(merged);
  EXPECT_EQ(merged.scheduled, scheduled);
  EXPECT_EQ(merged.sent, scheduled);
  EXPECT_EQ(merged.completed, completed);
  EXPECT_EQ(merged.samples.size(), completed);
  ASSERT_EQ(merged.by_type.size(), 2u);
  EXPECT_EQ(merged.by_type[0].completed, type0);
  EXPECT_EQ(merged.errors.timeout, 4u);
  EXPECT_EQ(merged.errors.grpc_status.at(14), 2u);
  EXPECT_EQ(merged.slot_late, 4u);
  EXPECT_EQ(merged.reconnects, 5u);
  EXPECT_EQ(merged.setup.start_shift_ns, 7'000);  // the largest
  EXPECT_EQ(merged.type_names, parts[0].type_names);
  EXPECT_EQ(merged.thread_cpus.size(), 3u);
  EXPECT_EQ(merged.first_intended_ns, 1'000'000'000);
  EXPECT_EQ(merged.last_intended_ns, std::max({parts[0].last_intended_ns, parts[1].last_intended_ns,
                                               parts[2].last_intended_ns}));
  // The merged histogram is the one histogram of every value.
  EXPECT_EQ(merged.latency.parts(), all.parts());
  EXPECT_EQ(merged.latency.count(), completed);
  for (double p : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(merged.latency.percentile(p), all.percentile(p)) << p;
  }
  EXPECT_EQ(merged.lateness.count(), scheduled);
  EXPECT_EQ(merged.timer.wakeups, scheduled);
  EXPECT_TRUE(std::is_sorted(
      merged.samples.begin(), merged.samples.end(),
      [](const Sample& a, const Sample& b) { return a.intended_ns < b.intended_ns; }));
}

TEST(MergeInto, AnEmptyPartChangesNoTimes) {
  EngineResult merged = part(1000, 5'000'000'000, 4, 100'000);
  const int64_t first = merged.first_intended_ns, last = merged.last_intended_ns;
  merge_into(merged, EngineResult());
  EXPECT_EQ(merged.first_intended_ns, first);
  EXPECT_EQ(merged.last_intended_ns, last);
  EngineResult from_empty;
  merge_into(from_empty, EngineResult());
  merge_into(from_empty, part(1000, 5'000'000'000, 4, 100'000));
  EXPECT_EQ(from_empty.first_intended_ns, first);
}

TEST(ShiftAndSort, AgentTimesMoveOntoTheControllersClockAndSortStably) {
  // Agent clocks are far apart; after the shift both rounds start at the
  // controller's start.
  const int64_t controller_start = 2'000'000'000;
  EngineResult a = part(1000, 9'000'000'000'000, 5, 100'000);
  EngineResult b = part(1000, 17'000, 6, 300'000);
  a.intended_ns = {9'000'000'000'000, 9'000'000'000'100};
  const int64_t a_first = a.samples.front().intended_ns;
  const int64_t a_latency = a.samples.front().latency_ns;
  shift_times(a, controller_start - 9'000'000'000'000);
  shift_times(b, controller_start - 17'000);
  EXPECT_EQ(a.first_intended_ns, controller_start);
  EXPECT_EQ(b.first_intended_ns, controller_start);
  EXPECT_EQ(a.samples.front().intended_ns, a_first - 9'000'000'000'000 + controller_start);
  EXPECT_EQ(a.samples.front().latency_ns, a_latency);  // durations never move
  EXPECT_EQ(a.intended_ns, (std::vector<int64_t>{controller_start, controller_start + 100}));

  // Equal intended times keep the order they were merged in.
  EngineResult merged;
  EngineResult x, y;
  x.scheduled = y.scheduled = 2;
  x.samples = {{.intended_ns = 10, .latency_ns = 1}, {.intended_ns = 30, .latency_ns = 2}};
  y.samples = {{.intended_ns = 10, .latency_ns = 3}, {.intended_ns = 20, .latency_ns = 4}};
  merge_into(merged, x);
  merge_into(merged, y);
  sort_samples(merged);
  std::vector<int64_t> order;
  for (const auto& s : merged.samples) order.push_back(s.latency_ns);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 3, 4, 2}));
}

AgentRound agent_round(const std::string& name, K kind, double rate, const EngineResult& r,
                       const CalibrationLimits& limits) {
  EngineConfig e = whole_engine();
  e.schedule.rate_per_s = rate;
  AgentRound a;
  a.agent = name;
  a.kind = kind;
  a.rate_per_s = rate;
  a.scheduled = r.scheduled;
  a.sent = r.sent;
  a.completed = r.completed;
  a.late = r.late;
  a.samples = r.samples.size();
  a.check = check_calibration(r, e, limits);
  a.timer_lateness = r.timer_lateness;
  return a;
}

struct ThreeAgents {
  std::vector<AgentRound> agents;
  EngineResult merged;
};

ThreeAgents three_agents(const CalibrationLimits& limits) {
  ThreeAgents t;
  const std::vector<K> kinds = {K::kSymmetric, K::kThroughput, K::kLatency};
  const auto shares = split_rate(4000, kinds);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    EngineResult r = part(shares[i], 1'000'000'000, 10 + i, 100'000);
    const std::string name = "10.0.0." + std::to_string(i + 2) + ":7313";
    t.agents.push_back(agent_round(name, kinds[i], shares[i], r, limits));
    merge_into(t.merged, std::move(r));
  }
  sort_samples(t.merged);
  return t;
}

TEST(CombineChecks, AgentsThatPassTogetherPass) {
  const CalibrationLimits limits;
  const auto t = three_agents(limits);
  for (const auto& a : t.agents) ASSERT_TRUE(a.check.passed()) << a.agent;
  const CalibrationCheck c = combine_checks(t.agents, t.merged, 4000, limits);
  EXPECT_TRUE(c.passed()) << (c.reasons.empty() ? "" : c.reasons.front());
  EXPECT_TRUE(c.rate_ok);
  EXPECT_EQ(c.target_rps, 4000);
  double offered = 0, throughput = 0;
  int slots = 0;
  for (const auto& a : t.agents) {
    offered += a.check.offered_rps;
    throughput += a.check.throughput_rps;
    slots += a.check.closed_loop.slots;
  }
  EXPECT_DOUBLE_EQ(c.offered_rps, offered);
  EXPECT_DOUBLE_EQ(c.throughput_rps, throughput);
  EXPECT_NEAR(c.offered_rps, 4000, 4000 * 0.05);
  EXPECT_EQ(c.sent, t.merged.sent);
  EXPECT_EQ(c.closed_loop.slots, slots);
  EXPECT_FALSE(c.closed_loop.closed_loop);
  EXPECT_TRUE(c.ad.applied);
  EXPECT_TRUE(c.ad.passed);
  EXPECT_NE(c.ad.note.find("agent "), std::string::npos);
}

TEST(CombineChecks, OneFailingAgentFailsTheRoundWithItsName) {
  const CalibrationLimits limits;
  auto t = three_agents(limits);
  t.agents[1].check.late_ok = false;
  t.agents[1].check.reasons = {"late sends: the load generator itself got to 5.0% ..."};
  const CalibrationCheck c = combine_checks(t.agents, t.merged, 4000, limits);
  ASSERT_FALSE(c.passed());
  ASSERT_EQ(c.reasons.size(), 1u);
  EXPECT_EQ(c.reasons[0],
            "agent 10.0.0.3:7313: late sends: the load generator itself got to 5.0% ...");
  EXPECT_FALSE(c.late_ok);
  EXPECT_TRUE(c.rate_ok);
}

TEST(CombineChecks, ClosedLoopAndADFailuresOfAnyAgentCount) {
  const CalibrationLimits limits;
  auto t = three_agents(limits);
  t.agents[2].check.closed_loop.closed_loop = true;
  t.agents[0].check.ad.passed = false;
  t.agents[0].check.ad.statistic = 100;
  const CalibrationCheck c = combine_checks(t.agents, t.merged, 4000, limits);
  EXPECT_TRUE(c.closed_loop.closed_loop);
  EXPECT_FALSE(c.ad.passed);
  EXPECT_EQ(c.ad.statistic, 100);
  EXPECT_NE(c.ad.note.find("10.0.0.2:7313"), std::string::npos);
}

TEST(CombineChecks, TheAgentsTogetherShortOfTheRateFail) {
  const CalibrationLimits limits;
  auto t = three_agents(limits);
  // One agent far below its offered rate pulls the sum out of the
  // tolerance (its own check, left passing here, would say so too).
  t.agents[0].check.throughput_rps = t.agents[0].check.offered_rps * 0.5;
  const CalibrationCheck c = combine_checks(t.agents, t.merged, 4000, limits);
  EXPECT_FALSE(c.rate_ok);
  ASSERT_FALSE(c.reasons.empty());
  EXPECT_EQ(c.reasons.back().rfind("target load not reached", 0), 0u) << c.reasons.back();
}

TEST(AgentSummary, AddsRoundsUp) {
  AgentSummary s;
  AgentRound r;
  r.agent = "h:1";
  r.kind = K::kLatency;
  r.rate_per_s = 50;
  r.sent = 10;
  r.completed = 9;
  r.late = 1;
  r.errors.timeout = 1;
  r.samples = 9;
  r.timer_lateness.record(5);
  s.add(r);
  r.check.reasons = {"late sends: x"};
  s.add(r);
  EXPECT_EQ(s.agent, "h:1");
  EXPECT_EQ(s.kind, K::kLatency);
  EXPECT_EQ(s.rate_per_s, 50);
  EXPECT_EQ(s.rounds, 2);
  EXPECT_EQ(s.rounds_failed, 1);
  EXPECT_EQ(s.sent, 20u);
  EXPECT_EQ(s.completed, 18u);
  EXPECT_EQ(s.late, 2u);
  EXPECT_EQ(s.errors.timeout, 2u);
  EXPECT_EQ(s.samples, 18u);
  EXPECT_EQ(s.timer_lateness.count(), 2u);
  EXPECT_EQ(s.last_reasons, std::vector<std::string>{"late sends: x"});
}

TEST(AgentFailure, NamesTheAgent) {
  const AgentFailure f("10.0.0.9:7313", "connection refused");
  EXPECT_EQ(f.agent(), "10.0.0.9:7313");
  EXPECT_STREQ(f.what(), "agent 10.0.0.9:7313: connection refused");
}

}  // namespace
}  // namespace nabla::loadgen
