// The sampler beside a measurement, driven by a fake counter source and a
// fake wall clock: it takes intervals until stopped, keeps the estimate of
// each, and stops promptly.
#include "nabla/coordinator/memlat_sampler.hh"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace nabla::coordinator {
namespace {

TEST(MemlatSampler, TakesIntervalsUntilStoppedWithTheirEstimates) {
  std::atomic<int> reads{0};
  std::atomic<std::int64_t> clock{1'000};
  auto read = [&](std::int64_t interval_ns) {
    ++reads;
    // 100 cycles of memory per read at f_base: (44 + 100) / 2.1 ns.
    return memlat::CounterSample{interval_ns, 2.1e6, 2.1e6, 100.0 * 500, 500};
  };
  MemlatSampler sampler(read, {44, 2.1, 1}, 2'000'000, [&] { return clock += 10; });
  while (reads.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::vector<MemlatSampler::Interval> intervals = sampler.stop();
  ASSERT_GE(intervals.size(), 3u);
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    ASSERT_TRUE(intervals[i].estimate.has_value());
    EXPECT_DOUBLE_EQ(intervals[i].estimate->latency_ns, 144 / 2.1);
    EXPECT_EQ(intervals[i].counters.interval_ns, 2'000'000);
    if (i > 0) {
      EXPECT_GT(intervals[i].t_ns, intervals[i - 1].t_ns);
    }
  }
  EXPECT_EQ(sampler.stop().size(), intervals.size());  // idempotent, nothing after stop
}

TEST(MemlatSampler, StopsWithinAnIntervalThatHasNotEnded) {
  MemlatSampler sampler(
      [](std::int64_t ns) {
        return memlat::CounterSample{ns, 1, 1, 0, 0};
      },
      {}, 3'600'000'000'000, [] { return std::int64_t{0}; });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(sampler.stop().empty());
  // An hour-long interval is not waited out: stop wakes the thread.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace nabla::coordinator
