#include "nabla/injector/timer_wheel.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace nabla::injector {
namespace {

std::vector<ExpiredTimer> advance_collect(TimerWheel& wheel, int64_t now_ns) {
  std::vector<ExpiredTimer> out;
  wheel.advance(now_ns, [&](const ExpiredTimer& e) { out.push_back(e); });
  return out;
}

TEST(TimerWheel, EmptyWheelHasNoDeadline) {
  TimerWheel wheel(0);
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.next_deadline_ns(), TimerWheel::kNoDeadline);
  EXPECT_TRUE(advance_collect(wheel, 1'000'000'000).empty());
}

TEST(TimerWheel, FiresInDeadlineOrderNotInsertionOrder) {
  TimerWheel wheel(0);
  wheel.schedule(5'000, 5);
  wheel.schedule(1'000, 1);
  wheel.schedule(3'500, 3);
  wheel.schedule(2'000, 2);
  EXPECT_EQ(wheel.next_deadline_ns(), 1'000);
  const auto fired = advance_collect(wheel, 10'000);
  ASSERT_EQ(fired.size(), 4u);
  EXPECT_EQ(fired[0].payload, 1u);
  EXPECT_EQ(fired[1].payload, 2u);
  EXPECT_EQ(fired[2].payload, 3u);
  EXPECT_EQ(fired[3].payload, 5u);
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, DoesNotFireBeforeDeadlineEvenWithinTheSameMicrosecond) {
  TimerWheel wheel(0);
  wheel.schedule(1'700, 7);
  EXPECT_TRUE(advance_collect(wheel, 1'699).empty());
  EXPECT_EQ(wheel.next_deadline_ns(), 1'700);
  const auto fired = advance_collect(wheel, 1'700);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, 1'700);
}

TEST(TimerWheel, EqualDeadlinesFireInInsertionOrder) {
  TimerWheel wheel(0);
  for (uint64_t i = 0; i < 100; ++i) wheel.schedule(42'000, i);
  wheel.schedule(41'999, 1000);  // same microsecond, earlier: first
  const auto fired = advance_collect(wheel, 42'000);
  ASSERT_EQ(fired.size(), 101u);
  EXPECT_EQ(fired[0].payload, 1000u);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(fired[i + 1].payload, i);
}

TEST(TimerWheel, DeadlinesSpanningEveryLevelFireInOrder) {
  const int64_t start = 123'456'789;  // not aligned to any level boundary
  TimerWheel wheel(start);
  // 10 µs (level 0), 5 ms (level 1), 300 ms (level 2), 20 s (level 3),
  // 30 min (level 4) and 3 h (beyond the span: parked and re-placed).
  const std::vector<int64_t> offsets = {10'000,         5'000'000,         300'000'000,
                                        20'000'000'000, 1'800'000'000'000, 10'800'000'000'000};
  for (size_t i = offsets.size(); i-- > 0;) wheel.schedule(start + offsets[i], i);
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(wheel.next_deadline_ns(), start + offsets[i]) << i;
    EXPECT_TRUE(advance_collect(wheel, start + offsets[i] - 1).empty()) << i;
    const auto fired = advance_collect(wheel, start + offsets[i]);
    ASSERT_EQ(fired.size(), 1u) << i;
    EXPECT_EQ(fired[0].payload, i);
    EXPECT_EQ(fired[0].deadline_ns, start + offsets[i]);
  }
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, NextDeadlineSeesUpperLevelBeforeWrappedLevelZero) {
  // At tick 200, a timer at tick 400 sits in level-0 slot 144 (wrapped) while
  // one at tick 300, scheduled at tick 0, still waits in level 1.
  TimerWheel wheel(0);
  wheel.schedule(300'000, 1);
  advance_collect(wheel, 200'000);
  wheel.schedule(400'000, 2);
  EXPECT_EQ(wheel.next_deadline_ns(), 300'000);
  auto fired = advance_collect(wheel, 399'999);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].payload, 1u);
  EXPECT_EQ(wheel.next_deadline_ns(), 400'000);
}

TEST(TimerWheel, CancelledTimersNeverFireAndStaleHandlesAreRejected) {
  TimerWheel wheel(0);
  const TimerHandle a = wheel.schedule(1'000, 1);
  const TimerHandle b = wheel.schedule(2'000'000, 2);  // level 1
  const TimerHandle c = wheel.schedule(3'000, 3);
  EXPECT_TRUE(wheel.cancel(a));
  EXPECT_FALSE(wheel.cancel(a));
  EXPECT_TRUE(wheel.cancel(b));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.next_deadline_ns(), 3'000);
  const auto fired = advance_collect(wheel, 10'000'000);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].payload, 3u);
  EXPECT_FALSE(wheel.cancel(c));  // already fired
  // The node of `a` is recycled; the old handle must not cancel the new timer.
  const TimerHandle d = wheel.schedule(20'000'000, 4);
  EXPECT_FALSE(wheel.cancel(a));
  EXPECT_TRUE(wheel.cancel(d));
  EXPECT_FALSE(wheel.cancel(TimerHandle{}));
}

TEST(TimerWheel, CallbackMayCancelALaterTimerOfTheSameBatchAndScheduleDueOnes) {
  TimerWheel wheel(0);
  wheel.schedule(5'000, 1);
  const TimerHandle second = wheel.schedule(5'000, 2);
  std::vector<uint64_t> order;
  wheel.advance(5'000, [&](const ExpiredTimer& e) {
    order.push_back(e.payload);
    if (e.payload == 1) {
      EXPECT_TRUE(wheel.cancel(second));
      wheel.schedule(4'000, 3);  // already due: fires in this same advance
      wheel.schedule(9'000, 4);  // not yet due
    }
  });
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.next_deadline_ns(), 9'000);
}

TEST(TimerWheel, PastDeadlinesFireOnNextAdvance) {
  TimerWheel wheel(50'000'000);
  wheel.schedule(10, 1);
  wheel.schedule(49'999'999, 2);
  const auto fired = advance_collect(wheel, 50'000'000);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].payload, 1u);
  EXPECT_EQ(fired[1].payload, 2u);
}

TEST(TimerWheel, AdvanceInSmallStepsMatchesOneBigStep) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> deadline(0, 40'000'000);  // 40 ms
  TimerWheel coarse(0);
  TimerWheel fine(0);
  for (uint64_t i = 0; i < 5000; ++i) {
    const int64_t d = deadline(rng);
    coarse.schedule(d, i);
    fine.schedule(d, i);
  }
  const auto all = advance_collect(coarse, 40'000'000);
  std::vector<ExpiredTimer> stepped;
  for (int64_t now = 0; now <= 40'000'000; now += 37'777) {
    auto part = advance_collect(fine, now);
    for (const auto& e : part) EXPECT_LE(e.deadline_ns, now);
    stepped.insert(stepped.end(), part.begin(), part.end());
  }
  auto rest = advance_collect(fine, 40'000'000);
  stepped.insert(stepped.end(), rest.begin(), rest.end());
  ASSERT_EQ(all.size(), 5000u);
  ASSERT_EQ(stepped.size(), 5000u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].payload, stepped[i].payload) << i;
}

TEST(TimerWheel, OneMillionTimersFireInOrder) {
  constexpr size_t kCount = 1'000'000;
  std::mt19937_64 rng(2026);
  // Deadlines over 2 s with a few thousand exact duplicates to exercise ties.
  std::uniform_int_distribution<int64_t> deadline(0, 2'000'000'000);
  const int64_t start = 1'000'000'000'000;  // a typical CLOCK_MONOTONIC value
  TimerWheel wheel(start);
  std::vector<std::pair<int64_t, uint64_t>> expected;
  expected.reserve(kCount);
  for (uint64_t i = 0; i < kCount; ++i) {
    const int64_t d =
        start + (i % 500 == 0 && i > 0 ? expected.back().first - start : deadline(rng));
    wheel.schedule(d, i);
    expected.emplace_back(d, i);
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto t0 = std::chrono::steady_clock::now();
  size_t index = 0;
  size_t mismatches = 0;
  // Advance like an event loop would: to each next deadline, 1 ms at most.
  int64_t now = start;
  while (!wheel.empty()) {
    now = std::min(wheel.next_deadline_ns(), now + 1'000'000);
    wheel.advance(now, [&](const ExpiredTimer& e) {
      if (index >= kCount || e.payload != expected[index].second ||
          e.deadline_ns != expected[index].first) {
        ++mismatches;
      }
      ++index;
    });
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(index, kCount);
  EXPECT_EQ(mismatches, 0u);
  // Printed, not asserted: unit tests make no timing claims.
  std::printf("1M timers fired in %.1f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
}

}  // namespace
}  // namespace nabla::injector
