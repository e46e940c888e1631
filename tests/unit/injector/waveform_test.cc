#include "nabla/injector/waveform.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace nabla::injector {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(Waveform, OffIsAlwaysLowAndConstantAlwaysHigh) {
  const Waveform off = Waveform::off();
  EXPECT_FALSE(off.high(0));
  EXPECT_EQ(off.value(123 * kMs), 0.0);
  const Waveform on = Waveform::constant(20.0 * kMs, 5 * kMs);
  EXPECT_TRUE(on.high(0));
  EXPECT_TRUE(on.high(1'000'000 * kMs));
  EXPECT_EQ(on.value(7 * kMs), 20.0 * kMs);
  EXPECT_EQ(on.at(7 * kMs).cycle, 0);
}

TEST(Waveform, SquareHalvesAndCycles) {
  // 5 ms amplitude, 1 s period, 50% duty, starting at t = 10 s.
  const Waveform w = Waveform::square(5.0 * kMs, 1000 * kMs, 0.5, 0, 0, 10'000 * kMs);
  EXPECT_EQ(w.at(9'999 * kMs).cycle, -1);
  EXPECT_FALSE(w.high(9'999 * kMs));
  EXPECT_TRUE(w.high(10'000 * kMs));
  EXPECT_EQ(w.value(10'200 * kMs), 5.0 * kMs);
  EXPECT_TRUE(w.high(10'500 * kMs - 1));
  EXPECT_FALSE(w.high(10'500 * kMs));
  EXPECT_EQ(w.value(10'700 * kMs), 0.0);
  EXPECT_EQ(w.at(10'700 * kMs).cycle, 0);
  EXPECT_EQ(w.at(11'100 * kMs).cycle, 1);
  EXPECT_EQ(w.at(11'100 * kMs).half, WaveHalf::kHigh);
  EXPECT_EQ(w.at(20'600 * kMs).cycle, 10);
  EXPECT_EQ(w.at(20'600 * kMs).half, WaveHalf::kLow);
}

TEST(Waveform, SquareDutyPhaseAndFiniteCycles) {
  // 25% duty, phase 250 ms, 2 cycles, start at 0.
  const Waveform w = Waveform::square(1.0, 1000 * kMs, 0.25, 250 * kMs, 2, 0);
  EXPECT_FALSE(w.high(0));  // t = 250 ms: past the 250 ms high part
  EXPECT_EQ(w.at(0).cycle, 0);
  EXPECT_TRUE(w.high(750 * kMs));  // t = 1000 ms: cycle 1 starts high
  EXPECT_EQ(w.at(750 * kMs).cycle, 1);
  EXPECT_FALSE(w.high(1000 * kMs));
  EXPECT_FALSE(w.at(1740 * kMs).finished);  // t = 1990 ms
  const WavePoint done = w.at(1750 * kMs);  // t = 2000 ms: both cycles done
  EXPECT_TRUE(done.finished);
  EXPECT_EQ(done.half, WaveHalf::kLow);
  EXPECT_EQ(done.cycle, 2);
  EXPECT_FALSE(w.high(100'000 * kMs));
}

TEST(Waveform, HighFractionMatchesDuty) {
  const Waveform w = Waveform::square(1.0, 10 * kMs, 0.3, 0, 0, 0);
  int high = 0;
  for (int64_t t = 0; t < 1000 * kMs; t += 10'000) high += w.high(t) ? 1 : 0;
  EXPECT_EQ(high, 30'000);
}

TEST(Waveform, SineFollowsItsClosedForm) {
  // level(t) = (1 + cos(2π t / P)) / 2: 1 at the start, 1/2 at a quarter
  // period, 0 at half, anchored at 3 s with a 2 s period and 10 ms amplitude.
  const Waveform w = Waveform::sine(10.0 * kMs, 2000 * kMs, 0, 0, 3000 * kMs);
  EXPECT_EQ(w.at(2999 * kMs).cycle, -1);
  EXPECT_EQ(w.level(2999 * kMs), 0.0);
  EXPECT_DOUBLE_EQ(w.level(3000 * kMs), 1.0);
  EXPECT_NEAR(w.level(3500 * kMs), 0.5, 1e-12);
  EXPECT_NEAR(w.level(4000 * kMs), 0.0, 1e-12);
  EXPECT_NEAR(w.level(4500 * kMs), 0.5, 1e-12);
  for (int64_t t_ms = 0; t_ms < 4000; t_ms += 37) {
    const double expected = 0.5 * (1.0 + std::cos(2.0 * std::numbers::pi * t_ms / 2000.0));
    EXPECT_NEAR(w.value((3000 + t_ms) * kMs), 10.0 * kMs * expected, 1e-3) << t_ms;
  }
  EXPECT_EQ(w.at(5100 * kMs).cycle, 1);
  // High while the level is at least 1/2: the first and last quarter.
  EXPECT_TRUE(w.high(3400 * kMs));
  EXPECT_FALSE(w.high(3600 * kMs));
  EXPECT_TRUE(w.high(4600 * kMs));
  // Finite cycles end at level 0.
  const Waveform two = Waveform::sine(1.0, 100 * kMs, 0, 2, 0);
  EXPECT_FALSE(two.at(199 * kMs).finished);
  EXPECT_TRUE(two.at(200 * kMs).finished);
  EXPECT_EQ(two.level(250 * kMs), 0.0);
}

TraceShape shape(bool loop, TraceInterpolation interpolation) {
  // 0 -> 1 over the first second, 1 -> 0.5 over the next two.
  return TraceShape{{{0, 0.0}, {1000 * kMs, 1.0}, {3000 * kMs, 0.5}}, loop, interpolation};
}

TEST(Waveform, TraceInterpolatesLinearlyOrHoldsEachStep) {
  const Waveform linear =
      Waveform::from_trace(20.0 * kMs, shape(true, TraceInterpolation::kLinear), 100 * kMs);
  EXPECT_EQ(linear.at(99 * kMs).cycle, -1);
  EXPECT_DOUBLE_EQ(linear.level(100 * kMs), 0.0);
  EXPECT_DOUBLE_EQ(linear.level(350 * kMs), 0.25);
  EXPECT_DOUBLE_EQ(linear.value(600 * kMs), 10.0 * kMs);
  EXPECT_DOUBLE_EQ(linear.level(1100 * kMs), 1.0);
  EXPECT_DOUBLE_EQ(linear.level(2100 * kMs), 0.75);
  EXPECT_EQ(linear.at(600 * kMs).cycle, 0);
  EXPECT_EQ(linear.at(2100 * kMs).cycle, 1);

  const Waveform step =
      Waveform::from_trace(20.0 * kMs, shape(true, TraceInterpolation::kStep), 100 * kMs);
  EXPECT_DOUBLE_EQ(step.level(1099 * kMs), 0.0);
  EXPECT_DOUBLE_EQ(step.level(1100 * kMs), 1.0);
  EXPECT_DOUBLE_EQ(step.level(3099 * kMs), 1.0);
  EXPECT_EQ(step.at(1100 * kMs).half, WaveHalf::kHigh);
}

TEST(Waveform, TraceLoopsCountingSegmentsOnOrPlaysOnce) {
  const Waveform looped = Waveform::from_trace(1.0, shape(true, TraceInterpolation::kLinear), 0);
  // Second loop: t = 3.5 s is 0.5 s into segment 0 of loop 1, segment 2 overall.
  EXPECT_DOUBLE_EQ(looped.level(3500 * kMs), 0.5);
  EXPECT_EQ(looped.at(3500 * kMs).cycle, 2);
  EXPECT_EQ(looped.at(5000 * kMs).cycle, 3);
  EXPECT_FALSE(looped.at(100'000 * kMs).finished);

  const Waveform once = Waveform::from_trace(1.0, shape(false, TraceInterpolation::kLinear), 0);
  EXPECT_DOUBLE_EQ(once.level(2999 * kMs), 0.5 + 0.5 * 1.0 / 2000.0);
  const WavePoint over = once.at(3000 * kMs);
  EXPECT_TRUE(over.finished);
  EXPECT_EQ(over.level, 0.0);
  EXPECT_EQ(over.cycle, 2);
}

}  // namespace
}  // namespace nabla::injector
