#include "nabla/injector/faults.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <numbers>
#include <vector>

namespace nabla::injector {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(Loss, Bernoulli10PercentIsInsideTheBinomial999Interval) {
  constexpr int kPackets = 20'000;
  constexpr double kP = 0.10;
  // Two-sided 99.9%: mean +- 3.2905 sd of Binomial(20000, 0.1) = [1860.4, 2139.6].
  const double mean = kPackets * kP;
  const double sd = std::sqrt(kPackets * kP * (1 - kP));
  for (uint64_t seed : {1ULL, 42ULL, 2026ULL}) {
    Loss loss(LossSpec{Waveform::constant(1.0), LossModel::kBernoulli, kP}, seed);
    int dropped = 0;
    for (int i = 0; i < kPackets; ++i) dropped += loss.drop(i * 100'000) ? 1 : 0;
    EXPECT_GE(dropped, mean - 3.2905 * sd) << seed;
    EXPECT_LE(dropped, mean + 3.2905 * sd) << seed;
  }
}

TEST(Loss, SameSeedReplaysTheSamePattern) {
  const LossSpec spec{Waveform::constant(1.0), LossModel::kBernoulli, 0.3};
  Loss a(spec, 9);
  Loss b(spec, 9);
  Loss c(spec, 10);
  int differences = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool x = a.drop(i);
    EXPECT_EQ(x, b.drop(i));
    differences += x != c.drop(i) ? 1 : 0;
  }
  EXPECT_GT(differences, 100);
}

TEST(Loss, GilbertElliottMeanBurstIsOneOverR) {
  // Bad state always loses (1-h = 1), good never (1-k = 0): loss bursts are
  // the sojourns in the bad state, geometric with mean 1/r = 4.
  const LossSpec spec{Waveform::constant(1.0), LossModel::kGilbertElliott, 0.01, 0.25, 1.0, 0.0};
  Loss loss(spec, 77);
  int bursts = 0;
  int lost = 0;
  bool previous = false;
  for (int i = 0; i < 400'000; ++i) {
    const bool d = loss.drop(i);
    lost += d ? 1 : 0;
    if (d && !previous) ++bursts;
    previous = d;
  }
  ASSERT_GT(bursts, 1000);
  const double mean_burst = static_cast<double>(lost) / bursts;
  EXPECT_NEAR(mean_burst, 4.0, 0.4);
  // Stationary loss rate p / (p + r) = 0.0385.
  EXPECT_NEAR(static_cast<double>(lost) / 400'000, 0.01 / 0.26, 0.004);
}

TEST(Loss, InactiveWhileWaveformLow) {
  const LossSpec spec{Waveform::square(1.0, 100 * kMs, 0.5), LossModel::kBernoulli, 1.0};
  Loss loss(spec, 1);
  EXPECT_TRUE(loss.drop(10 * kMs));
  EXPECT_FALSE(loss.drop(60 * kMs));
  EXPECT_TRUE(loss.drop(110 * kMs));
}

TEST(Partition, DropsEverythingWhileHighNothingWhileLow) {
  const Partition partition{Waveform::square(1.0, 1000 * kMs, 0.5)};
  int high_drops = 0;
  int low_drops = 0;
  for (int64_t t = 0; t < 500 * kMs; t += kMs) high_drops += partition.drop(t) ? 1 : 0;
  for (int64_t t = 500 * kMs; t < 1000 * kMs; t += kMs) low_drops += partition.drop(t) ? 1 : 0;
  EXPECT_EQ(high_drops, 500);
  EXPECT_EQ(low_drops, 0);
}

TEST(Jitter, UniformStaysInsideTheSpread) {
  Jitter jitter(JitterSpec{Waveform::constant(1.0), 1000, JitterDistribution::kUniform, 0.0}, 3);
  double sum = 0;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t x = jitter.offset_ns(i);
    ASSERT_GE(x, -1000);
    ASSERT_LE(x, 1000);
    sum += static_cast<double>(x);
  }
  EXPECT_NEAR(sum / 20'000, 0.0, 25.0);  // sd of the mean = 577 / sqrt(20000) = 4.1
}

TEST(Jitter, NormalHasTheRequestedSigma) {
  Jitter jitter(JitterSpec{Waveform::constant(1.0), 2000, JitterDistribution::kNormal, 0.0}, 5);
  std::vector<double> xs;
  for (int i = 0; i < 20'000; ++i) xs.push_back(static_cast<double>(jitter.offset_ns(i)));
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(xs.size() - 1));
  EXPECT_NEAR(mean, 0.0, 60.0);  // 4 sd of the mean
  EXPECT_NEAR(sd, 2000.0, 100.0);
}

TEST(Jitter, ParetoIsRightSkewedWithZeroMean) {
  Jitter jitter(JitterSpec{Waveform::constant(1.0), 1000, JitterDistribution::kPareto, 0.0}, 8);
  double sum = 0;
  int64_t min = 0;
  int above_two_sigma = 0;
  for (int i = 0; i < 50'000; ++i) {
    const int64_t x = jitter.offset_ns(i);
    sum += static_cast<double>(x);
    min = std::min(min, x);
    above_two_sigma += x > 2000 ? 1 : 0;
  }
  EXPECT_NEAR(sum / 50'000, 0.0, 40.0);
  EXPECT_GE(min, -667);  // (1 - 1.5) * 4/3 * 1000 is the floor
  EXPECT_GT(above_two_sigma, 0);
}

TEST(Jitter, ParetoTailStopsAtTheSixtySecondMaximum) {
  // A spread of 60 s: a Pareto draw above 1 sigma (about 9% of them) would
  // add more than the 60 s maximum delay, its tail thousands of times that.
  constexpr int64_t kMax = 60'000 * kMs;
  Jitter jitter(JitterSpec{Waveform::constant(1.0), kMax, JitterDistribution::kPareto, 0.0}, 8);
  int64_t max = 0;
  int at_cap = 0;
  for (int i = 0; i < 10'000; ++i) {
    const int64_t x = jitter.offset_ns(i);
    max = std::max(max, x);
    at_cap += x == kMax ? 1 : 0;
  }
  EXPECT_EQ(max, kMax);
  EXPECT_GT(at_cap, 100);
}

TEST(Jitter, CorrelationMakesConsecutiveDrawsAlike) {
  auto lag1 = [](double correlation) {
    Jitter jitter(
        JitterSpec{Waveform::constant(1.0), 1000, JitterDistribution::kUniform, correlation}, 11);
    std::vector<double> xs;
    for (int i = 0; i < 10'000; ++i) xs.push_back(static_cast<double>(jitter.offset_ns(i)));
    double mean = 0;
    for (double x : xs) mean += x;
    mean /= static_cast<double>(xs.size());
    double num = 0;
    double den = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      den += (xs[i] - mean) * (xs[i] - mean);
      if (i > 0) num += (xs[i] - mean) * (xs[i - 1] - mean);
    }
    return num / den;
  };
  EXPECT_NEAR(lag1(0.0), 0.0, 0.05);
  EXPECT_GT(lag1(0.8), 0.7);
}

TEST(Reorder, EveryGapthPacketIsSentAtOnceWithProbabilityOne) {
  Reorder reorder(ReorderSpec{Waveform::constant(1.0), 1.0, 5}, 1);
  std::vector<int> sent_now;
  for (int i = 0; i < 20; ++i) {
    if (reorder.send_now(i)) sent_now.push_back(i);
  }
  EXPECT_EQ(sent_now, (std::vector<int>{4, 9, 14, 19}));
  Reorder never(ReorderSpec{Waveform::constant(1.0), 1.0, 0}, 1);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(never.send_now(i));
}

TEST(GatedCoin, FollowsProbabilityOnlyWhileHigh) {
  GatedCoin coin(Waveform::square(1.0, 2 * kMs, 0.5), 0.5, 4);
  int high_heads = 0;
  int low_heads = 0;
  for (int i = 0; i < 10'000; ++i) {
    high_heads += coin.flip(i % kMs) ? 1 : 0;
    low_heads += coin.flip(kMs + i % kMs) ? 1 : 0;
  }
  EXPECT_NEAR(high_heads, 5000, 300);
  EXPECT_EQ(low_heads, 0);
}

TEST(RateLimit, SerialisationDelayArithmetic) {
  // 12 Mbit/s: a 1500-byte packet takes exactly 1 ms on the wire.
  RateLimit limit(RateLimitSpec{Waveform::constant(1.0), 12e6, 0});
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(limit.delay_ns(0, 1500), i * kMs) << i;
  // After the queue drained (at 10 ms) and 1 s of idle: no wait but its own.
  EXPECT_EQ(limit.delay_ns(1010 * kMs, 1500), kMs);
}

TEST(RateLimit, BurstPassesThenQueues) {
  RateLimit limit(RateLimitSpec{Waveform::constant(1.0), 12e6, 3000});
  EXPECT_EQ(limit.delay_ns(0, 1500), 0);
  EXPECT_EQ(limit.delay_ns(0, 1500), 0);
  EXPECT_EQ(limit.delay_ns(0, 1500), kMs);
  EXPECT_EQ(limit.delay_ns(0, 1500), 2 * kMs);
  // 1 s later the bucket is full again (capped at 3000 bytes).
  EXPECT_EQ(limit.delay_ns(1000 * kMs, 1500), 0);
  EXPECT_EQ(limit.delay_ns(1000 * kMs, 1500), 0);
  EXPECT_EQ(limit.delay_ns(1000 * kMs, 750), kMs / 2);
}

TEST(RateLimit, BacklogHoldsAtMostTheSixtySecondMaximum) {
  // 8 kbit/s: a 1000-byte packet takes 1 s; 70 arrive at once.
  RateLimit limit(RateLimitSpec{Waveform::constant(1.0), 8000.0, 0});
  for (int i = 1; i <= 60; ++i) EXPECT_EQ(limit.delay_ns(0, 1000), i * 1000 * kMs) << i;
  for (int i = 61; i <= 70; ++i) EXPECT_EQ(limit.delay_ns(0, 1000), RateLimit::kBacklogFull) << i;
  // The refused ones took nothing: 1 s later exactly one more fits, at 60 s.
  EXPECT_EQ(limit.delay_ns(1000 * kMs, 1000), 60'000 * kMs);
  EXPECT_EQ(limit.delay_ns(1000 * kMs, 1000), RateLimit::kBacklogFull);
  // A smaller cap, as the spec allows.
  RateLimit short_backlog(RateLimitSpec{Waveform::constant(1.0), 8000.0, 0, 2500 * kMs});
  EXPECT_EQ(short_backlog.delay_ns(0, 1000), 1000 * kMs);
  EXPECT_EQ(short_backlog.delay_ns(0, 1000), 2000 * kMs);
  EXPECT_EQ(short_backlog.delay_ns(0, 1000), RateLimit::kBacklogFull);
}

// A trace that holds level 1/2 for ever (two points, step, looped).
Waveform half_level() {
  return Waveform::from_trace(
      1.0, TraceShape{{{0, 0.5}, {1000 * kMs, 0.5}}, true, TraceInterpolation::kStep});
}

TEST(WaveLevel, ScalesLossJitterCoinsAndRate) {
  Loss loss(LossSpec{half_level(), LossModel::kBernoulli, 0.2}, 11);
  int lost = 0;
  for (int i = 0; i < 100'000; ++i) lost += loss.drop(i * 1000) ? 1 : 0;
  // 0.2 x 1/2: binomial 99.9% interval around 10'000.
  EXPECT_NEAR(lost, 10'000, 3.2905 * std::sqrt(100'000 * 0.1 * 0.9));

  Jitter jitter(JitterSpec{half_level(), 2 * kMs, JitterDistribution::kUniform, 0.0}, 12);
  int64_t widest = 0;
  for (int i = 0; i < 10'000; ++i) widest = std::max(widest, std::abs(jitter.offset_ns(i)));
  EXPECT_LE(widest, kMs);
  EXPECT_GT(widest, kMs * 9 / 10);

  GatedCoin coin(half_level(), 0.5, 13);
  int heads = 0;
  for (int i = 0; i < 100'000; ++i) heads += coin.flip(i) ? 1 : 0;
  EXPECT_NEAR(heads, 25'000, 3.2905 * std::sqrt(100'000 * 0.25 * 0.75));

  // 12 Mbit/s at level 1/2 fills at 24 Mbit/s: 1500 bytes take 0.5 ms.
  RateLimit limit(RateLimitSpec{half_level(), 12e6, 0});
  EXPECT_EQ(limit.delay_ns(0, 1500), kMs / 2);
  EXPECT_EQ(limit.delay_ns(0, 1500), kMs);
}

TEST(WaveLevel, SineMovesTheLossRateWithItsLevel) {
  // Over a sine's peak quarter-periods the level averages 0.818, over its
  // trough quarters 0.182 (1/2 ± 1/π).
  const Waveform sine = Waveform::sine(1.0, 1000 * kMs);
  Loss loss(LossSpec{sine, LossModel::kBernoulli, 0.5}, 14);
  int near_peak = 0;
  int near_trough = 0;
  for (int64_t t = 0; t < 100 * 1000 * kMs; t += kMs / 4) {
    const int64_t within = t % (1000 * kMs);
    const bool dropped = loss.drop(t);
    if (within < 250 * kMs || within >= 750 * kMs) near_peak += dropped ? 1 : 0;
    if (within >= 250 * kMs && within < 750 * kMs) near_trough += dropped ? 1 : 0;
  }
  const double per_half = 100 * 500 * 4;  // draws in the peak (or trough) halves
  EXPECT_NEAR(near_peak / per_half, 0.5 * (0.5 + 1.0 / std::numbers::pi), 0.005);
  EXPECT_NEAR(near_trough / per_half, 0.5 * (0.5 - 1.0 / std::numbers::pi), 0.005);
}

// An IPv4/UDP packet 10.0.0.1:1000 -> 10.0.0.2:2000 with a 12-byte payload.
std::vector<uint8_t> udp_packet() {
  std::vector<uint8_t> p = {0x45, 0, 0,  40, 0, 1, 0x40, 0,    64,   17,   0, 0,  10, 0,
                            0,    1, 10, 0,  0, 2, 0x03, 0xe8, 0x07, 0xd0, 0, 20, 0,  0};
  for (uint8_t c :
       std::array<uint8_t, 12>{'h', 'e', 'l', 'l', 'o', ' ', 'n', 'a', 'b', 'l', 'a', '!'}) {
    p.push_back(c);
  }
  return p;
}

TEST(Corruption, FlipsExactlyOnePayloadBitAndFixesTheChecksum) {
  auto original = udp_packet();
  ASSERT_TRUE(fix_transport_checksum(original));
  ASSERT_TRUE(transport_checksum_ok(original));
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    auto fixed = original;
    ASSERT_TRUE(corrupt_packet(fixed, rng, true));
    EXPECT_TRUE(transport_checksum_ok(fixed));
    int bits = 0;
    for (size_t i = 0; i < fixed.size(); ++i) {
      if (i == 26 || i == 27) continue;  // the checksum itself
      bits += std::popcount(static_cast<unsigned>(fixed[i] ^ original[i]));
      if (fixed[i] != original[i]) {
        EXPECT_GE(i, 28u) << "header byte changed";
      }
    }
    EXPECT_EQ(bits, 1);
    auto broken = original;
    ASSERT_TRUE(corrupt_packet(broken, rng, false));
    EXPECT_FALSE(transport_checksum_ok(broken));
  }
}

// A locally sent packet's checksum field holds only the pseudo-header sum
// (here: garbage). Corrupted without a fix, its checksum is completed first:
// the result always fails the receiver's check, and undoing the one flipped
// bit makes it pass, so the check sees exactly the flip.
TEST(Corruption, APartialChecksumIsCompletedBeforeTheFlip) {
  auto partial = udp_packet();
  partial[26] = 0x12;  // not the packet's checksum
  partial[27] = 0x34;
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 200; ++trial) {
    auto broken = partial;
    ASSERT_TRUE(corrupt_packet(broken, rng, false, true));
    EXPECT_FALSE(transport_checksum_ok(broken));
    for (size_t i = 28; i < broken.size(); ++i) broken[i] = partial[i];  // undo the flip
    EXPECT_TRUE(transport_checksum_ok(broken)) << trial;
  }
}

TEST(Corruption, RefusesPacketsWithoutPayloadOrNotIp) {
  auto p = udp_packet();
  p.resize(28);
  p[3] = 28;
  p[25] = 8;
  std::mt19937_64 rng(1);
  EXPECT_FALSE(corrupt_packet(p, rng, true));
  std::vector<uint8_t> junk = {0x12, 0x34};
  EXPECT_FALSE(corrupt_packet(junk, rng, true));
}

TEST(DeriveSeed, DistinctPerFaultAndStable) {
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(1234, 3), derive_seed(1234, 3));
}

}  // namespace
}  // namespace nabla::injector
