#include "nabla/common/clock.hh"

#include <time.h>

namespace nabla::common {
namespace {

int64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  // clock_gettime cannot fail for these two clocks with a valid pointer.
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int64_t monotonic_ns() noexcept {
  return read_clock(CLOCK_MONOTONIC);
}

int64_t realtime_ns() noexcept {
  return read_clock(CLOCK_REALTIME);
}

}  // namespace nabla::common
