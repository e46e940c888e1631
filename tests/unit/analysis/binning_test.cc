#include "nabla/analysis/binning.hh"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace nabla::analysis {
namespace {

// Spans of k = 2 gaps: 20, 30, 50, 70 -> mean 42.5, sd 22.1736 ->
// 42.5 + 3 * 22.1736 = 109.0207 (numpy), rounded up to 110 ns.
TEST(BinWidth, LiteralExample) {
  const std::vector<std::int64_t> t{0, 10, 20, 40, 70, 110};
  EXPECT_EQ(bin_width_ns(t, 2), 110);
}

// Unsorted input is sorted first: sorted {0,10,20,40,70,110,200}, k = 3 gives
// spans 40, 60, 90, 160 -> 245.0595 -> 246.
TEST(BinWidth, SortsArrivals) {
  const std::vector<std::int64_t> t{110, 0, 40, 10, 70, 20, 200};
  EXPECT_EQ(bin_width_ns(t, 3), 246);
}

TEST(BinWidth, IdenticalTimesGiveOneNanosecond) {
  const std::vector<std::int64_t> t(10, 5);
  EXPECT_EQ(bin_width_ns(t, 3), 1);
}

TEST(BinWidth, RejectsTooFewArrivals) {
  const std::vector<std::int64_t> t{0, 10, 20};
  EXPECT_THROW(bin_width_ns(t, 0), std::invalid_argument);
  EXPECT_THROW(bin_width_ns(t, 2), std::invalid_argument);  // one span only
  EXPECT_NO_THROW(bin_width_ns(t, 1));
}

// For Poisson arrivals the chosen width holds at least k requests in nearly
// every bin (the paper's design goal; ~0.999 if the span were normal).
TEST(BinWidth, PoissonBinsHoldKRequests) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.0 / 1e6);  // 1000 req/s
  std::vector<std::int64_t> t;
  double now = 0;
  for (int i = 0; i < 200000; ++i) t.push_back(static_cast<std::int64_t>(now += gap(rng)));
  constexpr std::size_t kK = 8;
  const std::int64_t w = bin_width_ns(t, kK);
  EXPECT_GT(w, 8'000'000);   // mean span alone is 8 ms
  EXPECT_LT(w, 20'000'000);  // 8 ms + 3 * sqrt(8) ms = 16.5 ms
  std::vector<int> per_bin(static_cast<std::size_t>(t.back() / w) + 1, 0);
  for (auto x : t) ++per_bin[static_cast<std::size_t>(x / w)];
  per_bin.pop_back();  // last bin is partial
  int short_bins = 0;
  for (int c : per_bin) short_bins += c < static_cast<int>(kK) ? 1 : 0;
  EXPECT_LT(static_cast<double>(short_bins) / static_cast<double>(per_bin.size()), 0.01);
}

TEST(Binning, MeansCountsAndWindow) {
  const std::vector<LatencyRecord> r{
      {99, 1000, 1},   // before the window: ignored
      {100, 10, 1},    // bin 0
      {109, 20, 1},    // bin 0
      {110, 40, 1},    // bin 1
      {125, 7, 1},     // bin 2
      {139, 9, 1},     // bin 3
      {140, 5000, 1},  // at the end: ignored
  };
  const auto s = bin_latencies(r, 100, 10, 4);
  ASSERT_EQ(s.mean_latency_ns.size(), 4u);
  EXPECT_EQ(s.type, 1);
  EXPECT_EQ(s.records, 5u);
  EXPECT_EQ(s.counts, (std::vector<std::uint32_t>{2, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(s.mean_latency_ns[0], 15.0);
  EXPECT_DOUBLE_EQ(s.mean_latency_ns[1], 40.0);
  EXPECT_DOUBLE_EQ(s.mean_latency_ns[2], 7.0);
  EXPECT_DOUBLE_EQ(s.mean_latency_ns[3], 9.0);
  EXPECT_EQ(s.filled_bins, 0u);
  EXPECT_TRUE(s.reliable);
}

// Interior gaps are interpolated linearly, edge runs copy the nearest bin.
TEST(Binning, EmptyBinPolicy) {
  const std::vector<LatencyRecord> r{{25, 10, 0}, {55, 40, 0}};
  // bins of 10 from 0: bin 2 = 10, bin 5 = 40; bins 0,1 copy 10; 3,4 are
  // 20, 30; 6,7 copy 40.
  const auto s = bin_latencies(r, 0, 10, 8);
  EXPECT_EQ(s.mean_latency_ns, (std::vector<double>{10, 10, 10, 20, 30, 40, 40, 40}));
  EXPECT_EQ(s.filled_bins, 6u);
  EXPECT_FALSE(s.reliable);
  BinningOptions lax;
  lax.max_empty_fraction = 0.75;
  EXPECT_TRUE(bin_latencies(r, 0, 10, 8, lax).reliable);
}

TEST(Binning, ByTypeSplitsAndSorts) {
  const std::vector<LatencyRecord> r{{0, 5, 7}, {1, 100, 2}, {12, 7, 7}, {15, 300, 2}, {30, 1, 9}};
  const auto all = bin_by_type(r, 0, 10, 2);  // window [0, 20): type 9 has nothing
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].type, 2);
  EXPECT_EQ(all[0].mean_latency_ns, (std::vector<double>{100, 300}));
  EXPECT_EQ(all[1].type, 7);
  EXPECT_EQ(all[1].mean_latency_ns, (std::vector<double>{5, 7}));
}

TEST(Binning, RejectsBadInput) {
  const std::vector<LatencyRecord> r{{0, 5, 0}};
  EXPECT_THROW(bin_latencies(r, 0, 10, 0), std::invalid_argument);
  EXPECT_THROW(bin_latencies(r, 0, 0, 4), std::invalid_argument);
  EXPECT_THROW(bin_latencies(r, 100, 10, 4), std::invalid_argument);  // nothing inside
  EXPECT_THROW(bin_latencies(r, 0, std::int64_t{1} << 62, 4), std::invalid_argument);
  EXPECT_TRUE(bin_by_type(r, 100, 10, 4).empty());
}

}  // namespace
}  // namespace nabla::analysis
