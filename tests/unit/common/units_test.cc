#include "nabla/common/units.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace nabla::common {
namespace {

TEST(ParseDuration, AcceptsEveryUnit) {
  EXPECT_EQ(parse_duration_ns("100ns"), 100);
  EXPECT_EQ(parse_duration_ns("250us"), 250'000);
  EXPECT_EQ(parse_duration_ns("20ms"), 20'000'000);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1'500'000'000);
  EXPECT_EQ(parse_duration_ns("2m"), 120'000'000'000);
  EXPECT_EQ(parse_duration_ns("1h"), 3'600'000'000'000);
  EXPECT_EQ(parse_duration_ns("0"), 0);
  EXPECT_EQ(parse_duration_ns("0ms"), 0);
  EXPECT_EQ(parse_duration_ns("0.25ms"), 250'000);
  EXPECT_EQ(parse_duration_ns("1.000000001s"), 1'000'000'001);
  EXPECT_EQ(parse_duration_ns("1.00ns"), 1);  // zeros below 1 ns are fine
}

TEST(ParseDuration, LargestValueAndOverflow) {
  EXPECT_EQ(parse_duration_ns("9223372036854775807ns"), INT64_MAX);
  EXPECT_THROW(parse_duration_ns("9223372036854775808ns"), std::invalid_argument);
  EXPECT_THROW(parse_duration_ns("9223372037s"), std::invalid_argument);
  EXPECT_THROW(parse_duration_ns("9223372036.9s"), std::invalid_argument);
  EXPECT_THROW(parse_duration_ns("99999999999999999999999h"), std::invalid_argument);
}

TEST(ParseDuration, RejectsJunk) {
  for (const char* bad : {"", "20", "1.5", "-5ms", "ms", "5 ms", "5mss", "5sec", "1..5s", ".5s",
                          "5.s", "1.5ns", "0x10ms", "+5ms", "5ms ", "nan s", "1e3ms"}) {
    EXPECT_THROW(parse_duration_ns(bad), std::invalid_argument) << "'" << bad << "'";
  }
}

TEST(ParseDuration, MessageNamesTextAndForms) {
  try {
    parse_duration_ns("20");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'20'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing unit"), std::string::npos) << msg;
    EXPECT_NE(msg.find("250us, 20ms, 1.5s"), std::string::npos) << msg;
  }
  try {
    parse_duration_ns("-3s");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos);
  }
}

TEST(FormatDuration, PicksReadableUnit) {
  EXPECT_EQ(format_duration_ns(0), "0");
  EXPECT_EQ(format_duration_ns(1), "1ns");
  EXPECT_EQ(format_duration_ns(999), "999ns");
  EXPECT_EQ(format_duration_ns(250'000), "250us");
  EXPECT_EQ(format_duration_ns(1'500), "1.5us");
  EXPECT_EQ(format_duration_ns(20'000'000), "20ms");
  EXPECT_EQ(format_duration_ns(1'500'000'000), "1.5s");
  EXPECT_EQ(format_duration_ns(1'000'000'001), "1.000000001s");
  EXPECT_EQ(format_duration_ns(90'000'000'000), "90s");
  EXPECT_EQ(format_duration_ns(120'000'000'000), "2m");
  EXPECT_EQ(format_duration_ns(7'200'000'000'000), "2h");
  EXPECT_EQ(format_duration_ns(-20'000'000), "-20ms");
  EXPECT_EQ(format_duration_ns(INT64_MIN), "-9223372036.854775808s");
}

TEST(FormatDuration, RoundTrips) {
  const int64_t values[] = {0,
                            1,
                            7,
                            999,
                            1'000,
                            1'001,
                            123'456,
                            20'000'000,
                            1'500'000'000,
                            59'999'999'999,
                            60'000'000'000,
                            61'000'000'000,
                            3'600'000'000'001,
                            INT64_MAX};
  for (const int64_t v : values) {
    EXPECT_EQ(parse_duration_ns(format_duration_ns(v)), v) << format_duration_ns(v);
  }
  // A deterministic sweep over many magnitudes.
  for (int64_t v = 3; v < INT64_MAX / 7; v = v * 7 + 1) {
    EXPECT_EQ(parse_duration_ns(format_duration_ns(v)), v) << format_duration_ns(v);
  }
}

TEST(ParsePercent, Values) {
  EXPECT_DOUBLE_EQ(parse_percent("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_percent("0.5%"), 0.005);
  EXPECT_DOUBLE_EQ(parse_percent("0%"), 0.0);
  EXPECT_DOUBLE_EQ(parse_percent("100%"), 1.0);
  EXPECT_DOUBLE_EQ(parse_percent("99.9%"), 0.999);
}

TEST(ParsePercent, RejectsJunkAndOutOfRange) {
  for (const char* bad : {"", "%", "5", "0.05", "-1%", "100.1%", "101%", "abc%", "5 %", "1e1%",
                          ".5%", "5.%", "1.2.3%", "nan%", "inf%"}) {
    EXPECT_THROW(parse_percent(bad), std::invalid_argument) << "'" << bad << "'";
  }
  try {
    parse_percent("150%");
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'150%'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0% to 100%"), std::string::npos) << msg;
  }
}

TEST(FormatLatency, ThreeSignificantDigitsInTheLargestUnitBelow) {
  EXPECT_EQ(format_latency_ns(850), "850ns");
  EXPECT_EQ(format_latency_ns(12'345), "12.3us");
  EXPECT_EQ(format_latency_ns(1'020'000), "1.02ms");
  EXPECT_EQ(format_latency_ns(250'000'000), "250ms");
  EXPECT_EQ(format_latency_ns(2.5e9), "2.50s");
  EXPECT_EQ(format_latency_ns(-1'500'000), "-1.50ms");
  EXPECT_EQ(format_latency_ns(std::nan("")), "-");
}

}  // namespace
}  // namespace nabla::common
