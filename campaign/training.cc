// The passive training phase; see phases.hh.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "load.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {
namespace {

// Bins and trains every type on the training window; records each type's
// mean, rate and completion ratio in the outcome.
void train_types(CampaignRun& run, const std::vector<analysis::LatencyRecord>& records,
                 std::int64_t start_ns, std::int64_t window_ns) {
  const GradientSpec& g = run.spec.gradient;
  const std::int64_t w = run.out.bin_width_ns;
  analysis::TrainingOptions to;
  to.bins = g.bins;
  to.chunks = g.chunks;
  to.delay_scale = g.delay_scale;
  to.min_bins_per_period = g.min_bins_per_period;
  CampaignOutcome& out = run.out;
  for (std::size_t t = 0; t < out.types.size(); ++t) {
    const auto type = static_cast<std::int32_t>(t);
    analysis::BinnedSeries s;
    try {
      s = analysis::bin_latencies(of_type(records, type), start_ns, w, g.chunks * g.bins);
    } catch (const std::invalid_argument&) {
      throw std::runtime_error("training: no " + out.types[t] + " request completed");
    }
    if (!s.reliable) {
      out.warnings.push_back("training: " + out.types[t] + " had " + std::to_string(s.filled_bins) +
                             " empty bins (interpolated)");
    }
    run.trainings.push_back(analysis::train(s.mean_latency_ns, w, to));
    const WindowStats ws = window_stats(records, type, start_ns, start_ns + window_ns);
    out.training_mean_ns.push_back(ws.mean_latency_ns);
    out.training_rate_rps.push_back(ws.rate_rps(window_ns));
    out.training_completion.push_back(
        completion_ratio(records, type, start_ns, start_ns + window_ns));
  }
}

// One k_d for all types, the training amplitude and the wave's period.
void choose_wave(CampaignRun& run) {
  const GradientSpec& g = run.spec.gradient;
  run.kd = choose_k_d(run.trainings);
  run.out.k_d = run.kd.k_d;
  run.out.training_type_amplitude_ns = run.kd.per_type_amplitude_ns;
  run.out.training_amplitude_ns =
      std::clamp(run.kd.amplitude_ns, static_cast<double>(g.min_amplitude_ns),
                 static_cast<double>(g.max_amplitude_ns));
  run.out.period_ns =
      std::llround(static_cast<double>(g.bins) * static_cast<double>(run.out.bin_width_ns) /
                   static_cast<double>(run.kd.k_d));
}

}  // namespace

void train(CampaignRun& run) {
  const GradientSpec& g = run.spec.gradient;
  const std::int64_t window = static_cast<std::int64_t>(g.chunks * g.bins) * run.out.bin_width_ns;
  const std::int64_t warmup = run.spec.workload.warmup_ns;
  const std::int64_t t0 = run.now_ns() + kEngineLeadNs;
  const std::int64_t start = t0 + warmup;
  run.set_phase("training", 0, 0, g.chunks * g.bins, start);
  const auto load =
      run.env.load.start(engine_config(run.spec.workload, warmup + window + kEngineSlackNs,
                                       run.next_seed(), run.tls_sessions),
                         t0);
  run.wait_until(start + window);
  const loadgen::EngineResult r = load->take();
  const auto records = to_records(r);
  train_types(run, records, start, window);
  choose_wave(run);
  {
    db::Transaction tx(run.recorder.store_database());
    store_training_phase(run, r, records, start, window);
    tx.commit();
  }
  run.note(
      "training: k_d " + std::to_string(run.kd.k_d) + ", period " +
      common::format_duration_ns(run.out.period_ns / 1000 * 1000) + ", amplitude " +
      common::format_duration_ns(std::llround(run.out.training_amplitude_ns) / 1000 * 1000) +
      (run.kd.amplitude_ns > run.out.training_amplitude_ns ? " (capped by max_amplitude)" : ""));
}

}  // namespace nabla::campaign
