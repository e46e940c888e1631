#include "nabla/coordinator/memlat_sampler.hh"

#include <chrono>

namespace nabla::coordinator {

MemlatSampler::MemlatSampler(ReadCounters read, memlat::EstimatorConstants constants,
                             std::int64_t interval_ns, WallClock wall_clock_ns)
    : read_(std::move(read)),
      constants_(constants),
      interval_ns_(interval_ns),
      wall_clock_ns_(std::move(wall_clock_ns)),
      thread_([this] { loop(); }) {}

MemlatSampler::~MemlatSampler() {
  stop();
}

void MemlatSampler::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const bool stopped =
        wake_.wait_for(lock, std::chrono::nanoseconds(interval_ns_), [this] { return stopping_; });
    if (stopped) return;
    lock.unlock();
    Interval interval;
    interval.counters = read_(interval_ns_);
    interval.t_ns = wall_clock_ns_();
    interval.estimate = memlat::estimate_latency(interval.counters, constants_);
    lock.lock();
    intervals_.push_back(interval);
  }
}

std::vector<MemlatSampler::Interval> MemlatSampler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mutex_);
  return intervals_;
}

}  // namespace nabla::coordinator
