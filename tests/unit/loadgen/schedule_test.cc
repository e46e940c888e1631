#include "nabla/loadgen/schedule.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <system_error>
#include <vector>

#include "nabla/analysis/anderson_darling.hh"

namespace nabla::loadgen {
namespace {

// Achieved mean rate over n draws: (n - 1) gaps between first and last send.
double achieved_rate(ScheduleKind kind, double rate, int n, uint64_t seed) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.rate_per_s = rate;
  Schedule s(spec, 1'000'000, seed);
  int64_t first = *s.next();
  int64_t last = first;
  for (int i = 1; i < n; ++i) {
    int64_t t = *s.next();
    EXPECT_GE(t, last);
    last = t;
  }
  return (n - 1) * 1e9 / static_cast<double>(last - first);
}

TEST(Schedule, MeanRateWithinHalfPercentForEveryKind) {
  for (auto kind : {ScheduleKind::kExponential, ScheduleKind::kFixed, ScheduleKind::kLognormal,
                    ScheduleKind::kUniform}) {
    double r = achieved_rate(kind, 50'000, 1'000'000, 42);
    EXPECT_NEAR(r, 50'000, 250) << static_cast<int>(kind);
  }
}

TEST(Schedule, ExponentialGapsPassAndersonDarlingAndFixedGapsFail) {
  auto gaps = [](ScheduleKind kind) {
    ScheduleSpec spec;
    spec.kind = kind;
    spec.rate_per_s = 10'000;
    Schedule s(spec, 0, 7);
    std::vector<double> g;
    int64_t prev = *s.next();
    for (int i = 0; i < 2000; ++i) {
      int64_t t = *s.next();
      g.push_back(static_cast<double>(t - prev));
      prev = t;
    }
    return g;
  };
  auto exp_gaps = gaps(ScheduleKind::kExponential);
  EXPECT_FALSE(analysis::anderson_darling_exponential(exp_gaps).rejects_at(5));
  auto uni_gaps = gaps(ScheduleKind::kUniform);
  EXPECT_TRUE(analysis::anderson_darling_exponential(uni_gaps).rejects_at(5));
}

TEST(Schedule, SameSeedSameTimesDifferentSeedDifferentTimes) {
  ScheduleSpec spec;
  Schedule a(spec, 0, 1), b(spec, 0, 1), c(spec, 0, 2);
  bool differ = false;
  for (int i = 0; i < 100; ++i) {
    auto ta = a.next(), tb = b.next(), tc = c.next();
    EXPECT_EQ(ta, tb);
    differ |= ta != tc;
  }
  EXPECT_TRUE(differ);
}

TEST(Schedule, TraceReplayIsExactAndEnds) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kTrace;
  spec.trace_ns = {500, 500, 700, 10'000};
  Schedule s(spec, 1'000, 0);
  EXPECT_EQ(s.peek(), 1'000);
  EXPECT_EQ(s.next(), 1'000);
  EXPECT_EQ(s.next(), 1'000);
  EXPECT_EQ(s.next(), 1'200);
  EXPECT_EQ(s.next(), 10'500);
  EXPECT_FALSE(s.next().has_value());
  EXPECT_EQ(s.issued(), 4u);
}

TEST(Schedule, SplitKeepsTheUnionOfATrace) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kTrace;
  spec.trace_ns = {100, 200, 300, 400, 500};
  auto parts = split(spec, 3);
  ASSERT_EQ(parts.size(), 3u);
  std::vector<int64_t> all;
  for (auto& p : parts) {
    Schedule s(p, 0, 0);
    while (auto t = s.next()) all.push_back(*t);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{0, 100, 200, 300, 400}));
  spec.kind = ScheduleKind::kExponential;
  spec.rate_per_s = 900;
  auto rparts = split(spec, 3);
  EXPECT_DOUBLE_EQ(rparts[1].rate_per_s, 300);
}

TEST(Schedule, TraceFileIsReadWithCommentsAndRejectsBadLines) {
  const std::string path = ::testing::TempDir() + "nabla_trace_test.txt";
  {
    std::ofstream f(path);
    f << "# send times\n1000\n\n1500\r\n4000\n";
  }
  EXPECT_EQ(load_trace(path), (std::vector<int64_t>{1000, 1500, 4000}));
  {
    std::ofstream f(path);
    f << "1000\n900\n";
  }
  EXPECT_THROW(load_trace(path), std::invalid_argument);
  {
    std::ofstream f(path);
    f << "10x\n";
  }
  EXPECT_THROW(load_trace(path), std::invalid_argument);
  std::remove(path.c_str());
  EXPECT_THROW(load_trace(path), std::system_error);
}

TEST(Schedule, InvalidSpecsThrow) {
  ScheduleSpec spec;
  spec.rate_per_s = 0;
  EXPECT_THROW(Schedule(spec, 0, 0), std::invalid_argument);
  spec = {};
  spec.kind = ScheduleKind::kTrace;
  EXPECT_THROW(Schedule(spec, 0, 0), std::invalid_argument);
  spec.trace_ns = {5, 3};
  EXPECT_THROW(Schedule(spec, 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::loadgen
