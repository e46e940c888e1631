#include "nabla/common/cpu_latency.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace nabla::common {

CpuLatencyRequest::CpuLatencyRequest(int32_t limit_us, const std::string& path)
    : limit_us_(limit_us) {
  if (limit_us < 0) {
    error_ = "CPU latency limit must be >= 0 us, got " + std::to_string(limit_us);
    return;
  }
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) {
    error_ = "cannot open " + path + ": " + std::strerror(errno) +
             (errno == EACCES || errno == EPERM ? " (needs root)" : "");
    return;
  }
  // The device takes the limit as a raw s32 (or as hex text); raw is exact.
  if (::write(fd.get(), &limit_us, sizeof limit_us) != static_cast<ssize_t>(sizeof limit_us)) {
    error_ = "cannot write " + path + ": " + std::strerror(errno);
    return;
  }
  fd_ = std::move(fd);
}

std::optional<int32_t> parse_cpu_latency_limit(const std::string& text) {
  if (text == "off") return std::nullopt;
  int64_t v = -1;
  bool digits = !text.empty() && text.size() <= 10;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (digits) v = std::stoll(text);
  if (!digits || v > 2'000'000'000) {
    throw std::invalid_argument("expected 0..2000000000 or 'off', got '" + text + "'");
  }
  return static_cast<int32_t>(v);
}

std::optional<int32_t> current_cpu_latency_us(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  int32_t value = 0;
  if (::read(fd.get(), &value, sizeof value) != static_cast<ssize_t>(sizeof value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace nabla::common
