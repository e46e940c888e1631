#include "nabla/common/wakeup_lateness.hh"

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <stdexcept>

#include "nabla/common/clock.hh"

namespace nabla::common {

WakeupLateness::WakeupLateness(WakeupLatenessOptions options) : options_(options) {
  if (options_.window == 0) throw std::invalid_argument("wake-up lateness: window must be >= 1");
  if (!(options_.lead_quantile >= 0.0 && options_.lead_quantile <= 1.0)) {
    throw std::invalid_argument("wake-up lateness: lead quantile must be in [0, 1]");
  }
  if (options_.max_lead_ns < 0) throw std::invalid_argument("wake-up lateness: max lead < 0");
  if (options_.refresh_every == 0) options_.refresh_every = 1;
  ring_.reserve(options_.window);
}

void WakeupLateness::record(int64_t lateness_ns) {
  const int64_t value = std::max<int64_t>(lateness_ns, 0);
  if (ring_.size() < options_.window) {
    ring_.push_back(value);
  } else {
    ring_[next_] = value;
  }
  next_ = (next_ + 1) % options_.window;
  ++recorded_;
  // The first records refresh at once, so a fresh loop has a lead quickly.
  if (++since_refresh_ >= options_.refresh_every || recorded_ <= options_.refresh_every) {
    refresh();
  }
}

void WakeupLateness::refresh() {
  since_refresh_ = 0;
  lead_ns_ = std::min(nearest_rank_quantile(ring_, options_.lead_quantile), options_.max_lead_ns);
}

WakeupLatenessSummary WakeupLateness::summary() const {
  WakeupLatenessSummary s;
  s.samples = ring_.size();
  s.recorded = recorded_;
  s.p50_ns = nearest_rank_quantile(ring_, 0.5);
  s.p90_ns = nearest_rank_quantile(ring_, 0.9);
  s.p99_ns = nearest_rank_quantile(ring_, 0.99);
  s.max_ns = ring_.empty() ? 0 : *std::max_element(ring_.begin(), ring_.end());
  s.lead_ns = lead_ns_;
  return s;
}

int64_t nearest_rank_quantile(std::vector<int64_t> values, double q) {
  if (values.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest value with at least q of the values at or below it.
  const auto n = values.size();
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  auto it = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), it, values.end());
  return *it;
}

void probe_wakeup_lateness(WakeupLateness& into, int count, int64_t period_ns) {
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  for (int i = 0; i < count; ++i) {
    const int64_t deadline = monotonic_ns() + period_ns;
    timespec ts{};
    ts.tv_sec = deadline / 1'000'000'000;
    ts.tv_nsec = deadline % 1'000'000'000;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    into.record(monotonic_ns() - deadline);
  }
}

}  // namespace nabla::common
