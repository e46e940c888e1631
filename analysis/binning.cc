#include "nabla/analysis/binning.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "nabla/analysis/descriptive.hh"

namespace nabla::analysis {
namespace {

void validate_window(std::int64_t start_ns, std::int64_t width_ns, std::size_t bins) {
  if (bins == 0) throw std::invalid_argument("binning: bins must be >= 1");
  if (width_ns <= 0) throw std::invalid_argument("binning: bin_width_ns must be > 0");
  const auto max = std::numeric_limits<std::int64_t>::max();
  if (bins > static_cast<std::size_t>(max / width_ns) ||
      start_ns > max - static_cast<std::int64_t>(bins) * width_ns) {
    throw std::invalid_argument("binning: start_ns + bins * bin_width_ns overflows int64");
  }
}

// Fills empty bins (counts == 0) by the policy documented in binning.hh.
void fill_empty_bins(BinnedSeries& s) {
  const std::size_t n = s.counts.size();
  std::size_t prev = n;  // index of the last non-empty bin seen, n = none yet
  for (std::size_t i = 0; i <= n; ++i) {
    if (i < n && s.counts[i] == 0) continue;
    // Bins (prev, i) are empty; i == n or counts[i] > 0.
    const std::size_t first = prev == n ? 0 : prev + 1;
    for (std::size_t e = first; e < i; ++e) {
      if (prev == n) {
        s.mean_latency_ns[e] = s.mean_latency_ns[i];
      } else if (i == n) {
        s.mean_latency_ns[e] = s.mean_latency_ns[prev];
      } else {
        const double w = static_cast<double>(e - prev) / static_cast<double>(i - prev);
        s.mean_latency_ns[e] = (1.0 - w) * s.mean_latency_ns[prev] + w * s.mean_latency_ns[i];
      }
      ++s.filled_bins;
    }
    prev = i;
  }
}

// Accumulates one record into a series (sum in mean_latency_ns for now).
void accumulate(BinnedSeries& s, const LatencyRecord& r) {
  const auto bin = static_cast<std::size_t>((r.t_ns - s.start_ns) / s.bin_width_ns);
  s.mean_latency_ns[bin] += static_cast<double>(r.latency_ns);
  ++s.counts[bin];
  ++s.records;
}

BinnedSeries empty_series(std::int32_t type, std::int64_t start_ns, std::int64_t width_ns,
                          std::size_t bins) {
  BinnedSeries s;
  s.type = type;
  s.start_ns = start_ns;
  s.bin_width_ns = width_ns;
  s.mean_latency_ns.assign(bins, 0.0);
  s.counts.assign(bins, 0);
  return s;
}

void finish(BinnedSeries& s, const BinningOptions& options) {
  for (std::size_t i = 0; i < s.counts.size(); ++i) {
    if (s.counts[i] > 0) s.mean_latency_ns[i] /= static_cast<double>(s.counts[i]);
  }
  fill_empty_bins(s);
  s.reliable = static_cast<double>(s.filled_bins) <=
               options.max_empty_fraction * static_cast<double>(s.counts.size());
}

}  // namespace

std::int64_t bin_width_ns(std::span<const std::int64_t> arrival_times_ns, std::size_t k) {
  if (k == 0) throw std::invalid_argument("bin_width_ns: k must be >= 1");
  if (arrival_times_ns.size() < k + 2) {
    throw std::invalid_argument("bin_width_ns: need at least k + 2 arrivals");
  }
  std::vector<std::int64_t> t(arrival_times_ns.begin(), arrival_times_ns.end());
  std::sort(t.begin(), t.end());
  RunningStats spans;
  for (std::size_t i = 0; i + k < t.size(); ++i) spans.add(static_cast<double>(t[i + k] - t[i]));
  // At least 1 ns: arrivals stamped with identical times would give 0.
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::ceil(spans.mean() + 3.0 * spans.stddev(1))));
}

BinnedSeries bin_latencies(std::span<const LatencyRecord> records, std::int64_t start_ns,
                           std::int64_t bin_width_ns, std::size_t bins,
                           const BinningOptions& options) {
  validate_window(start_ns, bin_width_ns, bins);
  const std::int64_t end_ns = start_ns + static_cast<std::int64_t>(bins) * bin_width_ns;
  BinnedSeries s = empty_series(0, start_ns, bin_width_ns, bins);
  bool typed = false;
  for (const auto& r : records) {
    if (r.t_ns < start_ns || r.t_ns >= end_ns) continue;
    if (!typed) {
      s.type = r.type;
      typed = true;
    }
    accumulate(s, r);
  }
  if (s.records == 0) throw std::invalid_argument("bin_latencies: no record inside the window");
  finish(s, options);
  return s;
}

std::vector<BinnedSeries> bin_by_type(std::span<const LatencyRecord> records, std::int64_t start_ns,
                                      std::int64_t bin_width_ns, std::size_t bins,
                                      const BinningOptions& options) {
  validate_window(start_ns, bin_width_ns, bins);
  const std::int64_t end_ns = start_ns + static_cast<std::int64_t>(bins) * bin_width_ns;
  std::map<std::int32_t, BinnedSeries> by_type;
  for (const auto& r : records) {
    if (r.t_ns < start_ns || r.t_ns >= end_ns) continue;
    auto it = by_type.find(r.type);
    if (it == by_type.end()) {
      it = by_type.emplace(r.type, empty_series(r.type, start_ns, bin_width_ns, bins)).first;
    }
    accumulate(it->second, r);
  }
  std::vector<BinnedSeries> out;
  out.reserve(by_type.size());
  for (auto& [type, s] : by_type) {
    finish(s, options);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nabla::analysis
