#include "nabla/loadgen/phc_clock.hh"

#include <fcntl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>
#include <string>
#include <system_error>

namespace nabla::loadgen {
namespace {

// A dynamic POSIX clock id for an open /dev/ptpN (linux/posix-timers.h:
// CLOCKFD = 3, the fd shifted left by 3 and inverted).
clockid_t clock_of(int fd) {
  return static_cast<clockid_t>((~static_cast<unsigned>(fd) << 3) | 3u);
}

int64_t read_ns(clockid_t id) {
  timespec t{};
  if (::clock_gettime(id, &t) != 0) return INT64_MIN;
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

void PhcMapping::add(const ClockPair& pair) {
  if (pair.window_ns() < 0) return;
  pairs_.push_back(pair);
  while (pairs_.size() > kKeep) pairs_.pop_front();
  fit();
}

void PhcMapping::fit() {
  const ClockPair& newest = pairs_.back();
  phc_anchor_ = newest.phc_ns;
  monotonic_anchor_ = newest.monotonic_mid_ns();
  rate_ = 1.0;
  intercept_ = 0;
  const int64_t span = newest.phc_ns - pairs_.front().phc_ns;
  if (pairs_.size() < 2 || span < kMinSpanNs) return;
  // Least squares of y = monotonic offset on x = PHC offset, both from the
  // anchor; each pair weighted by 1/window^2 (a narrow pair is a precise one).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const ClockPair& p : pairs_) {
    const double window = std::max<double>(static_cast<double>(p.window_ns()), 1.0);
    const double w = 1.0 / (window * window);
    const double x = static_cast<double>(p.phc_ns - phc_anchor_);
    const double y = static_cast<double>(p.monotonic_mid_ns() - monotonic_anchor_);
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
  }
  const double denominator = sw * sxx - sx * sx;
  if (!(denominator > 0)) return;
  rate_ = (sw * sxy - sx * sy) / denominator;
  intercept_ = (sy - rate_ * sx) / sw;
}

int64_t PhcMapping::to_monotonic(int64_t phc_ns) const {
  if (pairs_.empty()) throw std::logic_error("PhcMapping: no clock pair yet");
  const double dx = static_cast<double>(phc_ns - phc_anchor_);
  return monotonic_anchor_ + std::llround(intercept_ + rate_ * dx);
}

PhcClock::PhcClock(int phc_index)
    : path_("/dev/ptp" + std::to_string(phc_index)),
      fd_(phc_index < 0 ? -1 : ::open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (phc_index < 0) throw std::invalid_argument("PhcClock: no PTP clock (phc_index -1)");
  if (!fd_) throw std::system_error(errno, std::system_category(), "open " + path_);
}

ClockPair PhcClock::read(int tries) const {
  ClockPair best;
  bool have = false;
  for (int i = 0; i < std::max(tries, 1); ++i) {
    ClockPair p;
    p.monotonic_before_ns = read_ns(CLOCK_MONOTONIC);
    p.phc_ns = read_ns(clock_of(fd_.get()));
    p.monotonic_after_ns = read_ns(CLOCK_MONOTONIC);
    if (p.phc_ns == INT64_MIN) {
      throw std::system_error(errno, std::system_category(), "clock_gettime(" + path_ + ")");
    }
    if (!have || p.window_ns() < best.window_ns()) best = p;
    have = true;
  }
  return best;
}

}  // namespace nabla::loadgen
