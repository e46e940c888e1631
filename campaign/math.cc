// Campaign arithmetic; see math.hh.
#include "nabla/campaign/math.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace nabla::campaign {
namespace {

// Welford running mean and variance.
struct Running {
  std::size_t n = 0;
  double mean = 0;
  double m2 = 0;
  void add(double x) {
    ++n;
    const double d = x - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (x - mean);
  }
  double variance() const { return n > 1 ? m2 / static_cast<double>(n - 1) : 0.0; }
};

}  // namespace

std::int64_t campaign_bin_width_ns(std::span<const analysis::LatencyRecord> records,
                                   std::size_t requests_per_bin,
                                   const std::vector<std::string>& type_names) {
  std::map<std::int32_t, std::vector<std::int64_t>> times;
  for (std::size_t t = 0; t < type_names.size(); ++t) times[static_cast<std::int32_t>(t)];
  for (const analysis::LatencyRecord& r : records) times[r.type].push_back(r.t_ns);
  std::int64_t width = 0;
  for (const auto& [type, t] : times) {
    const std::string name = static_cast<std::size_t>(type) < type_names.size()
                                 ? type_names[static_cast<std::size_t>(type)]
                                 : std::to_string(type);
    if (t.size() < requests_per_bin + 2) {
      throw std::invalid_argument("type " + name + ": only " + std::to_string(t.size()) +
                                  " requests in the calibration load, need at least " +
                                  std::to_string(requests_per_bin + 2) +
                                  " (raise workload.rate or links.discover_for/workload.warmup)");
    }
    width = std::max(width, analysis::bin_width_ns(t, requests_per_bin));
  }
  if (width <= 0) throw std::invalid_argument("no requests to compute a bin width from");
  return width;
}

std::int64_t expected_bin_width_ns(double rate_rps, double min_weight_fraction,
                                   std::size_t requests_per_bin) {
  const double k = static_cast<double>(requests_per_bin);
  const double lambda = rate_rps * min_weight_fraction;
  if (!(lambda > 0)) throw std::invalid_argument("rate and weight must be > 0");
  return static_cast<std::int64_t>(std::ceil((k + 3.0 * std::sqrt(k)) / lambda * 1e9));
}

KdChoice choose_k_d(const std::vector<analysis::TrainingResult>& trainings) {
  if (trainings.empty()) throw std::invalid_argument("choose_k_d: no training results");
  std::size_t ks = std::numeric_limits<std::size_t>::max();
  for (const auto& t : trainings) ks = std::min(ks, t.amplitude_by_k_ns.size());
  KdChoice best;
  double best_amp = std::numeric_limits<double>::infinity();
  for (std::size_t k = 1; k < ks; ++k) {
    double worst = 0;
    bool candidate = true;
    for (const auto& t : trainings) {
      const double a = t.amplitude_by_k_ns[k];
      if (!(a > 0) || !std::isfinite(a)) candidate = false;
      worst = std::max(worst, a);
    }
    if (candidate && worst < best_amp) {
      best_amp = worst;
      best.k_d = static_cast<int>(k);
    }
  }
  if (best.k_d == 0)
    throw std::invalid_argument("choose_k_d: no frequency is a candidate for every type");
  best.amplitude_ns = best_amp;
  for (const auto& t : trainings) {
    best.per_type_amplitude_ns.push_back(t.amplitude_by_k_ns[static_cast<std::size_t>(best.k_d)]);
  }
  return best;
}

RoughGradient rough_gradient(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                             std::int64_t wave_start_ns, std::int64_t period_ns,
                             double delta_l_ns) {
  if (!(delta_l_ns > 0)) throw std::invalid_argument("rough_gradient: delta_l_ns must be > 0");
  Running high, low;
  const std::int64_t mid = wave_start_ns + period_ns / 2;
  const std::int64_t end = wave_start_ns + period_ns;
  for (const analysis::LatencyRecord& r : records) {
    if (r.type != type || r.t_ns < wave_start_ns || r.t_ns >= end) continue;
    (r.t_ns < mid ? high : low).add(static_cast<double>(r.latency_ns));
  }
  RoughGradient g;
  g.high_requests = high.n;
  g.low_requests = low.n;
  if (high.n < 2 || low.n < 2) return g;
  const double diff = high.mean - low.mean;
  const double se = std::sqrt(high.variance() / static_cast<double>(high.n) +
                              low.variance() / static_cast<double>(low.n));
  g.value = diff / delta_l_ns;
  g.z = se > 0 ? diff / se : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  g.clear = g.value > 0 && g.z >= kClearZ;
  return g;
}

double adapted_amplitude_ns(const std::vector<double>& per_type_amplitude_ns,
                            const std::vector<RoughGradient>& rough, double min_amplitude_ns,
                            double max_amplitude_ns) {
  if (per_type_amplitude_ns.size() != rough.size()) {
    throw std::invalid_argument("adapted_amplitude_ns: one rough gradient per type");
  }
  double out = 0;
  double steepest = 0;
  bool any = false;
  for (std::size_t i = 0; i < rough.size(); ++i) {
    if (!rough[i].clear) continue;
    any = true;
    steepest = std::max(steepest, rough[i].value);
    out = std::max(out, analysis::adapt_amplitude_ns(per_type_amplitude_ns[i], rough[i].value,
                                                     max_amplitude_ns));
  }
  if (!any) out = max_amplitude_ns;
  // The cap bounds the response-time swing too: no clear type should see
  // more than max_amplitude (a gradient-2 type at a 10 ms cap sees 10 ms,
  // not 20 ms; on the testbed a 20 ms swing on web->app overloaded the web
  // tier and timed requests out).
  if (steepest > 1.0) out = std::min(out, max_amplitude_ns / steepest);
  return std::clamp(out, min_amplitude_ns, max_amplitude_ns);
}

double WindowStats::rate_rps(std::int64_t window_ns) const {
  return window_ns > 0 ? static_cast<double>(requests) * 1e9 / static_cast<double>(window_ns) : 0;
}

WindowStats window_stats(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                         std::int64_t start_ns, std::int64_t end_ns) {
  Running r;
  for (const analysis::LatencyRecord& x : records) {
    if (x.type == type && x.t_ns >= start_ns && x.t_ns < end_ns) {
      r.add(static_cast<double>(x.latency_ns));
    }
  }
  return WindowStats{r.mean, r.n};
}

double completion_ratio(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                        std::int64_t start_ns, std::int64_t end_ns) {
  std::size_t sent = 0, completed = 0;
  for (const analysis::LatencyRecord& x : records) {
    if (x.type != type) continue;
    if (x.t_ns >= start_ns && x.t_ns < end_ns) ++sent;
    const std::int64_t done = x.t_ns + x.latency_ns;
    if (done >= start_ns && done < end_ns) ++completed;
  }
  return sent == 0 ? 0.0 : static_cast<double>(completed) / static_cast<double>(sent);
}

std::optional<double> delta_l_from_halves(std::size_t high_count, double high_mean_ns,
                                          std::size_t low_count, double low_mean_ns) {
  if (high_count == 0) return std::nullopt;
  const double low = low_count == 0 ? 0.0 : low_mean_ns;
  const double d = high_mean_ns - low;
  if (!(d > 0)) return std::nullopt;
  return d;
}

analysis::GradientEstimate combine_estimates(std::span<const analysis::GradientEstimate> phases) {
  if (phases.empty()) throw std::invalid_argument("combine_estimates: no phase");
  if (phases.size() == 1) return phases.front();
  double weights = 0, value = 0, time_domain = 0, time_domain_weights = 0, quantile = 0;
  std::size_t heaviest = 0;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const analysis::GradientEstimate& e = phases[i];
    const double w = inverse_variance_weight(e.standard_error);
    if (w == 0) continue;
    if (weights == 0 || w > inverse_variance_weight(phases[heaviest].standard_error)) heaviest = i;
    weights += w;
    value += w * e.value;
    if (std::isfinite(e.time_domain_value)) {
      time_domain += w * e.time_domain_value;
      time_domain_weights += w;
    }
    quantile = std::max(quantile, (e.ci_high - e.value) / e.standard_error);
  }
  if (weights == 0) return phases.front();
  analysis::GradientEstimate out = phases[heaviest];
  out.value = value / weights;
  out.standard_error = 1.0 / std::sqrt(weights);
  out.ci_low = out.value - quantile * out.standard_error;
  out.ci_high = out.value + quantile * out.standard_error;
  out.time_domain_value = time_domain_weights > 0 ? time_domain / time_domain_weights
                                                  : std::numeric_limits<double>::quiet_NaN();
  return out;
}

double inverse_variance_weight(double standard_error) {
  return standard_error > 0 ? 1.0 / (standard_error * standard_error) : 0.0;
}

std::optional<double> inverse_variance_mean(std::span<const double> values,
                                            std::span<const double> standard_errors) {
  if (values.size() != standard_errors.size()) {
    throw std::invalid_argument("inverse_variance_mean: " + std::to_string(values.size()) +
                                " values, " + std::to_string(standard_errors.size()) +
                                " standard errors");
  }
  double weights = 0, sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double w = inverse_variance_weight(standard_errors[i]);
    weights += w;
    sum += w * values[i];
  }
  if (weights == 0) return std::nullopt;
  return sum / weights;
}

std::int64_t campaign_budget_ns(std::int64_t bin_width_ns, std::size_t bins, std::size_t chunks,
                                std::size_t links, double period_bins, std::int64_t warmup_ns,
                                std::int64_t discover_ns) {
  const double bins_total = static_cast<double>(chunks * bins) +
                            static_cast<double>(links) * (static_cast<double>(bins) + period_bins);
  const double phases = 1.0 + 2.0 * static_cast<double>(links);
  return static_cast<std::int64_t>(bins_total * static_cast<double>(bin_width_ns) +
                                   phases * static_cast<double>(warmup_ns)) +
         discover_ns;
}

}  // namespace nabla::campaign
