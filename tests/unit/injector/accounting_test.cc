#include "nabla/injector/accounting.hh"

#include <gtest/gtest.h>

#include <random>

namespace nabla::injector {
namespace {

TEST(DelayHistogram, BucketsAreContiguousAndNarrow) {
  for (int64_t v : {0L, 1L, 1023L, 1024L, 1025L, 2047L, 2048L, 20'000'000L, 999'999'999L}) {
    const uint32_t b = DelayHistogram::bucket_of(v);
    EXPECT_LE(DelayHistogram::bucket_low(b), v) << v;
    EXPECT_GT(DelayHistogram::bucket_low(b) + DelayHistogram::bucket_width(b), v) << v;
    if (v >= 1024) {
      EXPECT_LE(static_cast<double>(DelayHistogram::bucket_width(b)), v / 511.0) << v;
    } else {
      EXPECT_EQ(DelayHistogram::bucket_width(b), 1);
    }
  }
  for (uint32_t b = 0; b < 20'000; ++b) {
    EXPECT_EQ(DelayHistogram::bucket_low(b) + DelayHistogram::bucket_width(b),
              DelayHistogram::bucket_low(b + 1))
        << b;
  }
}

TEST(DelayHistogram, QuantilesByNearestRank) {
  DelayHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0);
  for (int64_t v = 1; v <= 100; ++v) h.add(v);
  EXPECT_EQ(h.quantile(0.5), 50);
  EXPECT_EQ(h.quantile(0.99), 99);
  EXPECT_EQ(h.quantile(1.0), 100);
  EXPECT_EQ(h.quantile(0.0), 1);
}

TEST(DelayStats, ExactMeanAndStdOnALargeOffset) {
  // 20 ms +- 1 µs: mean(x^2) - mean^2 would lose this; Welford must not.
  DelayStats s;
  for (int i = 0; i < 1000; ++i) s.add(20'000'000 + (i % 2 == 0 ? 1000 : -1000));
  const DelaySummary d = s.summary();
  EXPECT_EQ(d.count, 1000u);
  EXPECT_DOUBLE_EQ(d.mean_ns, 20'000'000.0);
  EXPECT_NEAR(d.std_ns, 1000.5, 0.01);  // sqrt(1000 * 1e6 / 999)
  EXPECT_EQ(d.min_ns, 19'999'000);
  EXPECT_EQ(d.max_ns, 20'001'000);
  EXPECT_NEAR(static_cast<double>(d.p50_ns), 19'999'000, 20'000);
  EXPECT_NEAR(static_cast<double>(d.p99_ns), 20'001'000, 20'000);
}

TEST(DelayStats, EmptyAndSingle) {
  DelayStats s;
  EXPECT_EQ(s.summary().count, 0u);
  EXPECT_EQ(s.summary().mean_ns, 0.0);
  s.add(5000);
  const DelaySummary d = s.summary();
  EXPECT_EQ(d.mean_ns, 5000.0);
  EXPECT_EQ(d.std_ns, 0.0);
  EXPECT_EQ(d.p50_ns, 5000);
  EXPECT_EQ(d.p99_ns, 5000);
}

TEST(DelayStats, PercentilesOfAUniformSpread) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> u(1'000'000, 2'000'000);
  DelayStats s;
  for (int i = 0; i < 100'000; ++i) s.add(u(rng));
  const DelaySummary d = s.summary();
  EXPECT_NEAR(static_cast<double>(d.p50_ns), 1'500'000, 10'000);
  EXPECT_NEAR(static_cast<double>(d.p99_ns), 1'990'000, 10'000);
  EXPECT_NEAR(d.std_ns, 1e6 / std::sqrt(12.0), 3'000);
}

TEST(InjectionAccounting, SplitsByHalfAndCycle) {
  InjectionAccounting acc;
  acc.record_delay(5'000'000, WavePoint{WaveHalf::kHigh, 0, false});
  acc.record_delay(5'100'000, WavePoint{WaveHalf::kHigh, 0, false});
  acc.record_delay(100'000, WavePoint{WaveHalf::kLow, 0, false});
  acc.record_delay(5'000'000, WavePoint{WaveHalf::kHigh, 1, false});
  EXPECT_EQ(acc.overall().count(), 4u);
  EXPECT_DOUBLE_EQ(acc.half(WaveHalf::kHigh).summary().mean_ns, 5'033'333.333333333);
  EXPECT_DOUBLE_EQ(acc.half(WaveHalf::kLow).summary().mean_ns, 100'000.0);
  ASSERT_EQ(acc.cycles().size(), 2u);
  EXPECT_EQ(acc.cycles().at(0)[1].count(), 2u);
  EXPECT_EQ(acc.cycles().at(0)[0].count(), 1u);
  EXPECT_EQ(acc.cycles().at(1)[1].count(), 1u);
}

TEST(InjectionAccounting, KeepsABoundedNumberOfCycles) {
  InjectionAccounting acc;
  for (int64_t c = 0; c < static_cast<int64_t>(InjectionAccounting::kMaxCycles) + 10; ++c) {
    acc.record_delay(1000, WavePoint{WaveHalf::kHigh, c, false});
  }
  EXPECT_EQ(acc.cycles().size(), InjectionAccounting::kMaxCycles);
  EXPECT_EQ(acc.cycles().begin()->first, 10);
  EXPECT_EQ(acc.overall().count(), InjectionAccounting::kMaxCycles + 10);
}

}  // namespace
}  // namespace nabla::injector
