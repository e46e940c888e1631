#include "nabla/common/cpu_latency.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
