// The step verification of one link ([gradient] verify); see phases.hh.
#include <algorithm>

#include "load.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {
namespace {

std::string with_ci(double value, double low, double high) {
  return common::format_number(value, 3) + " [" + common::format_number(low, 3) + ", " +
         common::format_number(high, 3) + "]";
}

// Type t's step gradient beside its spectral one; a disagreement (disjoint
// CIs) is a warning of the run.
void compare_step(CampaignRun& run, const CampaignLink& l, std::size_t t, TypeGradient& tg,
                  const analysis::BinnedSeries& series, double delay_ns) {
  tg.step =
      analysis::step_gradient(series.mean_latency_ns, run.training_bin_mean_ns.at(t),
                              run.training_bin_se_ns.at(t), delay_ns, run.spec.gradient.confidence);
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

std::size_t step_bins(std::size_t bins) {
  return std::min(kStepBins, bins / 2);
}

void verify_step(CampaignRun& run, const CampaignLink& l, LinkMeasurement& m, std::size_t index,
                 std::size_t count) {
  const std::int64_t w = run.out.bin_width_ns;
  const std::size_t bins = step_bins(run.spec.gradient.bins);
  // The first bin lets the held delay reach the responses in flight.
  const std::int64_t settle = w;
  const std::int64_t window = static_cast<std::int64_t>(bins) * w;
  run.set_phase("step", index, count, bins + 1, 0);
  Injected inj;
  inj.constant = true;
  const loadgen::EngineResult rr = inject_phase(run, l, m.amplitude_ns, 0, settle + window,
                                                std::min<std::int64_t>(2 * w, 200'000'000), inj);
  if (!inj.measured) {
    run.out.warnings.push_back(l.label +
                               ": the injector saw no packet during the step; the "
                               "requested amplitude is used as its delay");
  }
  const auto records = to_records(rr);
  const GradientWindow gw{inj.anchor_ns + settle, bins, run.kd.k_d};
  const auto series = bin_types(run, l, records, gw);
  m.step_delay_ns = inj.delta_l_ns;
  for (std::size_t t = 0; t < m.gradients.size(); ++t) {
    compare_step(run, l, t, m.gradients[t], series[t], inj.delta_l_ns);
  }
  db::Transaction tx(run.recorder.store_database());
  store_injected_phase(run, db::PhaseKind::kStep, l, inj, m.amplitude_ns,
                       static_cast<std::int64_t>(bins + 1), rr, records, settle + window);
  tx.commit();
}

}  // namespace nabla::campaign
