// The step verification of one link ([gradient] verify); see phases.hh.
#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include "load.hh"
#include "nabla/analysis/percentile.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {
namespace {

std::string with_ci(double value, double low, double high) {
  return common::format_number(value, 3) + " [" + common::format_number(low, 3) + ", " +
         common::format_number(high, 3) + "]";
}

// The bins at either end of a window not measured: the step's p99 response
// time in bins, at least 1, with at least two bins measured between them.
std::size_t guard_bins(const std::vector<analysis::LatencyRecord>& records, std::int64_t from_ns,
                       std::int64_t to_ns, std::int64_t bin_width_ns, std::size_t window_bins) {
  std::vector<double> latencies;
  for (const analysis::LatencyRecord& r : records) {
    if (r.t_ns >= from_ns && r.t_ns < to_ns) latencies.push_back(static_cast<double>(r.latency_ns));
  }
  std::size_t guard = 1;
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    const double p99 = analysis::percentile_sorted(latencies, 0.99);
    guard = static_cast<std::size_t>(std::ceil(p99 / static_cast<double>(bin_width_ns)));
  }
  return std::clamp<std::size_t>(guard, 1, (window_bins - 2) / 2);
}

// The measured bins of each window: all but `guard` at either end. Bins are
// by send time, so a request sent within a response time before a switch
// has its later messages under the other level; and the transport's own
// timers (delayed ACKs, Nagle) take about a response time to settle after
// one.
std::array<std::span<const double>, kStepWindows> step_windows(const std::vector<double>& bins,
                                                               std::size_t window_bins,
                                                               std::size_t guard) {
  std::array<std::span<const double>, kStepWindows> out;
  for (std::size_t i = 0; i < kStepWindows; ++i) {
    out[i] =
        std::span<const double>(bins).subspan(i * window_bins + guard, window_bins - 2 * guard);
  }
  return out;
}

// Type t's step gradient beside its spectral one; a disagreement (disjoint
// CIs) is a warning of the run.
void compare_step(CampaignRun& run, const CampaignLink& l, TypeGradient& tg,
                  const analysis::BinnedSeries& series, std::size_t window_bins, std::size_t guard,
                  double delay_ns) {
  tg.step =
      analysis::alternating_step_gradient(step_windows(series.mean_latency_ns, window_bins, guard),
                                          delay_ns, run.spec.gradient.confidence);
  if (!tg.step) return;
  const analysis::GradientEstimate& e = tg.estimate;
  tg.step_disagrees =
      analysis::estimates_disagree(e.ci_low, e.ci_high, tg.step->ci_low, tg.step->ci_high);
  const std::string line = l.label + " " + tg.type + ": step " +
                           with_ci(tg.step->value, tg.step->ci_low, tg.step->ci_high) +
                           ", spectral " + with_ci(e.value, e.ci_low, e.ci_high) +
                           (tg.step_disagrees ? ": they disagree" : ": they agree");
  run.note(line);
  if (tg.step_disagrees) run.out.warnings.push_back(line);
}

}  // namespace

std::size_t step_window_bins(std::size_t bins) {
  // Two measured bins (a window's spread needs two) and a guard at each end.
  return std::max<std::size_t>(4, std::min(kStepWindowBins, bins / 4));
}

std::size_t step_phase_bins(std::size_t bins) {
  return kStepWindows * step_window_bins(bins);
}

void verify_step(CampaignRun& run, const CampaignLink& l, LinkMeasurement& m, std::size_t index,
                 std::size_t count) {
  const std::int64_t w = run.out.bin_width_ns;
  const std::size_t window_bins = step_window_bins(run.spec.gradient.bins);
  const std::size_t total_bins = step_phase_bins(run.spec.gradient.bins);
  const std::int64_t window = static_cast<std::int64_t>(total_bins) * w;
  run.set_phase("step", index, count, total_bins, 0);
  Injected inj;
  inj.period_ns = 2 * static_cast<std::int64_t>(window_bins) * w;
  const loadgen::EngineResult rr =
      inject_phase(run, l, m.amplitude_ns, static_cast<int>(kStepWindows / 2), window,
                   std::min<std::int64_t>(2 * w, 200'000'000), inj);
  if (!inj.measured) {
    run.out.warnings.push_back(l.label +
                               ": the injector saw no packet in one half of the step; the "
                               "requested amplitude is used as its delay");
  }
  const auto records = to_records(rr);
  const GradientWindow gw{inj.anchor_ns, total_bins, run.kd.k_d};
  const auto series = bin_types(run, l, records, gw);
  const std::size_t guard =
      guard_bins(records, inj.anchor_ns, inj.anchor_ns + window, w, window_bins);
  m.step_delay_ns = inj.delta_l_ns;
  for (std::size_t t = 0; t < m.gradients.size(); ++t) {
    compare_step(run, l, m.gradients[t], series[t], window_bins, guard, inj.delta_l_ns);
  }
  db::Transaction tx(run.recorder.store_database());
  store_injected_phase(run, db::PhaseKind::kStep, l, inj, m.amplitude_ns,
                       static_cast<std::int64_t>(total_bins), rr, records, window);
  tx.commit();
}

}  // namespace nabla::campaign
