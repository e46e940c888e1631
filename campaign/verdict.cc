// The verdict arithmetic of fault experiments; see verdict.hh.
#include "nabla/campaign/verdict.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nabla/analysis/descriptive.hh"
#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/percentile.hh"
#include "nabla/loadgen/controller_checks.hh"

namespace nabla::campaign {
namespace {

// The self-correcting method's settings (loadgen::ControllerConfig).
constexpr double kAlpha = 0.05;
constexpr std::size_t kMaxStride = 256;
constexpr std::size_t kMinKept = 200;
constexpr std::size_t kAdfMaxValues = 100'000;

double z_of(double confidence) {
  return analysis::normal_quantile((1.0 + confidence) / 2.0);
}

// Wilson score interval of `failures` out of `n`.
Interval wilson(std::size_t failures, std::size_t n, double z) {
  if (n == 0) return {0.0, 1.0};
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(failures) / nn;
  const double z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::optional<Interval> mean_ci(std::span<const double> kept, double z) {
  if (kept.size() < 2) return std::nullopt;
  const double m = analysis::mean(kept);
  const double half = z * analysis::stddev(kept) / std::sqrt(static_cast<double>(kept.size()));
  return Interval{m - half, m + half};
}

// The fewest kept samples with an order-statistic CI of percentile p.
std::size_t samples_for_ci(std::size_t kept, double p, double confidence) {
  std::size_t high = std::max<std::size_t>(kept, 1);
  while (!analysis::percentile_ci_ranks(high, p, confidence)) high *= 2;
  std::size_t low = high / 2;
  while (low + 1 < high) {
    const std::size_t mid = low + (high - low) / 2;
    (analysis::percentile_ci_ranks(mid, p, confidence) ? high : low) = mid;
  }
  return high;
}

// Why a percentile has no CI, and (when a longer window would give one) how
// much longer: the samples for the next stride to test, or for the CI at the
// stride found, at the window's rate.
void percentile_note(const ExperimentWindow& w, double p, double confidence, TermCheck& c) {
  if (!w.stride && !w.too_few_for_iid) {
    c.note = "not iid at the lowest sampling rate tried (1:" + std::to_string(kMaxStride) + ")";
    return;
  }
  const std::size_t stride = w.stride.value_or(std::max<std::size_t>(1, 2 * w.last_stride_tried));
  const std::size_t needed = stride * std::max(kMinKept, samples_for_ci(1, p, confidence));
  if (w.stride) {
    c.note = "too few samples for a CI (" + std::to_string(w.kept) +
             " kept at 1:" + std::to_string(stride) + ")";
  } else {
    c.note = "not iid up to 1:" + std::to_string(w.last_stride_tried) + " in " +
             std::to_string(w.completed) + " samples";
  }
  if (w.completed == 0 || needed <= w.completed) return;
  c.extra_ns = std::llround(static_cast<double>(w.duration_ns) *
                            (static_cast<double>(needed) / static_cast<double>(w.completed) - 1.0));
}

TermCheck with_verdict(TermCheck c, std::int64_t window_ns) {
  if (!c.ci) {
    c.verdict = Verdict::kInconclusive;
    return c;
  }
  c.verdict = judge(*c.ci, c.bound, c.bound_is_max);
  if (c.verdict != Verdict::kInconclusive) return c;
  c.extra_ns = extra_duration_ns(c.value, *c.ci, c.bound, window_ns);
  if (!c.extra_ns) c.note = "cannot decide: the estimate equals the bound";
  return c;
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInconclusive:
      break;
  }
  return "inconclusive";
}

Verdict parse_verdict(std::string_view text) {
  for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive}) {
    if (to_string(v) == text) return v;
  }
  throw std::invalid_argument("verdict: must be pass, fail or inconclusive, got '" +
                              std::string(text) + "'");
}

ExperimentWindow experiment_window(std::span<const double> latencies_ns, std::size_t scheduled,
                                   std::int64_t duration_ns,
                                   const std::vector<PercentileBound>& bounds, double confidence) {
  ExperimentWindow w;
  w.duration_ns = duration_ns;
  w.completed = latencies_ns.size();
  w.scheduled = std::max(scheduled, w.completed);
  const double z = z_of(confidence);
  const std::size_t failures = w.scheduled - w.completed;
  w.error_rate =
      w.scheduled > 0 ? static_cast<double>(failures) / static_cast<double>(w.scheduled) : 0.0;
  w.error_ci = wilson(failures, w.scheduled, z);
  if (latencies_ns.empty()) return w;
  w.mean_ns = analysis::mean(latencies_ns);
  const loadgen::StrideChoice choice =
      loadgen::choose_stride(latencies_ns, kAlpha, kMaxStride, kMinKept);
  w.stride = choice.stride;
  w.too_few_for_iid = !choice.stride && !choice.exhausted;
  if (!choice.steps.empty()) w.last_stride_tried = choice.steps.back().stride;
  const std::vector<double> kept = loadgen::keep_every(latencies_ns, w.stride.value_or(1));
  w.kept = w.stride ? kept.size() : 0;
  w.stationary = loadgen::check_stationarity(kept, kAlpha, kAdfMaxValues).stationary;
  std::vector<double> percents;
  for (const PercentileBound& b : bounds) percents.push_back(b.p * 100.0);
  const auto tails = loadgen::tail_percentiles(kept, percents, confidence);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    WindowPercentile p{bounds[i].term, bounds[i].p, tails[i].value_ns, std::nullopt};
    if (w.stride && tails[i].ci_low_ns && tails[i].ci_high_ns) {
      p.ci_ns = Interval{*tails[i].ci_low_ns, *tails[i].ci_high_ns};
    }
    w.percentiles.push_back(p);
  }
  if (w.stride) w.mean_ci_ns = mean_ci(kept, z);
  return w;
}

Verdict judge(const Interval& ci, double bound, bool bound_is_max) {
  const bool inside = bound_is_max ? ci.high <= bound : ci.low >= bound;
  const bool outside = bound_is_max ? ci.low > bound : ci.high < bound;
  if (inside) return Verdict::kPass;
  if (outside) return Verdict::kFail;
  return Verdict::kInconclusive;
}

std::optional<std::int64_t> extra_duration_ns(double value, const Interval& ci, double bound,
                                              std::int64_t window_ns) {
  const double gap = std::abs(value - bound);
  if (!(gap > 0)) return std::nullopt;
  const double half = bound > value ? ci.high - value : value - ci.low;
  const double factor = (half / gap) * (half / gap);
  if (!(factor > 1.0) || !std::isfinite(factor)) return 0;
  return std::llround(static_cast<double>(window_ns) * (factor - 1.0));
}

TermCheck throughput_check(const ExperimentWindow& w, const ExperimentWindow& baseline,
                           double floor, double confidence) {
  TermCheck c;
  c.term = "throughput";
  c.bound = floor;
  c.bound_is_max = false;
  if (w.scheduled == 0 || baseline.scheduled == 0 || baseline.completed == 0) {
    c.note = "no requests in the window or the baseline";
    return with_verdict(c, w.duration_ns);
  }
  // Shares answered, with half a request added to each count so a window
  // without failures still has a spread.
  const auto share = [](const ExperimentWindow& s) {
    return (static_cast<double>(s.completed) + 0.5) / (static_cast<double>(s.scheduled) + 1.0);
  };
  const auto log_variance = [&](const ExperimentWindow& s) {
    const double p = share(s);
    return (1.0 - p) / (p * (static_cast<double>(s.scheduled) + 1.0));
  };
  const double ratio =
      (static_cast<double>(w.completed) / static_cast<double>(w.scheduled)) /
      (static_cast<double>(baseline.completed) / static_cast<double>(baseline.scheduled));
  const double centre = std::log(share(w) / share(baseline));
  const double half = z_of(confidence) * std::sqrt(log_variance(w) + log_variance(baseline));
  c.value = ratio - 1.0;
  c.ci = Interval{std::exp(centre - half) - 1.0, std::exp(centre + half) - 1.0};
  return with_verdict(c, w.duration_ns);
}

std::vector<TermCheck> check_window(const std::string& name, const ExperimentWindow& w,
                                    const ExperimentWindow& baseline, const SloSpec& slo,
                                    double confidence) {
  std::vector<TermCheck> out;
  for (std::size_t i = 0; i < slo.percentiles.size() && i < w.percentiles.size(); ++i) {
    const WindowPercentile& p = w.percentiles[i];
    TermCheck c;
    c.term = p.term;
    c.bound = static_cast<double>(slo.percentiles[i].bound_ns);
    c.value = p.value_ns;
    c.ci = p.ci_ns;
    if (!c.ci) percentile_note(w, p.p, confidence, c);
    out.push_back(with_verdict(c, w.duration_ns));
  }
  if (slo.max_error_rate) {
    TermCheck c;
    c.term = "errors";
    c.bound = *slo.max_error_rate;
    c.value = w.error_rate;
    c.ci = w.error_ci;
    out.push_back(with_verdict(c, w.duration_ns));
  }
  if (slo.min_throughput_change && &w != &baseline) {
    out.push_back(throughput_check(w, baseline, *slo.min_throughput_change, confidence));
  }
  for (TermCheck& c : out) c.window = name;
  return out;
}

Verdict overall_verdict(std::span<const TermCheck> checks) {
  bool inconclusive = false;
  for (const TermCheck& c : checks) {
    if (c.verdict == Verdict::kFail) return Verdict::kFail;
    inconclusive = inconclusive || c.verdict == Verdict::kInconclusive;
  }
  return inconclusive ? Verdict::kInconclusive : Verdict::kPass;
}

}  // namespace nabla::campaign
