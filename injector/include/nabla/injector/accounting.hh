#pragma once
// Accounting per injection: packet counters by outcome and the *actual* added
// delay (verdict time minus receive time, CLOCK_MONOTONIC) summarised overall,
// per waveform half and per cycle. The coordinator uses the actual means in
// the gradient formula, so they are exact (Welford); percentiles come from a
// log-linear histogram with 1024 exact buckets below 1024 ns and 512 buckets
// per octave above, i.e. a bucket is at most 0.2% of its value wide (33 µs at
// 20 ms) and the reported value is the bucket's midpoint.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/injector/waveform.hh"

namespace nabla::injector {

class DelayHistogram {
 public:
  void add(int64_t value_ns);
  // The q-quantile (0 <= q <= 1) by the nearest-rank rule on bucket
  // midpoints; 0 when empty.
  int64_t quantile(double q) const;
  uint64_t count() const { return count_; }

  static uint32_t bucket_of(int64_t value_ns);
  static int64_t bucket_low(uint32_t bucket);
  static int64_t bucket_width(uint32_t bucket);

 private:
  // Sparse: actual delays cluster in a few buckets.
  std::unordered_map<uint32_t, uint64_t> counts_;
  uint64_t count_ = 0;
};

// What summary() gives is what the control protocol reports.
using DelaySummary = common::protocol::DelaySummary;

class DelayStats {
 public:
  void add(int64_t delay_ns);
  DelaySummary summary() const;
  uint64_t count() const { return count_; }

 private:
  uint64_t count_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  DelayHistogram histogram_;
};

using PacketCounters = common::protocol::PacketCounters;

class InjectionAccounting {
 public:
  // At most this many cycles are kept per injection (oldest dropped first).
  static constexpr size_t kMaxCycles = 4096;

  PacketCounters& counters() { return counters_; }
  const PacketCounters& counters() const { return counters_; }

  // Records one packet's actual added delay, attributed to the waveform
  // half and cycle in force when the packet arrived.
  void record_delay(int64_t actual_delay_ns, const WavePoint& at_arrival);

  const DelayStats& overall() const { return overall_; }
  const DelayStats& half(WaveHalf h) const { return halves_[static_cast<size_t>(h)]; }
  // cycle -> {low half, high half}
  const std::map<int64_t, std::array<DelayStats, 2>>& cycles() const { return cycles_; }

 private:
  PacketCounters counters_;
  DelayStats overall_;
  std::array<DelayStats, 2> halves_;
  std::map<int64_t, std::array<DelayStats, 2>> cycles_;
};

}  // namespace nabla::injector
