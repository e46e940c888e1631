// The parameter file: parsing, the keys it refuses, and the table evaluate()
// builds from a granularity histogram.
#include "nabla/accel/config.hh"

#include <gtest/gtest.h>

#include <stdexcept>

namespace nabla::accel {
namespace {

constexpr const char* kCompression = R"(
cycles = 2.3e9
designs = ["sync", "async"]

[[kernel]]
name = "compression"
alpha = 0.15
cycles_per_byte = 5.63
granularity = [ { bytes = 100, per_s = 3000 }, { bytes = 1000, per_s = 2000 } ]

[[kernel.strategy]]
strategy = "off-chip"
accel_factor = 27
L = 2300

[[kernel.strategy]]
strategy = "on-chip"
accel_factor = 5
)";

TEST(AccelConfig, EveryStrategyAndDesignSideBySide) {
  const ServiceSpec spec = parse_service_spec(kCompression);
  const std::vector<DesignRow> rows = evaluate(spec);
  ASSERT_EQ(rows.size(), 4u);
  // Off-chip: only the 1000-byte bin clears 425 (sync) / 409 (async) bytes;
  // it carries 2000*1000 / (3000*100 + 2000*1000) of the kernel's cycles.
  const double share = 2000.0 * 1000 / (3000.0 * 100 + 2000.0 * 1000);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(rows[i].strategy, Strategy::kOffChip);
    EXPECT_DOUBLE_EQ(rows[i].offloads_per_s, 2000);
    EXPECT_DOUBLE_EQ(rows[i].alpha, 0.15 * share);
  }
  EXPECT_EQ(rows[0].design, Design::kSync);
  EXPECT_EQ(rows[0].min_bytes_speedup, 425.0);
  EXPECT_EQ(rows[1].min_bytes_speedup, 409.0);
  const double k = 2000 / 2.3e9;
  const double a = 0.15 * share;
  EXPECT_DOUBLE_EQ(rows[0].estimate.speedup, 1 / ((1 - a) + a / 27 + k * 2300));
  EXPECT_DOUBLE_EQ(rows[1].estimate.speedup, 1 / ((1 - a) + k * 2300));
  // On-chip without overheads: every offload pays, the whole kernel moves.
  EXPECT_EQ(rows[2].strategy, Strategy::kOnChip);
  EXPECT_DOUBLE_EQ(rows[2].offloads_per_s, 5000);
  EXPECT_DOUBLE_EQ(rows[2].alpha, 0.15);
  EXPECT_DOUBLE_EQ(rows[2].estimate.speedup, 1 / (0.85 + 0.15 / 5));
}

TEST(AccelConfig, WithoutHistogramAllOffloadsCount) {
  const ServiceSpec spec = parse_service_spec(R"(
cycles = 2.0e9
designs = ["sync"]
[[kernel]]
name = "aes"
alpha = 0.165844
offloads_per_s = 298951
[[kernel.strategy]]
strategy = "on-chip"
accel_factor = 6
o0 = 10
L = 3
)");
  const std::vector<DesignRow> rows = evaluate(spec);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].estimate.speedup, 1.15775, 1e-5);
  EXPECT_FALSE(rows[0].min_bytes_speedup.has_value());  // no C_b given
}

void expect_refused(const std::string& text, const std::string& key) {
  try {
    parse_service_spec(text);
    FAIL() << "accepted, expected a complaint about " << key;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(key, 0), 0u) << e.what();
  }
}

TEST(AccelConfig, BadFilesNameTheKey) {
  const std::string strategy = "\n[[kernel.strategy]]\nstrategy = \"on-chip\"\naccel_factor = 2\n";
  expect_refused("designs = [\"sync\"]\n[[kernel]]\nname = \"k\"\nalpha = 0.1\n" + strategy,
                 "cycles");
  expect_refused("cycles = 1e9\n[[kernel]]\nname = \"k\"\nalpha = 1.5\n" + strategy,
                 "kernel[0].alpha");
  expect_refused(
      "cycles = 1e9\ndesigns = [\"blocking\"]\n[[kernel]]\nname = \"k\"\nalpha = 0.1\n" + strategy,
      "designs[0]");
  expect_refused("cycles = 1e9\n[[kernel]]\nname = \"k\"\nalpha = 0.1\nspeed = 3\n" + strategy,
                 "kernel[0].speed");
  expect_refused(
      "cycles = 1e9\n[[kernel]]\nname = \"k\"\nalpha = 0.1\n"
      "\n[[kernel.strategy]]\nstrategy = \"cloud\"\n",
      "kernel[0].strategy[0].strategy");
  expect_refused(
      "cycles = 1e9\n[[kernel]]\nname = \"k\"\nalpha = 0.1\n"
      "\n[[kernel.strategy]]\nstrategy = \"remote\"\nL = -4\n",
      "kernel[0].strategy[0].L");
  expect_refused("cycles = [", "--config");
}

}  // namespace
}  // namespace nabla::accel
