#pragma once
// Step 1 of the link-gradient training phase: turning request records into a
// uniformly sampled response-time series.
//
// Bin width rule (paper section 3, step 1): dTs = m + 3*sigma of "the time
// interval for k consecutive requests". We define that interval as the span
// of k inter-arrival gaps, t[i+k] - t[i] over the sorted arrival times, for
// every i (overlapping windows), with sigma the sample standard deviation
// (ddof = 1). Why k gaps and not k-1: a bin starts at an arbitrary instant,
// and the time from there to the k-th following arrival is the residual gap
// plus k-1 whole gaps; for Poisson arrivals the residual is distributed like
// a whole gap, so k gaps is the interval that has to fit in a bin for it to
// hold k requests. The result is rounded up to a whole nanosecond (and is at
// least 1 ns).
//
// Empty-bin policy: a bin that received no request takes the value linearly
// interpolated (by bin index) between its nearest non-empty neighbours; a run
// of empty bins at either end copies the nearest non-empty bin. `counts`
// keeps the true number of records per bin (0 marks a filled bin) and
// `filled_bins` how many were filled. When more than
// BinningOptions::max_empty_fraction (default 5%) of the bins were empty the
// series is marked unreliable (`reliable == false`): interpolation flattens
// the spectrum, so a gradient computed from it underestimates. The caller
// decides whether to use it (the coordinator reports it as a warning).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace nabla::analysis {

struct LatencyRecord {
  std::int64_t t_ns;        // arrival (send) time of the request
  std::int64_t latency_ns;  // its response time
  std::int32_t type;        // transaction type
};

// dTs = mean + 3*stddev of t[i+k] - t[i] over the sorted arrival times (need
// not be sorted on input). Throws std::invalid_argument when k == 0 or there
// are fewer than k + 2 arrivals (fewer than two spans).
std::int64_t bin_width_ns(std::span<const std::int64_t> arrival_times_ns, std::size_t k);

struct BinningOptions {
  double max_empty_fraction = 0.05;  // above this the series is unreliable
};

struct BinnedSeries {
  std::int32_t type = 0;
  std::int64_t start_ns = 0;
  std::int64_t bin_width_ns = 0;
  std::vector<double> mean_latency_ns;  // one value per bin, empty bins filled
  std::vector<std::uint32_t> counts;    // records per bin (0 = empty, filled)
  std::size_t filled_bins = 0;
  std::size_t records = 0;  // records that fell inside the window
  bool reliable = true;
};

// Bins every record whose t_ns lies in [start_ns, start_ns + bins*bin_width_ns)
// (bin i covers [start + i*w, start + (i+1)*w)); records outside are ignored.
// The result's type is that of the first record in the window. Throws
// std::invalid_argument for bins == 0, bin_width_ns <= 0, a window that
// overflows int64, or no record inside the window.
BinnedSeries bin_latencies(std::span<const LatencyRecord> records, std::int64_t start_ns,
                           std::int64_t bin_width_ns, std::size_t bins,
                           const BinningOptions& options = {});

// One series per transaction type that has at least one record in the
// window, sorted by type.
std::vector<BinnedSeries> bin_by_type(std::span<const LatencyRecord> records, std::int64_t start_ns,
                                      std::int64_t bin_width_ns, std::size_t bins,
                                      const BinningOptions& options = {});

}  // namespace nabla::analysis
