#include "nabla/common/log.hh"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <stdexcept>

#include "nabla/common/clock.hh"

namespace nabla::common {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_program_mutex;
std::string g_program = "nabla";  // guarded by g_program_mutex

}  // namespace

LogLevel parse_log_level(std::string_view text) {
  if (text == "error") return LogLevel::kError;
  if (text == "warn" || text == "warning") return LogLevel::kWarn;
  if (text == "info") return LogLevel::kInfo;
  if (text == "debug") return LogLevel::kDebug;
  throw std::invalid_argument("bad log level '" + std::string(text) +
                              "': expected one of error, warn, info, debug");
}

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "unknown";
}

void set_log_level(LogLevel level) noexcept {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel log_level() noexcept {
  return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed));
}

bool log_enabled(LogLevel level) noexcept {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void set_log_program(std::string_view name) {
  std::lock_guard lock(g_program_mutex);
  g_program = std::string(name);
}

std::string format_log_line(int64_t realtime_ns, std::string_view program, LogLevel level,
                            std::string_view message) {
  // Floor division so instants before the epoch still format sensibly.
  int64_t secs = realtime_ns / 1'000'000'000;
  int64_t rem = realtime_ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --secs;
  }
  const time_t t = static_cast<time_t>(secs);
  tm utc{};
  ::gmtime_r(&t, &utc);
  char stamp[48];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(rem / 1'000'000));
  std::string line;
  line.reserve(64 + program.size() + message.size());
  line.append(stamp).append(" ").append(program).append(" ");
  line.append(to_string(level)).append(": ").append(message);
  return line;
}

void log_message(LogLevel level, std::string_view message) noexcept {
  if (!log_enabled(level)) return;
  try {
    std::string program;
    {
      std::lock_guard lock(g_program_mutex);
      program = g_program;
    }
    std::string line = format_log_line(realtime_ns(), program, level, message);
    line.push_back('\n');
    // One write per line: POSIX keeps a single write to stderr whole with
    // respect to other writers in practice for lines of this size.
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;
      }
      done += static_cast<std::size_t>(n);
    }
  } catch (...) {
    // Logging must never take the process down (e.g. bad_alloc).
  }
}

}  // namespace nabla::common
