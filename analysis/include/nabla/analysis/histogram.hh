#pragma once
// A mergeable log-linear latency histogram with bounded relative error, in
// the spirit of HdrHistogram, for runs too long to keep every sample.
//
// Layout with p precision bits (sub-bucket count 2^p): values below 2^p get
// one bucket each (exact). Above, every power-of-two range [2^h, 2^(h+1)) is
// split into 2^(p-1) equal buckets of width 2^(h-p+1). A value is reported as
// its bucket's midpoint (lower + width/2), so the relative error of any
// reported value is at most 2^-p (width/2 over a lower bound >= 2^(p-1) *
// width). p = 10 gives <= 0.098% (HdrHistogram's 3 significant digits is
// comparable); with_significant_digits(d) picks the smallest p with
// 2^-p <= 10^-d. Memory: 2^p + (log2(highest) - p + 1) * 2^(p-1) counters
// (p = 10, 1 hour in ns: ~17k counters, 140 KB).
//
// Values are int64 nanoseconds in [0, highest_trackable_ns]; others are not
// recorded and are counted in out_of_range(). Percentiles use the estimator of
// percentile.hh (rank ceil(n*p)) and return that rank's bucket midpoint,
// clamped into the exact [min, max]; so each differs from the exact sample
// percentile by at most the relative error bound. count/min/max are exact;
// mean is exact up to long double rounding. merge() adds another histogram of
// the same configuration exactly (per-thread histograms merged at the end).
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nabla::analysis {

class LatencyHistogram {
 public:
  static constexpr std::int64_t kOneHourNs = 3'600'000'000'000;

  // precision_bits in [1, 24]; highest_trackable_ns >= 1. Throws
  // std::invalid_argument otherwise.
  explicit LatencyHistogram(int precision_bits = 10,
                            std::int64_t highest_trackable_ns = kOneHourNs);
  static LatencyHistogram with_significant_digits(int digits,
                                                  std::int64_t highest_trackable_ns = kOneHourNs);

  // Adds `count` occurrences of value_ns; false (and counted) if out of range.
  bool record(std::int64_t value_ns, std::uint64_t count = 1);
  // Throws std::invalid_argument when the configurations differ.
  void merge(const LatencyHistogram& other);
  void reset();

  std::uint64_t count() const { return count_; }
  std::uint64_t out_of_range() const { return out_of_range_; }
  std::int64_t min() const;  // 0 when empty
  std::int64_t max() const;  // 0 when empty
  double mean() const;       // NaN when empty
  // p in [0, 1]; throws std::invalid_argument when empty or p is outside.
  std::int64_t percentile(double p) const;

  int precision_bits() const { return precision_bits_; }
  std::int64_t highest_trackable_ns() const { return highest_; }
  double relative_error_bound() const;
  std::size_t bucket_count() const { return counts_.size(); }
  std::size_t bucket_index(std::int64_t value_ns) const;  // value in [0, highest]
  std::int64_t bucket_lower(std::size_t index) const;
  std::int64_t bucket_width(std::size_t index) const;
  // The value reported for value_ns: its bucket's midpoint.
  std::int64_t equivalent_value(std::int64_t value_ns) const;

  // Everything the histogram holds, for sending it elsewhere and rebuilding
  // it exactly (loadgen/wire.hh): the configuration, the non-zero buckets
  // (index, count) in increasing index order, and the exact min, max, sum
  // and out-of-range count. The count is the buckets' sum.
  struct Parts {
    int precision_bits = 10;
    std::int64_t highest_trackable_ns = kOneHourNs;
    std::vector<std::pair<std::size_t, std::uint64_t>> buckets;
    std::int64_t min = 0;
    std::int64_t max = 0;
    long double sum = 0;
    std::uint64_t out_of_range = 0;
    bool operator==(const Parts&) const = default;
  };
  Parts parts() const;
  // The histogram `parts` describes. Throws std::invalid_argument for a bad
  // configuration, a bucket index out of range or not increasing, a zero
  // count, a total that overflows, or min/max/sum that cannot belong to the
  // buckets (min in the lowest non-zero bucket, max in the highest, sum
  // within their bounds; all zero when empty).
  static LatencyHistogram from_parts(const Parts& parts);
  long double sum() const { return sum_; }  // of the values recorded, exact below 2^64

 private:
  int precision_bits_;
  std::int64_t highest_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t out_of_range_ = 0;
  std::int64_t min_ = 0;
  std::int64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace nabla::analysis
