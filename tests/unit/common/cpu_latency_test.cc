#include "nabla/common/cpu_latency.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "nabla_test_support.hh"

namespace nabla::common {
namespace {

std::string temp_path() {
  return "/tmp/nabla-cpu-latency-test-" + std::to_string(::getpid());
}

// The limit goes out as one raw 32-bit value, the form the device reads
// exactly (a text write would be parsed as hex).
TEST(CpuLatency, WritesTheLimitAsARawS32) {
  const std::string path = temp_path();
  { std::ofstream(path, std::ios::trunc); }
  {
    CpuLatencyRequest request(17, path);
    EXPECT_TRUE(request.held()) << request.error();
    EXPECT_EQ(request.limit_us(), 17);
    EXPECT_EQ(current_cpu_latency_us(path), 17);
  }
  std::remove(path.c_str());
}

TEST(CpuLatency, AnUnavailableDeviceIsReportedNamingIt) {
  CpuLatencyRequest missing(0, "/nonexistent/cpu_dma_latency");
  EXPECT_FALSE(missing.held());
  EXPECT_NE(missing.error().find("/nonexistent/cpu_dma_latency"), std::string::npos)
      << missing.error();
  EXPECT_EQ(current_cpu_latency_us("/nonexistent/cpu_dma_latency"), std::nullopt);
  CpuLatencyRequest negative(-1, temp_path());
  EXPECT_FALSE(negative.held());
  EXPECT_NE(negative.error().find(">= 0"), std::string::npos) << negative.error();
}

TEST(CpuLatency, ParsesOffOrWholeMicroseconds) {
  EXPECT_EQ(parse_cpu_latency_limit("off"), std::nullopt);
  EXPECT_EQ(parse_cpu_latency_limit("0"), 0);
  EXPECT_EQ(parse_cpu_latency_limit("25"), 25);
  EXPECT_EQ(parse_cpu_latency_limit("2000000000"), 2'000'000'000);
  for (const char* bad : {"", "-1", "1.5", "10us", "2000000001", "99999999999", " 5", "Off"}) {
    try {
      parse_cpu_latency_limit(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("got '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

// The kernel applies the limit while the request is held and drops it when
// the descriptor closes.
TEST(CpuLatency, TheKernelHoldsTheLimitExactlyWhileTheRequestLives) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  if (::access(kCpuLatencyDevice, F_OK) != 0) {
    GTEST_SKIP() << kCpuLatencyDevice << " does not exist on this kernel";
  }
  const auto before = current_cpu_latency_us();
  ASSERT_TRUE(before.has_value());
  if (*before == 0) {
    GTEST_SKIP() << "another process already holds a 0 us limit; ours cannot be told apart";
  }
  {
    CpuLatencyRequest request(0);
    ASSERT_TRUE(request.held()) << request.error();
    EXPECT_EQ(current_cpu_latency_us(), 0);
  }
  EXPECT_EQ(current_cpu_latency_us(), before);
}

}  // namespace
}  // namespace nabla::common
