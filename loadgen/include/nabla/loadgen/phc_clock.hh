#pragma once
// PTP hardware clock (PHC) time to CLOCK_MONOTONIC, for NIC timestamps.
//
// A NIC's raw hardware stamps (SCM_TIMESTAMPING ts[2]) count on the NIC's own
// clock, /dev/ptpN (N = the driver's phc_index). The engine times requests on
// CLOCK_MONOTONIC, so a stamp needs mapping:
//
//   PhcClock::read()    one "clock pair": a PHC read between two monotonic
//                       reads, the narrowest window of a few tries (the
//                       uncertainty of the pair is half its window);
//   PhcMapping::add()   keeps the last kKeep pairs;
//   to_monotonic(phc)   a least-squares line through them (monotonic =
//                       a + b * phc), so the ppm-level rate difference of the
//                       two oscillators (100 ppm = 100 us per second) is
//                       followed, not just the offset. With one pair, or
//                       pairs closer together than kMinSpanNs, the slope is 1.
//
// The engine re-reads a pair every kRefreshNs while it runs. PhcMapping is
// plain arithmetic, tested with synthetic clocks of known offset and drift;
// PhcClock needs a NIC with a PHC, which this lab machine does not have (it
// is tested for its error on a missing clock).
#include <cstdint>
#include <deque>
#include <string>

#include "nabla/common/fd.hh"

namespace nabla::loadgen {

struct ClockPair {
  int64_t monotonic_before_ns = 0;
  int64_t phc_ns = 0;
  int64_t monotonic_after_ns = 0;
  int64_t window_ns() const { return monotonic_after_ns - monotonic_before_ns; }
  int64_t monotonic_mid_ns() const { return monotonic_before_ns + window_ns() / 2; }
};

class PhcMapping {
 public:
  static constexpr size_t kKeep = 16;
  static constexpr int64_t kMinSpanNs = 10'000'000;  // 10 ms between oldest and newest
  static constexpr int64_t kRefreshNs = 100'000'000;

  // Pairs with a negative window are ignored (a clock read went backwards).
  void add(const ClockPair& pair);
  bool ready() const { return !pairs_.empty(); }
  // Throws std::logic_error before the first pair.
  int64_t to_monotonic(int64_t phc_ns) const;
  // Fitted d(monotonic)/d(phc), 1.0 until the pairs span kMinSpanNs.
  double rate() const { return rate_; }

 private:
  void fit();
  std::deque<ClockPair> pairs_;
  // monotonic = monotonic_anchor_ + intercept_ + rate_ * (phc - phc_anchor_):
  // anchored on the newest pair so that the doubles hold small differences
  // (a PHC near 1.7e18 ns would lose 256 ns as a double).
  int64_t phc_anchor_ = 0;
  int64_t monotonic_anchor_ = 0;
  double intercept_ = 0;
  double rate_ = 1.0;
};

class PhcClock {
 public:
  // Opens /dev/ptp<index>. Throws std::system_error naming the path.
  explicit PhcClock(int phc_index);
  // The narrowest of `tries` pairs. Throws std::system_error naming
  // clock_gettime and the path when the PHC cannot be read.
  ClockPair read(int tries = 5) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  common::FileDescriptor fd_;
};

}  // namespace nabla::loadgen
