#include "nabla/common/log.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace nabla::common {
namespace {

TEST(Log, ParseLevel) {
  EXPECT_EQ(parse_log_level("error"), LogLevel::kError);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("info"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  try {
    parse_log_level("verbose");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad log level 'verbose': expected one of error, warn, info, debug");
  }
}

TEST(Log, FormatLine) {
  // 2026-11-22T04:30:01.123Z
  const int64_t ns = 1'795'321'801'123'456'789;
  EXPECT_EQ(format_log_line(ns, "nabla-injectd", LogLevel::kInfo, "message"),
            "2026-11-22T04:30:01.123Z nabla-injectd info: message");
  EXPECT_EQ(format_log_line(0, "x", LogLevel::kError, ""), "1970-01-01T00:00:00.000Z x error: ");
  EXPECT_EQ(format_log_line(-1, "x", LogLevel::kDebug, "m"), "1969-12-31T23:59:59.999Z x debug: m");
}

TEST(Log, LevelFiltersAndLinesStayWhole) {
  set_log_program("nabla-test");
  set_log_level(LogLevel::kWarn);
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  EXPECT_TRUE(log_enabled(LogLevel::kWarn));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo));

  ::testing::internal::CaptureStderr();
  log_info("hidden ", 1);
  log_warn("shown ", 2, " of ", 3.5);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) log_error("thread ", t, " line ", i, " ", std::string(200, 'x'));
    });
  }
  for (auto& th : threads) th.join();
  const std::string out = ::testing::internal::GetCapturedStderr();
  set_log_level(LogLevel::kInfo);

  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find(" nabla-test warn: shown 2 of 3.5\n"), std::string::npos) << out;
  // Every line is complete: timestamp, program, level, full payload.
  std::size_t lines = 0;
  std::size_t pos = 0;
  while (pos < out.size()) {
    const std::size_t nl = out.find('\n', pos);
    ASSERT_NE(nl, std::string::npos);
    const std::string line = out.substr(pos, nl - pos);
    ASSERT_GE(line.size(), 25u);
    EXPECT_EQ(line[4], '-');
    EXPECT_EQ(line[23], 'Z');
    if (line.find(" error: thread ") != std::string::npos) {
      EXPECT_EQ(line.substr(line.size() - 200), std::string(200, 'x')) << line;
    }
    ++lines;
    pos = nl + 1;
  }
  EXPECT_EQ(lines, 201u);
}

}  // namespace
}  // namespace nabla::common
