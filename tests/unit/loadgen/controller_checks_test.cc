// The controller's statistical checks on constructed rounds and series
// (inputs built here with seeded generators; expected values computed by
// hand or from the definitions).
#include "nabla/loadgen/controller_checks.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "nabla/analysis/percentile.hh"
#include "nabla/analysis/spearman.hh"

namespace nabla::loadgen {
namespace {

// A round whose n requests were intended at `gaps` and took `latency_ns`.
EngineResult round_with(const std::vector<int64_t>& intended, int64_t latency_ns,
                        int64_t lateness_ns = 0) {
  EngineResult r;
  for (int64_t t : intended) {
    Sample s;
    s.intended_ns = t;
    s.latency_ns = latency_ns;
    s.lateness_ns = lateness_ns;
    r.samples.push_back(s);
  }
  r.scheduled = r.sent = r.completed = intended.size();
  r.first_intended_ns = intended.front();
  r.last_intended_ns = intended.back();
  return r;
}

std::vector<int64_t> poisson_times(double rate, std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate / 1e9);
  std::vector<int64_t> t;
  double now = 1e9;
  for (std::size_t i = 0; i < n; ++i) {
    now += gap(rng);
    t.push_back(static_cast<int64_t>(now));
  }
  return t;
}

TEST(ControllerChecks, ThroughputRunsFromFirstIntendedToLastReceive) {
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(int64_t{i} * 1'000'000);
  // 1000 completions over 999 ms of sending + 1 ms for the last reply.
  EXPECT_NEAR(round_throughput(round_with(t, 1'000'000)), 1000.0, 1e-9);
  // A server that answers 1 s late loses half the throughput over that window.
  EXPECT_NEAR(round_throughput(round_with(t, 1'001'000'000)), 500.0, 1e-9);
}

TEST(ControllerChecks, AndersonDarlingPassesPoissonAndRejectsFixedGaps) {
  CalibrationLimits limits;
  auto poisson = round_with(poisson_times(2000, 3000, 7), 100'000);
  auto ad = check_inter_arrivals(poisson, ScheduleKind::kExponential, 0, limits);
  EXPECT_TRUE(ad.applied);
  EXPECT_TRUE(ad.passed) << "A2=" << ad.statistic;
  // 2999 gaps, at most 2000 tested: step ceil(2999/2000) = 2 -> 1500 gaps.
  EXPECT_EQ(ad.gaps, 1500u);
}

TEST(ControllerChecks, AndersonDarlingLooksAboveTheTimerResolution) {
  CalibrationLimits limits;
  // Poisson at 2000 rps sent by a loop that wakes 20-60 us late and then
  // sends everything due, 2 us apart: short gaps collapse to a few us.
  // Tested from 0 that is "not exponential"; above the 200 us resolution the
  // excesses are exponential again (memorylessness), up to the wake-up jitter.
  auto intended = poisson_times(2000, 6000, 13);
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int64_t> wake(20'000, 60'000);
  std::vector<int64_t> lateness(intended.size());
  int64_t awake_until = INT64_MIN;
  int64_t next_send = INT64_MIN;
  for (std::size_t i = 0; i < intended.size(); ++i) {
    if (intended[i] > awake_until) next_send = awake_until = intended[i] + wake(rng);
    lateness[i] = next_send - intended[i];
    next_send += 2'000;
  }
  auto times = intended;
  auto r = round_with(times, 100'000);
  for (std::size_t i = 0; i < r.samples.size(); ++i) r.samples[i].lateness_ns = lateness[i];
  auto raw = check_inter_arrivals(r, ScheduleKind::kExponential, 0, limits);
  EXPECT_FALSE(raw.passed) << "A2=" << raw.statistic;
  limits.ad_max_gaps = 500;
  auto above = check_inter_arrivals(r, ScheduleKind::kExponential, 200'000, limits);
  EXPECT_TRUE(above.passed) << "A2=" << above.statistic;
  EXPECT_DOUBLE_EQ(above.threshold_ns, 200'000);
  // ~4000 excesses (e^-0.4 of 6000 gaps), every 9th kept: at most 500.
  EXPECT_LE(above.gaps, 500u);
  EXPECT_GE(above.gaps, 420u);
}

TEST(ControllerChecks, AndersonDarlingThinsToAtMostMaxGaps) {
  CalibrationLimits limits;
  limits.ad_max_gaps = 1000;
  auto poisson = round_with(poisson_times(2000, 3001, 11), 100'000);
  auto ad = check_inter_arrivals(poisson, ScheduleKind::kExponential, 0, limits);
  // 3000 gaps, step ceil(3000/1000) = 3 -> gaps 0, 3, ..., 2997: 1000 of them.
  EXPECT_EQ(ad.gaps, 1000u);
  EXPECT_TRUE(ad.passed) << "A2=" << ad.statistic;

  std::vector<int64_t> fixed;
  for (int i = 0; i < 3001; ++i) fixed.push_back(int64_t{i} * 500'000);
  auto f =
      check_inter_arrivals(round_with(fixed, 100'000), ScheduleKind::kExponential, 200'000, limits);
  EXPECT_TRUE(f.applied);
  EXPECT_FALSE(f.passed);
  EXPECT_GT(f.statistic, 100.0);  // constant gaps are far from exponential
  EXPECT_NEAR(f.critical, 1.957 / (1 + 0.6 / 1000), 1e-3);
  EXPECT_DOUBLE_EQ(f.threshold_ns, 200'000);

  auto skipped = check_inter_arrivals(round_with(fixed, 1), ScheduleKind::kFixed, 0, limits);
  EXPECT_FALSE(skipped.applied);
  EXPECT_TRUE(skipped.passed);
  EXPECT_NE(skipped.note.find("exponential"), std::string::npos);
}

TEST(ControllerChecks, ClosedLoopWhenLittlesLawExceedsTheSlots) {
  EngineConfig c;
  c.connections = 1;
  c.max_outstanding = 1;
  c.schedule.rate_per_s = 5000;
  c.schedule.kind = ScheduleKind::kFixed;  // fixed gaps below: AD not applied
  // One slot, 1 ms per request: 1000 rps at most, whatever the schedule.
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(int64_t{i} * 1'000'000);
  auto r = round_with(t, 1'000'000);
  r.scheduled = r.sent = 5000;  // offered 5000 rps over the same second
  r.slot_late = 4000;
  auto check = check_calibration(r, c, CalibrationLimits{});
  EXPECT_FALSE(check.passed());
  EXPECT_TRUE(check.closed_loop.closed_loop);
  EXPECT_NEAR(check.closed_loop.slots_needed, 5.0, 1e-9);
  EXPECT_NEAR(check.closed_loop.capacity_rps, 1000.0, 1e-6);
  ASSERT_EQ(check.reasons.size(), 2u);
  EXPECT_EQ(check.reasons[0].rfind(
                "target load not reached (achieved 1000 rps of 5000; offered 5004)", 0),
            0u)
      << check.reasons[0];
  EXPECT_EQ(check.reasons[1].rfind("closed-loop: C×K=1 cannot carry 5000 rps at 1.00ms", 0), 0u)
      << check.reasons[1];
}

TEST(ControllerChecks, CalibrationPassesAPoissonRoundAtItsRate) {
  EngineConfig c;
  c.connections = 8;
  c.max_outstanding = 2;
  c.schedule.rate_per_s = 2000;
  auto r = round_with(poisson_times(2000, 4000, 3), 300'000);
  // Poisson with 4000 arrivals: the achieved rate is within ~1.6% (1 sigma)
  // of 2000; use the empirical rate as the target so the test is exact.
  c.schedule.rate_per_s = round_throughput(r);
  auto check = check_calibration(r, c, CalibrationLimits{});
  EXPECT_TRUE(check.passed()) << (check.reasons.empty() ? "" : check.reasons[0]);
  EXPECT_FALSE(check.closed_loop.closed_loop);
  EXPECT_NEAR(check.closed_loop.slots_needed, c.schedule.rate_per_s * 300e-6, 1e-9);
}

TEST(ControllerChecks, LateSendsWithoutSlotShortageAreTheClientsFault) {
  EngineConfig c;
  c.connections = 100;
  c.schedule.rate_per_s = 1000;
  c.schedule.kind = ScheduleKind::kFixed;
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(int64_t{i} * 1'000'000);
  auto r = round_with(t, 100'000);
  r.late = 100;  // 10%
  for (int i = 0; i < 1000; ++i) r.timer_lateness.record(i < 900 ? 1'000 : 3'000'000);
  r.timer.slice_ns = 100'000;
  r.timer.slice_granted = true;
  auto check = check_calibration(r, c, CalibrationLimits{});
  EXPECT_FALSE(check.closed_loop.closed_loop);
  ASSERT_EQ(check.reasons.size(), 1u);
  EXPECT_EQ(
      check.reasons[0].rfind("late sends: the load generator itself got to 10.0% of requests", 0),
      0u)
      << check.reasons[0];
  // It names how late the client was, what was tried and what is left.
  EXPECT_NE(check.reasons[0].find("timer lateness p99 3.0"), std::string::npos) << check.reasons[0];
  EXPECT_NE(check.reasons[0].find("100us scheduler slice was granted"), std::string::npos)
      << check.reasons[0];
  EXPECT_NE(check.reasons[0].find("left to try: --rt-priority 1 (root)"), std::string::npos)
      << check.reasons[0];
  c.rt_priority = 5;
  check = check_calibration(r, c, CalibrationLimits{});
  ASSERT_EQ(check.reasons.size(), 1u);
  EXPECT_NE(check.reasons[0].find("SCHED_FIFO 5 was used"), std::string::npos) << check.reasons[0];
  EXPECT_EQ(check.reasons[0].find("--rt-priority"), std::string::npos) << check.reasons[0];
  EXPECT_NE(check.reasons[0].find("--cpu-latency-us 0 (root)"), std::string::npos)
      << check.reasons[0];
  // A CPU latency limit held for the run is said as tried, not as left.
  c.cpu_latency_held = true;
  check = check_calibration(r, c, CalibrationLimits{});
  ASSERT_EQ(check.reasons.size(), 1u);
  EXPECT_NE(check.reasons[0].find("idle CPUs were kept polling"), std::string::npos)
      << check.reasons[0];
  EXPECT_EQ(check.reasons[0].find("--cpu-latency-us 0 (root),"), std::string::npos)
      << check.reasons[0];
}

// A violated inter-arrival distribution names whose it is: the client's when
// its own timer lateness reached the late threshold at p99, else what lay
// between its loop and the kernel's send stamp.
TEST(ControllerChecks, AViolatedGapDistributionSaysWhoseItIs) {
  EngineConfig c;
  c.connections = 100;
  c.schedule.rate_per_s = 1000;  // asked Poisson, sent evenly: A² rejects
  std::vector<int64_t> t;
  for (int i = 0; i < 2000; ++i) t.push_back(int64_t{i} * 1'000'000);
  auto on_time = round_with(t, 100'000);
  for (int i = 0; i < 2000; ++i) on_time.timer_lateness.record(1'000);
  auto check = check_calibration(on_time, c, CalibrationLimits{});
  ASSERT_FALSE(check.reasons.empty());
  EXPECT_EQ(check.reasons[0].rfind("inter-arrival distribution violated", 0), 0u)
      << check.reasons[0];
  EXPECT_NE(check.reasons[0].find("the client kept its timer"), std::string::npos)
      << check.reasons[0];
  auto stalled = round_with(t, 100'000);
  for (int i = 0; i < 2000; ++i) stalled.timer_lateness.record(i % 10 == 0 ? 3'000'000 : 1'000);
  check = check_calibration(stalled, c, CalibrationLimits{});
  ASSERT_FALSE(check.reasons.empty());
  EXPECT_NE(check.reasons[0].find("the client's own sends were not Poisson"), std::string::npos)
      << check.reasons[0];
  EXPECT_NE(check.reasons[0].find("left to try"), std::string::npos) << check.reasons[0];
}

// A series whose sends stalled (the client's lateness and slot waits come in
// runs) but whose in-flight times are independent: the dependence is the
// client's. In-flight times that drift slowly: the service's.
TEST(ControllerChecks, ADependenceIsTheClientsWhenTheInFlightTimesAreIndependent) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> noise(1.0 / 20'000);
  std::vector<Sample> client_bursts, service_drift;
  for (int i = 0; i < 4000; ++i) {
    const int64_t in_flight = static_cast<int64_t>(noise(rng));
    const int64_t stall = (i / 50) % 2 == 0 ? 0 : 400'000;  // runs of 50 late sends
    Sample s;
    s.lateness_ns = stall;
    s.latency_ns = stall + in_flight;
    client_bursts.push_back(s);
    Sample d;
    d.latency_ns = in_flight + 10 * static_cast<int64_t>(i);  // a slow upward drift
    service_drift.push_back(d);
  }
  // The response series of the first is dependent at stride 1 (its runs),
  // yet its in-flight times are not.
  std::vector<double> response;
  for (const Sample& s : client_bursts) response.push_back(static_cast<double>(s.latency_ns));
  ASSERT_LT(analysis::spearman_autocorrelation(response, 1).p_value, 0.05);
  EXPECT_NE(whose_dependence(client_bursts, 1, 0.05).find("the dependence is the client's"),
            std::string::npos);
  EXPECT_NE(whose_dependence(service_drift, 1, 0.05).find("in-flight times are dependent too"),
            std::string::npos);
  EXPECT_THROW(whose_dependence(client_bursts, 0, 0.05), std::invalid_argument);
}

// The fewest samples for a CI: the ranks exist there and not one sample
// before (p99 at 95% needs a few hundred; the n = 10,000 ranks of the
// method's example exist).
TEST(ControllerChecks, MinSamplesForACiIsTheFirstWithBothRanks) {
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const std::size_t n = min_samples_for_ci(p, 0.95);
    EXPECT_TRUE(analysis::percentile_ci_ranks(n, p / 100, 0.95).has_value()) << p;
    EXPECT_FALSE(analysis::percentile_ci_ranks(n - 1, p / 100, 0.95).has_value()) << p;
  }
  EXPECT_GT(min_samples_for_ci(99, 0.95), 200u);
  EXPECT_LT(min_samples_for_ci(99, 0.95), 1000u);
  EXPECT_GT(min_samples_for_ci(99.9, 0.95), min_samples_for_ci(99, 0.95));
  EXPECT_LE(min_samples_for_ci(99, 0.95), 10'000u);
}

// Waits for a free slot are the service's latency: with most slots idle they
// fail nothing; with most slots needed they are the closed-loop symptom.
TEST(ControllerChecks, SlotWaitsFailOnlyAsTheClosedLoopSymptom) {
  EngineConfig c;
  c.schedule.rate_per_s = 1000;
  c.schedule.kind = ScheduleKind::kFixed;
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(int64_t{i} * 1'000'000);
  c.connections = 100;  // 0.1 of 100 slots needed (100 us each at 1000 rps)
  auto r = round_with(t, 100'000);
  r.slot_late = 500;  // 50% waited for a slot
  auto idle_slots = check_calibration(r, c, CalibrationLimits{});
  EXPECT_TRUE(idle_slots.passed()) << idle_slots.reasons.front();
  EXPECT_EQ(idle_slots.slot_late, 500u);
  EXPECT_TRUE(idle_slots.late_ok);
  c.connections = 1;
  c.max_outstanding = 1;
  auto busy = round_with(t, 800'000);  // 0.8 of the one slot needed
  busy.slot_late = 500;
  auto busy_slots = check_calibration(busy, c, CalibrationLimits{});
  EXPECT_TRUE(busy_slots.closed_loop.closed_loop);
  busy.slot_late = 0;
  EXPECT_FALSE(check_calibration(busy, c, CalibrationLimits{}).closed_loop.closed_loop);
}

// Error replies (server errors) are no samples but were answered: they count
// toward the throughput, and beyond 1% of the requests fail the round as
// request errors, the only reason given.
TEST(ControllerChecks, ServerErrorsAreRequestErrorsNotAMissedRate) {
  EngineConfig c;
  c.connections = 100;
  c.schedule.rate_per_s = 1000;
  c.schedule.kind = ScheduleKind::kFixed;
  std::vector<int64_t> t;
  for (int i = 0; i < 1000; ++i) t.push_back(int64_t{i} * 1'000'000);
  // Every tenth request was refused: 900 samples, 100 error replies.
  std::vector<int64_t> answered_ok;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i % 10 != 5) answered_ok.push_back(t[i]);
  }
  auto r = round_with(answered_ok, 1'000'000);
  r.scheduled = r.sent = 1000;
  r.errors.server = 100;
  r.first_intended_ns = t.front();
  r.last_intended_ns = t.back();
  EXPECT_NEAR(round_throughput(r), 1000.0, 1e-9);
  auto check = check_calibration(r, c, CalibrationLimits{});
  EXPECT_TRUE(check.rate_ok);
  ASSERT_EQ(check.reasons.size(), 1u);
  EXPECT_EQ(check.reasons[0],
            "request errors: 100 of 1000 requests failed (connect 0, read 0, write 0, timeout 0, "
            "protocol 0, server 100)");
}

TEST(ControllerChecks, StrideOneForIidAndLargerForAnAutoregressiveSeries) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> iid(20000);
  for (auto& x : iid) x = 1000 + noise(rng);
  auto a = choose_stride(iid, 0.05, 256, 200);
  ASSERT_TRUE(a.stride.has_value());
  EXPECT_LE(*a.stride, 2u);  // lag 1 rejects 5% of iid series by construction

  // AR(1), phi = 0.95: rho(lag) = 0.95^lag, so kept lag-1 correlation falls
  // below what 20000/s samples can detect only around s = 32..128.
  std::vector<double> ar(20000);
  double x = 0;
  for (auto& v : ar) v = x = 0.95 * x + noise(rng);
  auto b = choose_stride(ar, 0.05, 256, 200);
  ASSERT_TRUE(b.stride.has_value());
  EXPECT_GE(*b.stride, 16u);
  EXPECT_LE(*b.stride, 128u);
  EXPECT_GT(b.steps.front().rho, 0.9);

  // A ramp is dependent at every stride: no stride, and final.
  std::vector<double> ramp(20000);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<double>(i);
  auto c = choose_stride(ramp, 0.05, 64, 200);
  EXPECT_FALSE(c.stride.has_value());
  EXPECT_TRUE(c.exhausted);
  EXPECT_EQ(c.steps.size(), 7u);  // 1, 2, 4, ..., 64

  // Too few samples for large strides: not final.
  std::vector<double> short_ramp(ramp.begin(), ramp.begin() + 1000);
  auto d = choose_stride(short_ramp, 0.05, 256, 200);
  EXPECT_FALSE(d.stride.has_value());
  EXPECT_FALSE(d.exhausted);
  EXPECT_EQ(d.steps.back().stride, 4u);  // 1000/8 = 125 < 200 kept
}

TEST(ControllerChecks, KeepEvery) {
  std::vector<double> v{0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(keep_every(v, 3), (std::vector<double>{0, 3, 6}));
  EXPECT_EQ(keep_every(v, 1), v);
  EXPECT_THROW(keep_every(v, 0), std::invalid_argument);
}

TEST(ControllerChecks, StationarityOfNoiseRandomWalkAndConstant) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> iid(5000), walk(5000);
  double w = 0;
  for (std::size_t i = 0; i < iid.size(); ++i) {
    iid[i] = noise(rng);
    walk[i] = w += noise(rng);
  }
  auto a = check_stationarity(iid, 0.05, 100000);
  EXPECT_TRUE(a.applied);
  EXPECT_TRUE(a.stationary);
  EXPECT_LT(a.p_value, 1e-6);
  auto b = check_stationarity(walk, 0.05, 100000);
  EXPECT_FALSE(b.stationary);
  EXPECT_GT(b.p_value, 0.05);
  std::vector<double> flat(100, 42.0);
  auto c = check_stationarity(flat, 0.05, 100000);
  EXPECT_TRUE(c.stationary);
  EXPECT_NE(c.note.find("degenerate"), std::string::npos);
  auto d = check_stationarity(std::vector<double>(10, 1.0), 0.05, 100000);
  EXPECT_FALSE(d.applied);
}

TEST(ControllerChecks, TailPercentilesUseOrderStatistics) {
  std::vector<double> v(10000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  std::vector<double> ps{99, 50};
  auto t = tail_percentiles(v, ps, 0.95);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].p, 99);
  EXPECT_EQ(t[0].value_ns, 9900);
  // lancet eqs 1-2 for n = 10000, p = 0.99, 95%: ranks 9880 and 9921.
  EXPECT_EQ(*t[0].ci_low_ns, 9880);
  EXPECT_EQ(*t[0].ci_high_ns, 9921);
  EXPECT_EQ(*t[0].ci_width_ns(), 41);
  EXPECT_EQ(t[1].value_ns, 5000);
  EXPECT_TRUE(tail_percentiles({}, ps, 0.95).empty());
  std::vector<double> few{1, 2, 3};
  EXPECT_FALSE(tail_percentiles(few, ps, 0.95)[0].ci_low_ns.has_value());
}

}  // namespace
}  // namespace nabla::loadgen

namespace nabla::loadgen {
namespace {

analysis::LatencyHistogram lateness_of(const std::vector<int64_t>& values) {
  analysis::LatencyHistogram h;
  for (int64_t v : values) h.record(v);
  return h;
}

TEST(ClientLateness, WithinATenthOfTheSojournIsOk) {
  // 99 sends on time, one 50 us late: p99 of the lateness is ~0.
  std::vector<int64_t> v(99, 0);
  v.push_back(50'000);
  const auto check = check_client_lateness(lateness_of(v), {99, 1'000'000, {}, {}}, 0.1);
  EXPECT_TRUE(check.applied);
  EXPECT_TRUE(check.ok);
  EXPECT_LT(check.share, 0.01);
}

TEST(ClientLateness, MoreThanATenthIsANoteNamingBothFigures) {
  // Every send 40 us late against a 300 us p99 sojourn: 13%.
  const auto check = check_client_lateness(lateness_of(std::vector<int64_t>(1000, 40'000)),
                                           {99, 300'000, {}, {}}, 0.1);
  EXPECT_TRUE(check.applied);
  EXPECT_FALSE(check.ok);
  EXPECT_NEAR(check.share, 40'000.0 / 300'000.0, 0.01);  // histogram buckets: ~0.1% relative
  EXPECT_NE(check.reason.find("p99"), std::string::npos) << check.reason;
  EXPECT_NE(check.reason.find("300us"), std::string::npos) << check.reason;
  EXPECT_NE(check.reason.find("13%"), std::string::npos) << check.reason;
  EXPECT_NE(check.reason.find("leave it out"), std::string::npos) << check.reason;
}

TEST(ClientLateness, NotAppliedWithoutSendsOrSojourn) {
  EXPECT_FALSE(check_client_lateness(analysis::LatencyHistogram{}, {99, 1e6, {}, {}}, 0.1).applied);
  EXPECT_FALSE(check_client_lateness(lateness_of({1, 2}), {99, 0, {}, {}}, 0.1).applied);
}

}  // namespace
}  // namespace nabla::loadgen
