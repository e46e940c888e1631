#include "nabla/analysis/sectioning.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nabla/analysis/descriptive.hh"
#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/percentile.hh"

namespace nabla::analysis {
namespace {

void validate(double p, double confidence, const SectioningConfig& config) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("sectioning: p must be in [0, 1]");
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("sectioning: confidence must be in (0, 1)");
  }
  if (config.batches < 2) throw std::invalid_argument("sectioning: batches must be >= 2");
}

// Fewest samples a batch needs: min_batch, and min_tail beyond the
// percentile on its nearer side (with the relative tolerance percentile.hh
// uses, so that 1000 · 0.01 counts as 10).
std::size_t min_batch_size(double p, const SectioningConfig& config) {
  const double tail = std::min(p, 1 - p);
  if (tail <= 0) return config.min_batch;
  const double need = std::ceil(config.min_tail_per_batch / tail * (1 - 1e-12));
  return std::max(config.min_batch, static_cast<std::size_t>(need));
}

}  // namespace

std::size_t min_series_for_sectioning(double p, const SectioningConfig& config) {
  return min_batch_size(p, config) * config.batches;
}

std::optional<SectionedPercentile> sectioned_percentile(std::span<const double> series, double p,
                                                        double confidence,
                                                        const SectioningConfig& config) {
  validate(p, confidence, config);
  if (std::any_of(series.begin(), series.end(), [](double x) { return std::isnan(x); })) {
    throw std::invalid_argument("sectioning: NaN in the data");
  }
  const std::size_t m = series.size() / config.batches;
  if (m == 0 || m < min_batch_size(p, config)) return std::nullopt;
  SectionedPercentile out;
  out.samples = series.size();
  out.batches = config.batches;
  out.batch_size = m;
  out.value = percentile(series, p, confidence).value;
  for (std::size_t b = 0; b < config.batches; ++b) {
    out.batch_values.push_back(percentile(series.subspan(b * m, m), p, confidence).value);
  }
  out.batch_sd = stddev(out.batch_values);
  const double t =
      student_t_quantile((1 + confidence) / 2, static_cast<double>(config.batches - 1));
  const double half = t * out.batch_sd / std::sqrt(static_cast<double>(config.batches));
  out.low = out.value - half;
  out.high = out.value + half;
  return out;
}

}  // namespace nabla::analysis
