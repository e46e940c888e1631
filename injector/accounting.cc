#include "nabla/injector/accounting.hh"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace nabla::injector {

namespace {
constexpr int kSubBits = 10;  // 1024 exact buckets, then 512 per octave
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
constexpr uint64_t kHalfSub = kSub / 2;
}  // namespace

uint32_t DelayHistogram::bucket_of(int64_t value_ns) {
  const uint64_t v = value_ns < 0 ? 0 : static_cast<uint64_t>(value_ns);
  if (v < kSub) return static_cast<uint32_t>(v);
  const int shift = std::bit_width(v) - kSubBits;
  return static_cast<uint32_t>(static_cast<uint64_t>(shift) * kHalfSub + (v >> shift));
}

int64_t DelayHistogram::bucket_low(uint32_t bucket) {
  if (bucket < kSub) return bucket;
  const int shift = static_cast<int>(bucket / kHalfSub) - 1;
  return static_cast<int64_t>((bucket - static_cast<uint64_t>(shift) * kHalfSub) << shift);
}

int64_t DelayHistogram::bucket_width(uint32_t bucket) {
  if (bucket < kSub) return 1;
  return int64_t{1} << (bucket / kHalfSub - 1);
}

void DelayHistogram::add(int64_t value_ns) {
  ++counts_[bucket_of(value_ns)];
  ++count_;
}

int64_t DelayHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  std::vector<std::pair<uint32_t, uint64_t>> sorted(counts_.begin(), counts_.end());
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest value with at least ceil(q * n) values <= it.
  const double clamped = std::clamp(q, 0.0, 1.0);
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(clamped * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (const auto& [bucket, n] : sorted) {
    seen += n;
    if (seen >= rank) return bucket_low(bucket) + (bucket_width(bucket) - 1) / 2;
  }
  return bucket_low(sorted.back().first);
}

void DelayStats::add(int64_t delay_ns) {
  ++count_;
  const double x = static_cast<double>(delay_ns);
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (x - mean_);
  if (count_ == 1) {
    min_ = max_ = delay_ns;
  } else {
    min_ = std::min(min_, delay_ns);
    max_ = std::max(max_, delay_ns);
  }
  histogram_.add(delay_ns);
}

DelaySummary DelayStats::summary() const {
  DelaySummary s;
  s.count = count_;
  if (count_ == 0) return s;
  s.mean_ns = mean_;
  s.std_ns = count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0.0;
  s.p50_ns = histogram_.quantile(0.50);
  s.p99_ns = histogram_.quantile(0.99);
  // Exact extremes beat bucket midpoints where they are known.
  s.p50_ns = std::clamp(s.p50_ns, min_, max_);
  s.p99_ns = std::clamp(s.p99_ns, min_, max_);
  s.min_ns = min_;
  s.max_ns = max_;
  return s;
}

void InjectionAccounting::record_delay(int64_t actual_delay_ns, const WavePoint& at_arrival) {
  overall_.add(actual_delay_ns);
  const size_t h = static_cast<size_t>(at_arrival.half);
  halves_[h].add(actual_delay_ns);
  auto it = cycles_.find(at_arrival.cycle);
  if (it == cycles_.end()) {
    if (cycles_.size() >= kMaxCycles) cycles_.erase(cycles_.begin());
    it = cycles_.emplace(at_arrival.cycle, std::array<DelayStats, 2>{}).first;
  }
  it->second[h].add(actual_delay_ns);
}

}  // namespace nabla::injector
