// The Accelerometer equations against the paper's own numbers: the three
// retrospective case studies (Table 6) and the applications of Table 7, each
// to the digits the paper prints. The paper's percentages are truncated, not
// rounded (AES-NI: 15.776% is printed 15.7%, inference 72.399% as 72.39%),
// so the check truncates too.
#include "nabla/accel/model.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <stdexcept>

namespace nabla::accel {
namespace {

// The gain of a ratio as a percentage truncated to `digits` decimals.
double truncated_percent(double ratio, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::floor((ratio - 1.0) * 100.0 * scale + 1e-9) / scale;
}

// One row of the paper's Table 6 / Table 7, in its column order; NA is 0
// for an overhead and nullopt for A.
Params table_row(double c, double alpha, double n, double o0, double q, double l, double o1,
                 std::optional<double> a) {
  Params p;
  p.cycles_per_s = c;
  p.alpha = alpha;
  p.offloads_per_s = n;
  p.setup_cycles = o0;
  p.queue_cycles = q;
  p.transfer_cycles = l;
  p.switch_cycles = o1;
  p.accel_factor = a;
  return p;
}

const Params kAesNi = table_row(2.0e9, 0.165844, 298951, 10, 0, 3, 0, 6);
const Params kEncryption = table_row(2.3e9, 0.19154, 101863, 0, 0, 2530, 0, std::nullopt);
const Params kInference = table_row(2.5e9, 0.52, 10, 25'000'000, 0, 0, 12'500, std::nullopt);

TEST(AccelCaseStudy, AesNiOnChipSyncIs15Point7Percent) {
  const Estimate e = estimate(kAesNi, Design::kSync, Strategy::kOnChip);
  EXPECT_DOUBLE_EQ(truncated_percent(e.speedup, 1), 15.7);
  ASSERT_TRUE(e.latency_reduction.has_value());
  EXPECT_DOUBLE_EQ(*e.latency_reduction, e.speedup);  // eqn (1) gives both
}

TEST(AccelCaseStudy, EncryptionOffChipAsyncIs8Point6Percent) {
  const Estimate e = estimate(kEncryption, Design::kAsync, Strategy::kOffChip);
  EXPECT_DOUBLE_EQ(truncated_percent(e.speedup, 1), 8.6);
  EXPECT_FALSE(e.latency_reduction.has_value());  // A is not given (NA)
}

TEST(AccelCaseStudy, InferenceRemoteAsyncDistinctIs72Point39Percent) {
  const Estimate e = estimate(kInference, Design::kAsyncDistinct, Strategy::kRemote);
  EXPECT_DOUBLE_EQ(truncated_percent(e.speedup, 2), 72.39);
}

TEST(AccelCaseStudy, RemoteLeavesTransferOutOfSpeedupUnlessSync) {
  Params p = kInference;
  const double without = estimate(p, Design::kAsyncDistinct, Strategy::kRemote).speedup;
  p.transfer_cycles = 1e6;
  EXPECT_DOUBLE_EQ(estimate(p, Design::kAsyncDistinct, Strategy::kRemote).speedup, without);
  EXPECT_LT(estimate(p, Design::kAsyncDistinct, Strategy::kOffChip).speedup, without);
  // A sync host blocks its core through the network transfer.
  p.accel_factor = 1;
  Params no_transfer = p;
  no_transfer.transfer_cycles = 0;
  EXPECT_LT(estimate(p, Design::kSync, Strategy::kRemote).speedup,
            estimate(no_transfer, Design::kSync, Strategy::kRemote).speedup);
}

// Table 7 with Fig. 20's estimates: on-chip sync, o0 = Q = L = 0.
double on_chip_sync(double c, double alpha, double n, double a) {
  return estimate(table_row(c, alpha, n, 0, 0, 0, 0, a), Design::kSync, Strategy::kOnChip).speedup;
}

TEST(AccelApplication, Table7OnChipRowsMatchFigure20) {
  EXPECT_DOUBLE_EQ(truncated_percent(on_chip_sync(2.3e9, 0.15, 15008, 5), 1), 13.6);
  EXPECT_DOUBLE_EQ(truncated_percent(on_chip_sync(2.3e9, 0.1512, 1473681, 4), 1), 12.7);
  EXPECT_DOUBLE_EQ(truncated_percent(on_chip_sync(2.0e9, 0.055, 51695, 1.5), 2), 1.86);
}

TEST(AccelClosedForm, EachDesignIsAmdahlWithItsOverheads) {
  Params p;
  p.cycles_per_s = 1e9;
  p.alpha = 0.4;
  p.accel_factor = 8;
  p.offloads_per_s = 1000;
  p.setup_cycles = 100;
  p.transfer_cycles = 200;
  p.queue_cycles = 50;
  p.switch_cycles = 1000;
  const double k = 1000 / 1e9;
  const double base = 0.6, acc = 0.4 / 8;
  const double lq = 350;  // o0 + L + Q
  EXPECT_DOUBLE_EQ(estimate(p, Design::kSync, Strategy::kOffChip).speedup,
                   1 / (base + acc + k * lq));
  EXPECT_DOUBLE_EQ(estimate(p, Design::kSyncOs, Strategy::kOffChip).speedup,
                   1 / (base + k * (lq + 2000)));
  EXPECT_DOUBLE_EQ(*estimate(p, Design::kSyncOs, Strategy::kOffChip).latency_reduction,
                   1 / (base + acc + k * (lq + 1000)));
  EXPECT_DOUBLE_EQ(estimate(p, Design::kAsyncDistinct, Strategy::kOffChip).speedup,
                   1 / (base + k * (lq + 1000)));
  EXPECT_DOUBLE_EQ(estimate(p, Design::kAsync, Strategy::kOffChip).speedup, 1 / (base + k * lq));
  EXPECT_DOUBLE_EQ(*estimate(p, Design::kAsync, Strategy::kOffChip).latency_reduction,
                   1 / (base + acc + k * lq));
  EXPECT_DOUBLE_EQ(estimate(p, Design::kAsync, Strategy::kRemote).speedup, 1 / (base + k * 100));
}

TEST(AccelClosedForm, NoKernelNoOffloadsIsNoChange) {
  Params p;
  p.cycles_per_s = 1e9;
  p.alpha = 0;
  p.accel_factor = 4;
  for (Design d : kAllDesigns) {
    EXPECT_DOUBLE_EQ(estimate(p, d, Strategy::kOnChip).speedup, 1.0) << design_name(d);
  }
}

TEST(AccelGranularity, MinimumBytesSolveTheProfitabilityTests) {
  Params p;
  p.cycles_per_s = 2.3e9;
  p.alpha = 0.15;
  p.accel_factor = 27;
  p.transfer_cycles = 2300;
  Kernel k{5.63, 1.0};
  // Sync: 5.63 g (1 - 1/27) > 2300  ->  g > 424.2
  EXPECT_EQ(min_paying_bytes_speedup(p, k, Design::kSync, Strategy::kOffChip), 425.0);
  EXPECT_FALSE(offload_pays_speedup(p, k, 424, Design::kSync, Strategy::kOffChip));
  EXPECT_TRUE(offload_pays_speedup(p, k, 425, Design::kSync, Strategy::kOffChip));
  // Async: 5.63 g > 2300  ->  g > 408.5
  EXPECT_EQ(min_paying_bytes_speedup(p, k, Design::kAsync, Strategy::kOffChip), 409.0);
  // β = 2: 5.63 g^2 > 2300  ->  g > 20.2
  EXPECT_EQ(min_paying_bytes_speedup(p, Kernel{5.63, 2.0}, Design::kAsync, Strategy::kOffChip),
            21.0);
  // A <= 1 never pays where the accelerator's time counts.
  p.accel_factor = 1;
  EXPECT_FALSE(min_paying_bytes_speedup(p, k, Design::kSync, Strategy::kOffChip).has_value());
  EXPECT_FALSE(min_paying_bytes_latency(p, k, Design::kAsync).has_value());
  // Without overheads every offload pays from one byte.
  Params free = p;
  free.transfer_cycles = 0;
  EXPECT_EQ(min_paying_bytes_speedup(free, k, Design::kAsync, Strategy::kOnChip), 1.0);
}

void expect_refused(const Params& p, Design d, const std::string& flag) {
  try {
    estimate(p, d, Strategy::kOnChip);
    FAIL() << "accepted, expected a complaint about " << flag;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(flag + ":", 0), 0u) << e.what();
  }
}

TEST(AccelInput, BadParametersNameTheirFlag) {
  Params good;
  good.cycles_per_s = 1e9;
  good.alpha = 0.5;
  good.accel_factor = 2;
  Params p = good;
  p.alpha = 1.5;
  expect_refused(p, Design::kAsync, "--alpha");
  p.alpha = -0.1;
  expect_refused(p, Design::kAsync, "--alpha");
  p = good;
  p.offloads_per_s = -1;
  expect_refused(p, Design::kAsync, "--offloads-per-s");
  p = good;
  p.cycles_per_s = 0;
  expect_refused(p, Design::kAsync, "--cycles");
  p = good;
  p.switch_cycles = -5;
  expect_refused(p, Design::kSyncOs, "--o1");
  p = good;
  p.accel_factor.reset();
  expect_refused(p, Design::kSync, "--accel-factor");
  p.accel_factor = 0;
  expect_refused(p, Design::kAsync, "--accel-factor");
  EXPECT_THROW(parse_design("blocking"), std::invalid_argument);
  EXPECT_THROW(parse_strategy("cloud"), std::invalid_argument);
  EXPECT_EQ(parse_design("async-distinct"), Design::kAsyncDistinct);
  EXPECT_EQ(parse_strategy("off-chip"), Strategy::kOffChip);
}

}  // namespace
}  // namespace nabla::accel
