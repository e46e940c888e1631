// The estimator on counter values built from the paper's scenarios: Table 2
// (c_cache = 44 cycles, f_base = 2.1 GHz, estimates 86.31 ... 99.11 ns),
// Table 4 (the same latency in cycles at 2.1 and 2.6 GHz core frequency)
// and the memory-controller variant.
#include "nabla/memlat/estimator.hh"

#include <gtest/gtest.h>

#include <cmath>

namespace nabla::memlat {
namespace {

constexpr EstimatorConstants kPaper{44, 2.1, 1};

// One second at f_base with `requests` LLC-miss reads each waiting
// `memory_cycles` core cycles; the core ran at `core_ghz`.
CounterSample second_at(double core_ghz, double memory_cycles, double requests = 1'000'000) {
  CounterSample s;
  s.interval_ns = 1'000'000'000;
  s.ref_cycles = 2.1e9;
  s.cycles = core_ghz * 1e9;
  s.requests = requests;
  s.outstanding = memory_cycles * requests;
  return s;
}

double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

TEST(MemlatEstimator, Table2ScenariosAtBaseFrequency) {
  // c_memory = l * f - c_cache for each printed estimate.
  for (double printed : {86.31, 144.46, 179.81, 128.17, 99.11}) {
    const double memory_cycles = printed * 2.1 - 44;
    const auto e = estimate_latency(second_at(2.1, memory_cycles), kPaper);
    ASSERT_TRUE(e.has_value());
    EXPECT_DOUBLE_EQ(round_to(e->latency_ns, 2), printed);
    EXPECT_NEAR(e->frequency_ghz, 2.1, 1e-12);
  }
}

TEST(MemlatEstimator, Table4CyclesDivideByTheMeasuredFrequency) {
  // 168.50 cycles at 2.1 GHz is 80.2 ns; 200.90 cycles at 2.6 GHz is 77.27 ns:
  // more cycles, less time, because the cycles are shorter.
  const auto slow = estimate_latency(second_at(2.1, 168.50 - 44), kPaper);
  const auto fast = estimate_latency(second_at(2.6, 200.90 - 44), kPaper);
  ASSERT_TRUE(slow && fast);
  EXPECT_DOUBLE_EQ(round_to(slow->latency_ns, 1), 80.2);
  EXPECT_DOUBLE_EQ(round_to(fast->latency_ns, 2), 77.27);
  EXPECT_DOUBLE_EQ(fast->total_cycles, 200.90);
  EXPECT_NEAR(fast->frequency_ghz, 2.6, 1e-12);
  EXPECT_LT(fast->latency_ns, slow->latency_ns);
  EXPECT_GT(fast->total_cycles, slow->total_cycles);
}

TEST(MemlatEstimator, RunAverageIsTheMeanOfIntervalsWithMisses) {
  std::vector<CounterSample> run = {second_at(2.1, 137.251), second_at(2.1, 225.157)};
  CounterSample idle = second_at(2.1, 0, 0);  // no LLC misses: no estimate
  run.push_back(idle);
  const auto mean = mean_latency_ns(run, kPaper);
  ASSERT_TRUE(mean.has_value());
  EXPECT_NEAR(*mean, (86.31 + 128.17) / 2, 1e-9);
  EXPECT_FALSE(estimate_latency(idle, kPaper).has_value());
  EXPECT_FALSE(mean_latency_ns({idle}, kPaper).has_value());
}

TEST(MemlatEstimator, ScaleConvertsCounterUnitsToCycles) {
  // AMD Zen 2/3 count the fill latency in units of 16 cycles.
  CounterSample s = second_at(2.1, 100.0 / 16);
  const auto e = estimate_latency(s, {50, 2.1, 16});
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->memory_cycles, 100);
  EXPECT_DOUBLE_EQ(e->latency_ns, 150 / 2.1);
}

TEST(MemlatEstimator, MemoryControllerVariantAddsCas) {
  // 1.2 GHz iMC clock; 30 queue cycles per read = 25 ns, plus t_CAS 14 ns.
  ImcSample s{1'000'000'000, 30.0 * 5e6, 5e6, 1.2e9};
  const auto l = imc_latency_ns(s, 14);
  ASSERT_TRUE(l.has_value());
  EXPECT_DOUBLE_EQ(*l, 25 + 14);
  EXPECT_FALSE(imc_latency_ns({1'000'000'000, 0, 0, 1.2e9}, 14).has_value());
}

// The intervals' iMC counts (summed over channels, clockticks per channel)
// give the same figure as the counts alone; intervals without them, or
// without inserts, have none and stay out of the mean.
TEST(MemlatEstimator, MemoryControllerVariantPerIntervalAndItsMean) {
  CounterSample busy{1'000'000'000, 2.1e9, 2.1e9, 0, 0};
  busy.imc = ImcCounts{30.0 * 5e6, 5e6, 1.2e9};
  CounterSample loaded = busy;
  loaded.imc = ImcCounts{60.0 * 5e6, 5e6, 1.2e9};  // 50 ns in the queue
  CounterSample idle = busy;
  idle.imc = ImcCounts{0, 0, 1.2e9};
  CounterSample none{1'000'000'000, 2.1e9, 2.1e9, 0, 0};
  EXPECT_EQ(interval_imc_latency_ns(busy, 14),
            imc_latency_ns(ImcSample{1'000'000'000, 1.5e8, 5e6, 1.2e9}, 14));
  EXPECT_FALSE(interval_imc_latency_ns(none, 14).has_value());
  EXPECT_FALSE(interval_imc_latency_ns(idle, 14).has_value());
  const auto mean = mean_imc_latency_ns({busy, idle, none, loaded}, 14);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(*mean, ((25 + 14) + (50 + 14)) / 2.0);
  EXPECT_FALSE(mean_imc_latency_ns({none, idle}, 14).has_value());
}

}  // namespace
}  // namespace nabla::memlat
