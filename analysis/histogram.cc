#include "nabla/analysis/histogram.hh"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "nabla/analysis/percentile.hh"

namespace nabla::analysis {

LatencyHistogram::LatencyHistogram(int precision_bits, std::int64_t highest_trackable_ns)
    : precision_bits_(precision_bits), highest_(highest_trackable_ns) {
  if (precision_bits < 1 || precision_bits > 24) {
    throw std::invalid_argument("histogram: precision_bits must be in [1, 24]");
  }
  if (highest_trackable_ns < 1) {
    throw std::invalid_argument("histogram: highest_trackable_ns must be >= 1");
  }
  counts_.assign(bucket_index(highest_) + 1, 0);
}

LatencyHistogram LatencyHistogram::with_significant_digits(int digits,
                                                           std::int64_t highest_trackable_ns) {
  if (digits < 1 || digits > 6) {
    throw std::invalid_argument("histogram: significant digits must be in [1, 6]");
  }
  int p = 1;
  while (std::ldexp(1.0, -p) > std::pow(10.0, -digits)) ++p;
  return LatencyHistogram(p, highest_trackable_ns);
}

std::size_t LatencyHistogram::bucket_index(std::int64_t value_ns) const {
  const auto v = static_cast<std::uint64_t>(value_ns);
  const std::uint64_t sub = std::uint64_t{1} << precision_bits_;
  if (v < sub) return static_cast<std::size_t>(v);
  const std::uint64_t half = sub / 2;
  const int h = std::bit_width(v) - 1;  // h >= p
  const int shift = h - precision_bits_ + 1;
  const std::uint64_t s = v >> shift;  // in [half, sub)
  return static_cast<std::size_t>(sub + static_cast<std::uint64_t>(shift - 1) * half + (s - half));
}

std::int64_t LatencyHistogram::bucket_lower(std::size_t index) const {
  const std::uint64_t sub = std::uint64_t{1} << precision_bits_;
  if (index < sub) return static_cast<std::int64_t>(index);
  const std::uint64_t half = sub / 2;
  const std::uint64_t rest = index - sub;
  const auto shift = static_cast<int>(rest / half) + 1;
  return static_cast<std::int64_t>((half + rest % half) << shift);
}

std::int64_t LatencyHistogram::bucket_width(std::size_t index) const {
  const std::uint64_t sub = std::uint64_t{1} << precision_bits_;
  if (index < sub) return 1;
  return std::int64_t{1} << (static_cast<int>((index - sub) / (sub / 2)) + 1);
}

std::int64_t LatencyHistogram::equivalent_value(std::int64_t value_ns) const {
  const std::size_t i = bucket_index(value_ns);
  return bucket_lower(i) + bucket_width(i) / 2;
}

double LatencyHistogram::relative_error_bound() const {
  return std::ldexp(1.0, -precision_bits_);
}

bool LatencyHistogram::record(std::int64_t value_ns, std::uint64_t count) {
  if (value_ns < 0 || value_ns > highest_) {
    out_of_range_ += count;
    return false;
  }
  if (count == 0) return true;
  counts_[bucket_index(value_ns)] += count;
  if (count_ == 0) {
    min_ = max_ = value_ns;
  } else {
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
  }
  count_ += count;
  sum_ += static_cast<long double>(value_ns) * static_cast<long double>(count);
  return true;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.precision_bits_ != precision_bits_ || other.highest_ != highest_) {
    throw std::invalid_argument("histogram: merge needs the same precision and range");
  }
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  if (other.count_ > 0) {
    min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
    max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  }
  count_ += other.count_;
  out_of_range_ += other.out_of_range_;
  sum_ += other.sum_;
}

void LatencyHistogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = out_of_range_ = 0;
  min_ = max_ = 0;
  sum_ = 0;
}

LatencyHistogram::Parts LatencyHistogram::parts() const {
  Parts p;
  p.precision_bits = precision_bits_;
  p.highest_trackable_ns = highest_;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] != 0) p.buckets.emplace_back(i, counts_[i]);
  }
  p.min = min_;
  p.max = max_;
  p.sum = sum_;
  p.out_of_range = out_of_range_;
  return p;
}

LatencyHistogram LatencyHistogram::from_parts(const Parts& parts) {
  LatencyHistogram h(parts.precision_bits, parts.highest_trackable_ns);
  long double low = 0;  // the least and greatest sum the buckets allow
  long double high = 0;
  for (std::size_t k = 0; k < parts.buckets.size(); ++k) {
    const auto [index, count] = parts.buckets[k];
    if (index >= h.counts_.size()) {
      throw std::invalid_argument("histogram: bucket " + std::to_string(index) + " out of range (" +
                                  std::to_string(h.counts_.size()) + " buckets)");
    }
    if (k > 0 && index <= parts.buckets[k - 1].first) {
      throw std::invalid_argument("histogram: bucket indices must increase");
    }
    if (count == 0) throw std::invalid_argument("histogram: a bucket count of 0");
    if (h.count_ > std::numeric_limits<std::uint64_t>::max() - count) {
      throw std::invalid_argument("histogram: the total count overflows");
    }
    h.counts_[index] = count;
    h.count_ += count;
    const auto n = static_cast<long double>(count);
    low += n * static_cast<long double>(h.bucket_lower(index));
    high += n * static_cast<long double>(
                    std::min(h.bucket_lower(index) + h.bucket_width(index) - 1, h.highest_));
  }
  if (h.count_ == 0) {
    if (parts.min != 0 || parts.max != 0 || parts.sum != 0) {
      throw std::invalid_argument("histogram: min, max and sum of an empty histogram must be 0");
    }
  } else {
    const std::size_t first = parts.buckets.front().first;
    const std::size_t last = parts.buckets.back().first;
    if (parts.min < 0 || parts.min > h.highest_ || h.bucket_index(parts.min) != first) {
      throw std::invalid_argument("histogram: min is not in the lowest bucket");
    }
    if (parts.max < 0 || parts.max > h.highest_ || h.bucket_index(parts.max) != last) {
      throw std::invalid_argument("histogram: max is not in the highest bucket");
    }
    if (!(parts.sum >= low && parts.sum <= high)) {
      throw std::invalid_argument("histogram: sum outside what the buckets allow");
    }
  }
  h.min_ = parts.min;
  h.max_ = parts.max;
  h.sum_ = parts.sum;
  h.out_of_range_ = parts.out_of_range;
  return h;
}

std::int64_t LatencyHistogram::min() const {
  return min_;
}
std::int64_t LatencyHistogram::max() const {
  return max_;
}

double LatencyHistogram::mean() const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(sum_ / static_cast<long double>(count_));
}

std::int64_t LatencyHistogram::percentile(double p) const {
  if (count_ == 0) throw std::invalid_argument("histogram: percentile of an empty histogram");
  const std::uint64_t rank = percentile_rank(static_cast<std::size_t>(count_), p);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::clamp(bucket_lower(i) + bucket_width(i) / 2, min_, max_);
    }
  }
  return max_;  // unreachable: the counts sum to count_
}

}  // namespace nabla::analysis
