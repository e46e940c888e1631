// Every measurable link in the same phases, each at its own frequency; see
// phases.hh and docs/method.md ("Simultaneous schedule").
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>

#include "load.hh"
#include "message_sampler.hh"
#include "nabla/analysis/frequency_plan.hh"
#include "nabla/analysis/interaction.hh"
#include "nabla/analysis/square_wave_synth.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {
namespace {

// N may grow to this many times the spec's bins to fit every link.
constexpr std::size_t kMaxBinsGrowth = 16;

struct Wave {
  CampaignLink* link = nullptr;
  int k_d = 0;
  std::int64_t period_ns = 0;
  double amplitude_ns = 0;                // of the phase being run
  double first_amplitude_ns = 0;          // of the first phase, before adapting
  std::vector<double> unit_amplitude_ns;  // per type: what a gradient of 1 needs at k_d
  Injected injected;
};

struct SimultaneousPlan {
  std::size_t bins = 0;
  analysis::FrequencyPlan frequencies;
};

// Candidate frequencies quietest first by the training spectra (the
// largest over the types of sigma(k) / min|W(k)|, the amplitude a unit
// gradient needs at k); empty when there is no training of this N.
std::vector<std::size_t> quietest_first(const CampaignRun& run, std::size_t bins) {
  const GradientSpec& g = run.spec.gradient;
  if (bins != g.bins || run.trainings.empty()) return {};
  std::vector<std::pair<double, std::size_t>> noise;
  for (std::size_t k = 1; k <= bins / g.min_bins_per_period; ++k) {
    const double period = static_cast<double>(bins) / static_cast<double>(k);
    const double w = analysis::square_wave_min_coefficient_magnitude(bins, k, period);
    double worst = 0;
    for (const auto& t : run.trainings) worst = std::max(worst, t.fft0_sigma.at(k) / w);
    noise.emplace_back(worst, k);
  }
  std::stable_sort(noise.begin(), noise.end());
  std::vector<std::size_t> order;
  for (const auto& [_, k] : noise) order.push_back(k);
  return order;
}

SimultaneousPlan plan_waves(CampaignRun& run, std::size_t links) {
  const GradientSpec& g = run.spec.gradient;
  analysis::FrequencyPlanOptions o;
  o.bins = g.bins;
  o.min_bins_per_period = g.min_bins_per_period;
  o.preference = quietest_first(run, g.bins);
  if (auto plan = analysis::plan_frequencies(links, o)) return {g.bins, *plan};
  o.bins = 2 * g.bins;
  o.preference.clear();
  const auto sized = analysis::smallest_frequency_plan(links, o, g.bins * kMaxBinsGrowth);
  if (!sized) {
    throw std::runtime_error(std::to_string(links) + " links do not fit in " +
                             std::to_string(g.bins * kMaxBinsGrowth) +
                             " bins at distinct frequencies; use schedule = \"sequential\"");
  }
  run.note("simultaneous: " + std::to_string(links) + " links need " + std::to_string(sized->bins) +
           " bins (gradient.bins is " + std::to_string(g.bins) +
           "); the training spectrum is not used as the baseline");
  return {sized->bins, sized->plan};
}

}  // namespace

std::size_t simultaneous_phase_bins(const GradientSpec& g, std::size_t links) {
  analysis::FrequencyPlanOptions o;
  o.bins = g.bins;
  o.min_bins_per_period = g.min_bins_per_period;
  const auto sized = analysis::smallest_frequency_plan(links, o, g.bins * kMaxBinsGrowth);
  return sized ? sized->bins : g.bins;
}

namespace {

// The training's noise at frequency k, averaged over the frequencies within
// kNoiseNeighbours of it: two chunks give one frequency two draws.
constexpr std::size_t kNoiseNeighbours = 4;

double training_noise_near(const analysis::TrainingResult& t, std::size_t k) {
  const std::size_t last = t.fft0_sigma.size() - 2;  // below Nyquist
  const std::size_t lo = k > kNoiseNeighbours ? k - kNoiseNeighbours : 1;
  const std::size_t hi = std::min(last, k + kNoiseNeighbours);
  double sum = 0;
  for (std::size_t j = lo; j <= hi; ++j) sum += t.fft0_sigma[j];
  return hi >= lo ? sum / static_cast<double>(hi - lo + 1) : 0.0;
}

// Per type, the amplitude a gradient of 1 needs at frequency k of an N-bin
// phase: the training's rule (d * sigma / min|W|) at the link's own
// frequency, not at the training's quietest one, whose sigma is the minimum
// of noisy estimates: with two chunks biased low enough to ask for steps so
// small that a fixed cost per delayed packet shows in the gradients. The
// training's quietest-frequency amplitudes when N grew past the training's.
std::vector<double> unit_amplitudes_at(const CampaignRun& run, std::size_t k, std::size_t bins) {
  const GradientSpec& g = run.spec.gradient;
  if (bins != g.bins) return run.kd.per_type_amplitude_ns;
  const double gain = analysis::square_wave_min_coefficient_magnitude(
      bins, k, static_cast<double>(bins) / static_cast<double>(k));
  std::vector<double> out;
  for (const analysis::TrainingResult& t : run.trainings) {
    out.push_back(g.delay_scale * training_noise_near(t, k) / gain);
  }
  return out;
}

std::vector<Wave> make_waves(CampaignRun& run, const std::vector<CampaignLink*>& links,
                             const SimultaneousPlan& plan) {
  std::vector<Wave> waves;
  const std::int64_t window = static_cast<std::int64_t>(plan.bins) * run.out.bin_width_ns;
  for (std::size_t i = 0; i < links.size(); ++i) {
    Wave w;
    w.link = links[i];
    w.k_d = static_cast<int>(plan.frequencies.k[i]);
    w.period_ns = window / w.k_d;
    w.unit_amplitude_ns = unit_amplitudes_at(run, plan.frequencies.k[i], plan.bins);
    const double largest =
        w.unit_amplitude_ns.empty()
            ? run.out.training_amplitude_ns
            : *std::max_element(w.unit_amplitude_ns.begin(), w.unit_amplitude_ns.end());
    w.amplitude_ns = std::clamp(largest, static_cast<double>(run.spec.gradient.min_amplitude_ns),
                                static_cast<double>(run.spec.gradient.max_amplitude_ns));
    waves.push_back(std::move(w));
  }
  return waves;
}

// Starts every wave's injection; fills each wave's anchor and id.
std::vector<std::unique_ptr<LinkInjections>> start_waves(CampaignRun& run,
                                                         std::vector<Wave>& waves) {
  std::vector<std::unique_ptr<LinkInjections>> active;
  for (Wave& w : waves) {
    const InjectionRequest request{w.link->spec,
                                   std::llround(w.amplitude_ns),
                                   w.period_ns,
                                   0,
                                   run.spec.gradient.lease_ns,
                                   run.next_seed() >> 1};
    active.push_back(std::make_unique<LinkInjections>(run.env.daemons, run.leases, run.env.clock,
                                                      *w.link, request));
    w.injected.anchor_ns = active.back()->anchor_ns();
    w.injected.id = active.back()->id();
  }
  return active;
}

// Stops every wave's injection; fills each wave's stats and delta-l.
void stop_waves(CampaignRun& run, std::vector<Wave>& waves,
                std::vector<std::unique_ptr<LinkInjections>>& active) {
  for (std::size_t i = 0; i < waves.size(); ++i) {
    Injected& inj = waves[i].injected;
    inj.stats = active[i]->stop();
    inj.ended_ns = run.now_ns();
    const auto d = delta_l_from_halves(inj.stats.high.count, inj.stats.high.mean_ns,
                                       inj.stats.low.count, inj.stats.low.mean_ns);
    inj.measured = d.has_value();
    inj.delta_l_ns = d.value_or(waves[i].amplitude_ns);
  }
}

// Runs the load over warm-up + window (+ tail) with every wave injected
// from the end of the warm-up; fills each wave's `injected`. Returns the
// load's result; the series starts at the first wave's anchor. Starting the
// injections slower than kEngineSlackNs (a node stalled by other work) would
// leave the window's end without load: the phase is then started again, a
// few times, before the run gives up.
loadgen::EngineResult inject_all(CampaignRun& run, std::vector<Wave>& waves, std::int64_t window_ns,
                                 std::int64_t tail_ns) {
  constexpr int kStartAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto [load, warm_ns] = start_warm_load(run, window_ns + tail_ns);
    std::vector<std::unique_ptr<LinkInjections>> active = start_waves(run, waves);
    const std::int64_t late_ns = waves.back().injected.anchor_ns - warm_ns;
    if (late_ns > kEngineSlackNs) {
      for (auto& a : active) a->stop();
      load->take();  // this load's samples are not used
      const std::string what = "starting " + std::to_string(waves.size()) + " injections took " +
                               common::format_duration_ns(late_ns) + ", longer than the " +
                               common::format_duration_ns(kEngineSlackNs) +
                               " the load waits for them";
      if (attempt == kStartAttempts) {
        throw std::runtime_error(what + ", in " + std::to_string(kStartAttempts) + " attempts");
      }
      run.out.warnings.push_back(what + "; the phase was started again");
      continue;
    }
    const std::int64_t start = waves.front().injected.anchor_ns;
    run.set_phase_start(start);
    run.wait_until(start + window_ns + tail_ns);
    stop_waves(run, waves, active);
    return load->take();
  }
}

// One link's gradients in a simultaneous phase: the wave's phase from the
// type where it stands out most, then every type's estimate at that phase,
// the other links' frequencies kept out of the noise estimate.
std::vector<TypeGradient> wave_gradients(CampaignRun& run, const Wave& w,
                                         const std::vector<analysis::LatencyRecord>& records,
                                         const GradientWindow& window, const SimultaneousPlan& plan,
                                         double& phase_bins) {
  const auto series = bin_types(run, *w.link, records, window);
  analysis::GradientOptions go;
  go.confidence = run.spec.gradient.confidence;
  go.exclude_bins = plan.frequencies.occupied;
  double best_snr = -1;
  for (std::size_t t = 0; t < series.size(); ++t) {
    const auto e = analysis::estimate_gradient_with_baseline_spectrum(
        series[t].mean_latency_ns, training_baseline(run, t, window), window.k_d,
        w.injected.delta_l_ns, go);
    if (e.detected && e.snr > best_snr) {
      best_snr = e.snr;
      go.phase_bins = e.phase_bins;
    }
  }
  if (!go.phase_bins) {
    go.phase_bins = static_cast<double>(w.injected.anchor_ns - window.start_ns) /
                    static_cast<double>(run.out.bin_width_ns);
  }
  phase_bins = *go.phase_bins;
  std::vector<TypeGradient> out;
  for (std::size_t t = 0; t < series.size(); ++t) {
    out.push_back(
        type_gradient(run, *w.link, t, series[t], records, window, go, w.injected.delta_l_ns));
  }
  return out;
}

// Per type, each link's interaction bias in this phase (how much the other
// links' mean delays move its gradient, analysis/interaction.hh), from the
// one response series every wave shares, each wave at the phase its
// gradients were read at.
void add_interaction_biases(CampaignRun& run, const std::vector<Wave>& waves,
                            const std::vector<double>& phase_bins,
                            const std::vector<analysis::LatencyRecord>& records,
                            const GradientWindow& window,
                            std::vector<std::vector<TypeGradient>>& gradients) {
  std::vector<analysis::WaveInSeries> in_series;
  for (std::size_t i = 0; i < waves.size(); ++i) {
    in_series.push_back({static_cast<double>(window.bins) / waves[i].k_d, phase_bins[i],
                         waves[i].injected.delta_l_ns});
  }
  const auto series = bin_types(run, *waves.front().link, records, window);
  for (std::size_t t = 0; t < series.size(); ++t) {
    const auto biases = analysis::interaction_biases(series[t].mean_latency_ns, in_series);
    if (!biases) continue;
    for (std::size_t i = 0; i < waves.size(); ++i) gradients[i][t].interaction = (*biases)[i];
  }
}

struct PhaseResult {
  std::int64_t phase_id = 0;
  std::vector<std::vector<TypeGradient>> gradients;  // per wave, per type
};

std::int64_t store_simultaneous_phase(CampaignRun& run, const std::vector<Wave>& waves,
                                      std::size_t bins, const loadgen::EngineResult& result,
                                      const std::vector<analysis::LatencyRecord>& records,
                                      std::int64_t window_ns) {
  const std::int64_t start = waves.front().injected.anchor_ns;
  db::Phase p;
  p.kind = db::PhaseKind::kSimultaneous;
  p.started_ns = start;
  std::int64_t ended = start;
  for (const Wave& w : waves) ended = std::max(ended, w.injected.ended_ns);
  p.ended_ns = ended;
  p.bin_width_ns = run.out.bin_width_ns;
  p.bins = static_cast<std::int64_t>(bins);
  const std::int64_t id = run.recorder.add_phase(p);
  for (const Wave& w : waves) {
    store_injection(run, id, *w.link, w.injected, w.amplitude_ns, w.period_ns);
  }
  run.recorder.add_samples(id, records, run.out.types, db_source(result), start, start + window_ns);
  return id;
}

PhaseResult simultaneous_phase(CampaignRun& run, std::vector<Wave>& waves,
                               const SimultaneousPlan& plan, const std::string& name) {
  const std::int64_t w = run.out.bin_width_ns;
  const std::int64_t window = static_cast<std::int64_t>(plan.bins) * w;
  run.set_phase(name, 1, 1, plan.bins, 0);
  const std::int64_t tail = std::min<std::int64_t>(2 * w, 200'000'000);
  std::vector<const CampaignLink*> links;
  for (const Wave& wave : waves) links.push_back(wave.link);
  MessageSampler sampler(run, links);
  const loadgen::EngineResult result = inject_all(run, waves, window, tail);
  const auto records = to_records(result);
  if (result.errors.total() > 0) {
    run.out.warnings.push_back(name + ": " + std::to_string(result.errors.total()) +
                               " requests failed (not in the samples)");
  }
  PhaseResult out;
  const std::int64_t start = waves.front().injected.anchor_ns;
  std::vector<double> phase_bins;
  for (const Wave& wave : waves) {
    if (!wave.injected.measured) {
      run.out.warnings.push_back(wave.link->label +
                                 ": the injector saw no packet in a half-cycle; the "
                                 "requested amplitude is used as delta-l");
    }
    phase_bins.push_back(0);
    out.gradients.push_back(wave_gradients(
        run, wave, records, GradientWindow{start, plan.bins, wave.k_d}, plan, phase_bins.back()));
    sampler.fill(out.gradients.size() - 1, out.gradients.back(), records, start, start + window);
  }
  add_interaction_biases(run, waves, phase_bins, records, GradientWindow{start, plan.bins, 1},
                         out.gradients);
  db::Transaction tx(run.recorder.store_database());
  out.phase_id = store_simultaneous_phase(run, waves, plan.bins, result, records, window);
  tx.commit();
  return out;
}

// Each link's amplitude for the second phase from the first phase's
// estimates (a clear gradient g needs the unit amplitude at its frequency / g),
// all scaled together into the perturbation budget. The unit amplitude stays
// the training's: sizing by the first phase's own noise raises every link
// to the slowed service's noise, and CIs that narrow miss the truth by the
// few-percent bias both schedules show on the demo (docs/method.md).
void adapt_amplitudes(CampaignRun& run, std::vector<Wave>& waves, const PhaseResult& first) {
  const GradientSpec& g = run.spec.gradient;
  std::vector<double> amplitudes;
  for (std::size_t i = 0; i < waves.size(); ++i) {
    std::vector<RoughGradient> rough;
    for (const TypeGradient& tg : first.gradients[i]) {
      RoughGradient r;
      r.value = tg.estimate.value;
      r.z = tg.estimate.standard_error > 0 ? tg.estimate.value / tg.estimate.standard_error : 0;
      r.clear = tg.estimate.detected && r.value > 0;
      rough.push_back(r);
    }
    amplitudes.push_back(adapted_amplitude_ns(waves[i].unit_amplitude_ns, rough,
                                              static_cast<double>(g.min_amplitude_ns),
                                              static_cast<double>(g.max_amplitude_ns)));
  }
  amplitudes =
      analysis::fit_amplitudes_to_budget(amplitudes, static_cast<double>(g.perturbation_budget_ns));
  for (std::size_t i = 0; i < waves.size(); ++i) waves[i].amplitude_ns = amplitudes[i];
}

// The largest ratio, over links and types, of a phase's noise at a link's
// frequency to the first phase's there: the second phase's amplitudes were
// sized for the first phase's noise, as a sequential active phase's are for
// the training's, so a phase much noisier than that met a noisy spell.
double worst_noise_ratio(const PhaseResult& phase, const PhaseResult& first) {
  double worst = 0;
  for (std::size_t i = 0; i < phase.gradients.size(); ++i) {
    for (std::size_t t = 0; t < phase.gradients[i].size(); ++t) {
      const double sized_for = first.gradients[i][t].estimate.noise_sigma;
      if (sized_for <= 0) continue;
      worst = std::max(worst, phase.gradients[i][t].estimate.noise_sigma / sized_for);
    }
  }
  return worst;
}

// The first phase at each link's unit amplitude (within the budget), the second
// at the adapted ones, then more at those while the last was much noisier
// than the first (`repeats`, `repeat_noise_ratio`, as a sequential active
// phase is repeated).
std::vector<PhaseResult> simultaneous_phases(CampaignRun& run, std::vector<Wave>& waves,
                                             const SimultaneousPlan& plan) {
  const GradientSpec& g = run.spec.gradient;
  std::vector<double> budget;
  for (const Wave& w : waves) budget.push_back(w.amplitude_ns);
  budget =
      analysis::fit_amplitudes_to_budget(budget, static_cast<double>(g.perturbation_budget_ns));
  for (std::size_t i = 0; i < waves.size(); ++i) {
    waves[i].amplitude_ns = waves[i].first_amplitude_ns = budget[i];
  }
  std::vector<PhaseResult> phases;
  phases.push_back(simultaneous_phase(run, waves, plan, "simultaneous 1/2"));
  adapt_amplitudes(run, waves, phases.front());
  phases.push_back(simultaneous_phase(run, waves, plan, "simultaneous 2/2"));
  for (std::size_t extra = 0; extra < g.repeats; ++extra) {
    const double ratio = worst_noise_ratio(phases.back(), phases.front());
    if (g.repeat_noise_ratio > 0 && ratio <= g.repeat_noise_ratio) break;  // 0: always
    run.note("simultaneous: the last phase was " + format_ratio(ratio) +
             "x as noisy as the first at some link; measuring every link again");
    extend_estimate_for_repeat(run, plan.bins);
    phases.push_back(
        simultaneous_phase(run, waves, plan, "simultaneous " + std::to_string(phases.size() + 1)));
  }
  return phases;
}

void warn_if_it_depends_on_other_links(CampaignRun& run, const std::string& label,
                                       const TypeGradient& tg) {
  if (!tg.depends_on_other_links) return;
  const analysis::InteractionBias& b = *tg.interaction;
  run.out.warnings.push_back(
      label + " " + tg.type + ": the other links' delays move this gradient by " +
      (b.value >= 0 ? "+" : "") + common::format_number(b.value, 3) + " (se " +
      common::format_number(b.standard_error, 3) +
      ", more than its CI allows): it was read with them at their mean delay, not at the "
      "service's own operating point; measure it with schedule = \"sequential\"");
}

}  // namespace

void measure_links_simultaneously(CampaignRun& run, const std::vector<CampaignLink*>& links) {
  const SimultaneousPlan plan = plan_waves(run, links.size());
  std::vector<Wave> waves = make_waves(run, links, plan);
  std::string ks;
  for (const Wave& w : waves)
    ks += (ks.empty() ? "" : ", ") + w.link->label + " k=" + std::to_string(w.k_d);
  run.note("simultaneous: " + std::to_string(waves.size()) + " links over " +
           std::to_string(plan.bins) + " bins: " + ks);
  const std::vector<PhaseResult> phases = simultaneous_phases(run, waves, plan);
  db::Transaction tx(run.recorder.store_database());
  for (std::size_t i = 0; i < waves.size(); ++i) {
    LinkMeasurement m;
    m.label = waves[i].link->label;
    m.training_amplitude_ns = waves[i].first_amplitude_ns;
    m.amplitude_ns = waves[i].amplitude_ns;
    m.delta_l_ns = waves[i].injected.delta_l_ns;
    m.delta_l_measured = waves[i].injected.measured;
    m.k_d = waves[i].k_d;
    m.bins = plan.bins;
    m.simultaneous = true;
    for (std::size_t t = 0; t < run.out.types.size(); ++t) {
      std::vector<TypeGradient> per_phase;
      for (const PhaseResult& p : phases) per_phase.push_back(p.gradients[i][t]);
      m.gradients.push_back(combine_type_gradients(per_phase));
      warn_if_it_depends_on_other_links(run, m.label, m.gradients.back());
    }
    store_gradients(run, *waves[i].link, m, phases.back().phase_id);
    run.out.measurements.push_back(std::move(m));
  }
  tx.commit();
}

}  // namespace nabla::campaign
