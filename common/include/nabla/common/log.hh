#pragma once
// Logging to stderr with levels. One line per message, written with a single
// write(2) so lines from concurrent threads never interleave:
//
//   2026-11-22T04:30:01.123Z nabla-injectd info: message
//
// Usage:
//   nabla::common::set_log_program("nabla-injectd");
//   nabla::common::set_log_level(nabla::common::parse_log_level(flag));  // --log-level
//   NABLA_LOG_INFO("listening on ", addr, ":", port);
//
// The level and program name are process-global; setting them is thread-safe
// (the level is atomic, the name is guarded), but set them once at start-up.
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace nabla::common {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error", "warn", "info", "debug" (case-sensitive, also "warning").
// Throws std::invalid_argument naming the bad text and the accepted values.
LogLevel parse_log_level(std::string_view text);
std::string_view to_string(LogLevel level) noexcept;

void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;
bool log_enabled(LogLevel level) noexcept;
void set_log_program(std::string_view name);

// Pure formatter (testable): the line without the trailing newline.
std::string format_log_line(int64_t realtime_ns, std::string_view program, LogLevel level,
                            std::string_view message);

// Writes one line to stderr if `level` is enabled. Never throws.
void log_message(LogLevel level, std::string_view message) noexcept;

// Streams every argument with operator<< and logs the result.
template <typename... Args>
void log(LogLevel level, const Args&... args) {
  if (!log_enabled(level)) return;
  std::ostringstream out;
  (out << ... << args);
  log_message(level, out.str());
}

template <typename... Args>
void log_error(const Args&... args) {
  log(LogLevel::kError, args...);
}
template <typename... Args>
void log_warn(const Args&... args) {
  log(LogLevel::kWarn, args...);
}
template <typename... Args>
void log_info(const Args&... args) {
  log(LogLevel::kInfo, args...);
}
template <typename... Args>
void log_debug(const Args&... args) {
  log(LogLevel::kDebug, args...);
}

}  // namespace nabla::common
