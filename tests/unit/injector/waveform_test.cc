#include "nabla/injector/waveform.hh"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace nabla::injector
