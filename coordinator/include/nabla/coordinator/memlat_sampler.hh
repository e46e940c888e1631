#pragma once
// Memory latency sampled on a thread of its own beside a measurement
// (`nabla load --memlat`): every interval it reads the counter deltas and
// keeps them with the estimate (memlat/estimator.hh) and the wall-clock time.
// The counters and the clock are inputs, so a test can drive it with fakes.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nabla/memlat/estimator.hh"

namespace nabla::coordinator {

class MemlatSampler {
 public:
  using ReadCounters = std::function<memlat::CounterSample(std::int64_t interval_ns)>;
  using WallClock = std::function<std::int64_t()>;

  struct Interval {
    std::int64_t t_ns = 0;  // wall clock at its end
    memlat::CounterSample counters;
    std::optional<memlat::LatencyEstimate> estimate;
  };

  MemlatSampler(ReadCounters read, memlat::EstimatorConstants constants, std::int64_t interval_ns,
                WallClock wall_clock_ns);
  MemlatSampler(const MemlatSampler&) = delete;
  MemlatSampler& operator=(const MemlatSampler&) = delete;
  ~MemlatSampler();

  // Ends sampling (the interval in progress is dropped) and returns every
  // interval taken. Idempotent.
  std::vector<Interval> stop();

 private:
  void loop();

  ReadCounters read_;
  memlat::EstimatorConstants constants_;
  std::int64_t interval_ns_;
  WallClock wall_clock_ns_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Interval> intervals_;
  std::thread thread_;
};

}  // namespace nabla::coordinator
