#include "nabla/analysis/histogram.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "nabla/analysis/percentile.hh"

namespace nabla::analysis {
namespace {

// p = 3: 8 exact buckets, then 4 buckets per power of two.
TEST(Histogram, LiteralLayout) {
  const LatencyHistogram h(3, 1000);
  EXPECT_EQ(h.bucket_index(7), 7u);
  EXPECT_EQ(h.bucket_index(8), 8u);
  EXPECT_EQ(h.bucket_index(9), 8u);
  EXPECT_EQ(h.bucket_index(10), 9u);
  EXPECT_EQ(h.bucket_index(15), 11u);
  EXPECT_EQ(h.bucket_index(16), 12u);
  EXPECT_EQ(h.bucket_lower(12), 16);
  EXPECT_EQ(h.bucket_width(12), 4);
  EXPECT_EQ(h.bucket_index(100), 22u);  // [96, 112)
  EXPECT_EQ(h.bucket_lower(22), 96);
  EXPECT_EQ(h.bucket_width(22), 16);
  EXPECT_EQ(h.equivalent_value(100), 104);
  EXPECT_EQ(h.equivalent_value(5), 5);
  EXPECT_DOUBLE_EQ(h.relative_error_bound(), 0.125);
}

TEST(Histogram, SignificantDigitsAndSize) {
  EXPECT_EQ(LatencyHistogram::with_significant_digits(3).precision_bits(), 10);
  EXPECT_EQ(LatencyHistogram::with_significant_digits(2).precision_bits(), 7);
  const LatencyHistogram h;  // 10 bits, one hour
  // 1024 exact + 31 full ranges of 512 + 327 buckets of [2^41, 2^42) up to 3.6e12
  EXPECT_EQ(h.bucket_count(), 17223u);
  EXPECT_THROW(LatencyHistogram(0), std::invalid_argument);
  EXPECT_THROW(LatencyHistogram(10, 0), std::invalid_argument);
}

std::vector<std::int64_t> log_uniform_values(std::size_t n, std::uint64_t seed, double max) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> e(0.0, std::log(max));
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(std::exp(e(rng)));
  return v;
}

// Every value lies in its bucket and is reported within the relative bound,
// from 0 up to one hour.
TEST(Histogram, EveryValueWithinRelativeErrorBound) {
  for (int bits : {4, 7, 10, 14}) {
    const LatencyHistogram h(bits);
    auto values = log_uniform_values(20000, 1 + static_cast<std::uint64_t>(bits), 3.6e12);
    for (std::int64_t v = 0; v < 5000; ++v) values.push_back(v);
    values.push_back(LatencyHistogram::kOneHourNs);
    std::size_t last_index = 0;
    std::sort(values.begin(), values.end());
    for (auto v : values) {
      const std::size_t i = h.bucket_index(v);
      ASSERT_LT(i, h.bucket_count());
      ASSERT_GE(i, last_index) << "index not monotone at " << v;
      last_index = i;
      ASSERT_LE(h.bucket_lower(i), v);
      ASSERT_LT(v, h.bucket_lower(i) + h.bucket_width(i));
      const double err = std::abs(static_cast<double>(h.equivalent_value(v) - v));
      ASSERT_LE(err, h.relative_error_bound() * static_cast<double>(v)) << bits << " " << v;
    }
  }
}

// Percentiles agree with the exact sample percentiles (same estimator)
// within the bound; count, min, max and mean are exact.
TEST(Histogram, PercentilesWithinBoundOfExact) {
  std::mt19937_64 rng(8);
  std::lognormal_distribution<double> lat(std::log(2e5), 1.2);  // ~200 us median
  std::vector<double> values(100000);
  LatencyHistogram h;
  long double sum = 0;
  for (double& x : values) {
    x = std::floor(lat(rng));
    sum += x;
    ASSERT_TRUE(h.record(static_cast<std::int64_t>(x)));
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(h.count(), values.size());
  EXPECT_EQ(h.min(), static_cast<std::int64_t>(values.front()));
  EXPECT_EQ(h.max(), static_cast<std::int64_t>(values.back()));
  EXPECT_NEAR(h.mean(), static_cast<double>(sum / values.size()), 1e-6);
  for (double p : {0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    const double exact = percentile_sorted(values, p);
    const double got = static_cast<double>(h.percentile(p));
    EXPECT_LE(std::abs(got - exact), h.relative_error_bound() * exact) << p;
  }
  EXPECT_EQ(h.percentile(1.0), h.max());
  EXPECT_EQ(h.percentile(0.0), h.min());
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  const auto a_values = log_uniform_values(30000, 21, 1e10);
  const auto b_values = log_uniform_values(20000, 22, 1e6);
  LatencyHistogram a, b, all;
  for (auto v : a_values) {
    a.record(v);
    all.record(v);
  }
  for (auto v : b_values) {
    b.record(v, 2);
    all.record(v, 2);
  }
  a.record(-5);
  all.record(-5);
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.count(), 70000u);
  EXPECT_EQ(a.out_of_range(), 1u);
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double p = 0.0; p <= 1.0; p += 0.01) EXPECT_EQ(a.percentile(p), all.percentile(p)) << p;
  LatencyHistogram other(8);
  EXPECT_THROW(a.merge(other), std::invalid_argument);
  LatencyHistogram empty;
  a.merge(empty);
  EXPECT_EQ(a.count(), 70000u);
  empty.merge(b);
  EXPECT_EQ(empty.min(), b.min());
}

TEST(Histogram, EdgeCases) {
  LatencyHistogram h(10, 1'000'000);
  EXPECT_TRUE(std::isnan(h.mean()));
  EXPECT_THROW(h.percentile(0.5), std::invalid_argument);
  EXPECT_FALSE(h.record(-1));
  EXPECT_FALSE(h.record(1'000'001));
  EXPECT_TRUE(h.record(1'000'000));
  EXPECT_EQ(h.out_of_range(), 2u);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.percentile(0.5), 1'000'000);  // clamped into [min, max]
  EXPECT_THROW(h.percentile(1.5), std::invalid_argument);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.out_of_range(), 0u);
}

TEST(Histogram, PartsRebuildTheSameHistogram) {
  LatencyHistogram h(10, 1'000'000'000);
  for (auto v : log_uniform_values(5000, 23, 1e9)) h.record(v, 3);
  h.record(-4);
  const auto parts = h.parts();
  EXPECT_EQ(parts.precision_bits, 10);
  EXPECT_EQ(parts.highest_trackable_ns, 1'000'000'000);
  EXPECT_EQ(parts.out_of_range, 1u);
  uint64_t total = 0;
  for (std::size_t k = 0; k < parts.buckets.size(); ++k) {
    EXPECT_NE(parts.buckets[k].second, 0u);
    if (k > 0) {
      EXPECT_GT(parts.buckets[k].first, parts.buckets[k - 1].first);
    }
    total += parts.buckets[k].second;
  }
  EXPECT_EQ(total, h.count());
  const LatencyHistogram back = LatencyHistogram::from_parts(parts);
  EXPECT_EQ(back.parts(), parts);
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.min(), h.min());
  EXPECT_EQ(back.max(), h.max());
  EXPECT_EQ(back.sum(), h.sum());
  EXPECT_EQ(back.mean(), h.mean());
  EXPECT_EQ(back.out_of_range(), h.out_of_range());
  for (double p = 0.0; p <= 1.0; p += 0.01) EXPECT_EQ(back.percentile(p), h.percentile(p)) << p;
  // It merges like the original (same configuration).
  LatencyHistogram merged = back;
  merged.merge(h);
  EXPECT_EQ(merged.count(), 2 * h.count());

  const LatencyHistogram empty = LatencyHistogram::from_parts(LatencyHistogram(8, 5000).parts());
  EXPECT_EQ(empty.count(), 0u);
  EXPECT_EQ(empty.precision_bits(), 8);
  EXPECT_EQ(empty.highest_trackable_ns(), 5000);
}

TEST(Histogram, PartsThatCannotBelongToAHistogramAreRefused) {
  LatencyHistogram h(4, 1000);
  h.record(3);
  h.record(100, 2);
  const auto good = h.parts();
  ASSERT_NO_THROW(LatencyHistogram::from_parts(good));
  auto bad = good;
  bad.buckets.back().first = h.bucket_count();  // out of range
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  std::swap(bad.buckets.front(), bad.buckets.back());  // not increasing
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  bad.buckets.front().second = 0;
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  bad.min = 2;  // not in the lowest bucket
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  bad.max = 1001;
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  bad.sum = 10'000;
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  bad = good;
  bad.precision_bits = 0;
  EXPECT_THROW(LatencyHistogram::from_parts(bad), std::invalid_argument);
  LatencyHistogram::Parts empty;
  empty.min = 1;
  EXPECT_THROW(LatencyHistogram::from_parts(empty), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::analysis
