// The measurement of one link: the adaptive sub-phase, then the active
// phase (repeated while much noisier than the training); see phases.hh.
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "load.hh"
#include "message_sampler.hh"
#include "nabla/common/units.hh"
#include "phase_store.hh"
#include "phases.hh"

namespace nabla::campaign {

std::string format_ratio(double r) {
  const double rounded = std::round(r * 10.0) / 10.0;
  std::string s = std::to_string(rounded);
  return s.substr(0, s.find('.') + 2);
}

namespace {

// A wave's actual amplitude is the difference of its halves.
void set_delta_l(Injected& inj, double amplitude_ns) {
  const HalfStats& high = inj.stats.high;
  const auto d =
      delta_l_from_halves(high.count, high.mean_ns, inj.stats.low.count, inj.stats.low.mean_ns);
  inj.measured = d.has_value();
  inj.delta_l_ns = d.value_or(amplitude_ns);
}

}  // namespace

loadgen::EngineResult inject_phase(CampaignRun& run, const CampaignLink& l, double amplitude_ns,
                                   int cycles, std::int64_t window_ns, std::int64_t tail_ns,
                                   Injected& inj) {
  // The load runs kEngineSlackNs past the window: an inject.start slower
  // than that (a node stalled by other work) would leave the window's end
  // without load. The phase is then started again, a few times, before the
  // run gives up.
  constexpr int kStartAttempts = 3;
  inj.cycles = cycles;
  for (int attempt = 1;; ++attempt) {
    auto [load, warm_ns] = start_warm_load(run, window_ns + tail_ns);
    InjectionRequest request{l.spec,
                             std::llround(amplitude_ns),
                             inj.period_ns > 0 ? inj.period_ns : run.out.period_ns,
                             cycles,
                             run.spec.gradient.lease_ns,
                             run.next_seed() >> 1,
                             run.spec.node_by_name(l.src_node)->netns,
                             std::nullopt};
    LinkInjections a(run.env.daemons, run.leases, run.env.clock, l, request);
    inj.anchor_ns = a.anchor_ns();
    inj.id = a.id();
    const std::int64_t late_ns = inj.anchor_ns - warm_ns;
    if (late_ns > kEngineSlackNs) {
      a.stop();
      load->take();  // this load's samples are not used
      const std::string what = "node " + l.src_node + ": inject.start took " +
                               common::format_duration_ns(late_ns) + ", longer than the " +
                               common::format_duration_ns(kEngineSlackNs) +
                               " the load waits for it";
      if (attempt == kStartAttempts) {
        throw std::runtime_error(what + ", in " + std::to_string(kStartAttempts) + " attempts");
      }
      run.out.warnings.push_back(l.label + ": " + what + "; the phase was started again");
      continue;
    }
    run.set_phase_start(inj.anchor_ns);
    run.wait_until(inj.anchor_ns + window_ns + tail_ns);
    inj.stats = a.stop();
    inj.ended_ns = run.now_ns();
    set_delta_l(inj, amplitude_ns);
    return load->take();
  }
}

namespace {

// Adaptive sub-phase: one cycle at the training amplitude; the rough
// gradients give the measurement amplitude.
void adaptive_phase(CampaignRun& run, const CampaignLink& l, LinkMeasurement& m, std::size_t index,
                    std::size_t count) {
  const GradientSpec& g = run.spec.gradient;
  const std::int64_t period_bins =
      run.out.period_ns / std::max<std::int64_t>(run.out.bin_width_ns, 1);
  run.set_phase("adaptive", index, count, static_cast<std::size_t>(period_bins), 0);
  Injected a;
  const loadgen::EngineResult ra =
      inject_phase(run, l, m.training_amplitude_ns, 1, run.out.period_ns, kSliceNs, a);
  const auto rec_a = to_records(ra);
  for (std::size_t t = 0; t < run.out.types.size(); ++t) {
    m.rough.push_back(rough_gradient(rec_a, static_cast<std::int32_t>(t), a.anchor_ns,
                                     run.out.period_ns, a.delta_l_ns));
  }
  m.amplitude_ns = adapted_amplitude_ns(run.kd.per_type_amplitude_ns, m.rough,
                                        static_cast<double>(g.min_amplitude_ns),
                                        static_cast<double>(g.max_amplitude_ns));
  db::Transaction tx(run.recorder.store_database());
  store_injected_phase(run, db::PhaseKind::kAdaptive, l, a, m.training_amplitude_ns, period_bins,
                       ra, rec_a, run.out.period_ns);
  tx.commit();
}

struct ActiveAttempt {
  std::size_t number = 1;
  std::int64_t phase_id = 0;
  double delta_l_ns = 0;
  bool delta_l_measured = true;
  std::vector<TypeGradient> gradients;  // one per type, this phase alone
  double worst_noise_ratio = 0;         // max over types of sigma / training sigma
  std::vector<std::string> noise_warnings;
  std::string damage;  // why the phase cannot be trusted; empty when it can
};

// "12 timeouts, 3 read errors": the failed requests by kind.
std::string failure_kinds(const loadgen::ErrorCounts& e) {
  std::string out;
  auto add = [&](std::uint64_t n, const char* what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(e.timeout, "timeouts");
  add(e.connect, "connect errors");
  add(e.read, "read errors");
  add(e.write, "write errors");
  add(e.protocol, "protocol errors");
  add(e.server, "server errors");
  return out;
}

// The share of delta-l that the longest-held packet alone adds to the high
// half's mean, 0 when the stats have no maximum or no high half.
double longest_hold_share(const InjectionStats& stats, double amplitude_ns) {
  if (!stats.actual_max_ns || stats.high.count == 0) return 0;
  return (*stats.actual_max_ns - amplitude_ns) / static_cast<double>(stats.high.count) /
         amplitude_ns;
}

// True when the injector held a packet so far past the wave (more than
// kStallNs beyond the amplitude: no wave asks that, a stalled node does)
// that it alone moves delta-l by more than 1%.
bool held_through_a_stall(const InjectionStats& stats, double amplitude_ns) {
  constexpr double kStallNs = 250e6;
  return stats.actual_max_ns && *stats.actual_max_ns - amplitude_ns > kStallNs &&
         longest_hold_share(stats, amplitude_ns) > 0.01;
}

// A phase whose requests failed (more than 1 in 1000) or whose injector
// held a packet longer than a request may take, or through a stall
// (held_through_a_stall), measured something else than the wave: the
// requests those packets carried failed or came back outside the wave's
// pattern while the packets are in the injector's delta-l, which then reads
// high and the gradient low. Empty when none of it happened.
std::string phase_damage(const loadgen::EngineResult& rr, const InjectionStats& stats,
                         double amplitude_ns, std::int64_t timeout_ns) {
  std::string why;
  const std::uint64_t failed = rr.errors.total();
  if (failed * 1000 > rr.sent) {
    why = std::to_string(failed) + " of " + std::to_string(rr.sent) + " requests failed (" +
          failure_kinds(rr.errors) + ")";
  }
  if (!stats.actual_max_ns) return why;
  const double held_ns = *stats.actual_max_ns;
  const std::string held = "a packet was held " + common::format_duration_ns(std::llround(held_ns));
  if (held_ns > static_cast<double>(timeout_ns)) {
    why += (why.empty() ? "" : " and ") + held + ", longer than the request timeout " +
           common::format_duration_ns(timeout_ns);
  } else if (held_through_a_stall(stats, amplitude_ns)) {
    why += (why.empty() ? "" : " and ") + held + ", enough alone to move delta-l by " +
           common::format_number(100 * longest_hold_share(stats, amplitude_ns), 2) + "%";
  }
  return why;
}

}  // namespace

WarmLoad start_warm_load(CampaignRun& run, std::int64_t measured_ns) {
  const std::int64_t warmup = run.spec.workload.warmup_ns;
  const std::int64_t t0 = run.now_ns() + kEngineLeadNs;
  auto load =
      run.env.load.start(engine_config(run.spec.workload, warmup + measured_ns + kEngineSlackNs,
                                       run.next_seed(), run.tls_sessions),
                         t0);
  run.set_phase_start(t0 + warmup);
  run.wait_until(t0 + warmup);
  return {std::move(load), t0 + warmup};
}

std::vector<analysis::BinnedSeries> bin_types(CampaignRun& run, const CampaignLink& l,
                                              const std::vector<analysis::LatencyRecord>& records,
                                              const GradientWindow& window) {
  std::vector<analysis::BinnedSeries> series;
  for (std::size_t t = 0; t < run.out.types.size(); ++t) {
    try {
      series.push_back(analysis::bin_latencies(of_type(records, static_cast<std::int32_t>(t)),
                                               window.start_ns, run.out.bin_width_ns, window.bins));
    } catch (const std::invalid_argument&) {
      throw std::runtime_error(l.label + ": no " + run.out.types[t] +
                               " request completed during the active phase");
    }
  }
  return series;
}

std::span<const std::complex<double>> training_baseline(const CampaignRun& run, std::size_t t,
                                                        const GradientWindow& window) {
  if (window.bins != run.spec.gradient.bins) return {};
  if (run.spec.gradient.schedule == Schedule::kSimultaneous) return {};
  return run.trainings[t].fft0_mean;
}

TypeGradient type_gradient(CampaignRun& run, const CampaignLink& l, std::size_t t,
                           const analysis::BinnedSeries& series,
                           const std::vector<analysis::LatencyRecord>& records,
                           const GradientWindow& window, const analysis::GradientOptions& go,
                           double delta_l_ns) {
  const std::int64_t end_ns =
      window.start_ns + static_cast<std::int64_t>(window.bins) * run.out.bin_width_ns;
  const auto type = static_cast<std::int32_t>(t);
  TypeGradient tg;
  tg.type = run.out.types[t];
  tg.estimate = analysis::estimate_gradient_with_baseline_spectrum(
      series.mean_latency_ns, training_baseline(run, t, window), window.k_d, delta_l_ns, go);
  tg.actual_amplitude_ns = delta_l_ns;
  tg.reliable = series.reliable;
  tg.perturbation_ns = window_stats(records, type, window.start_ns, end_ns).mean_latency_ns -
                       run.out.training_mean_ns[t];
  const double ratio = completion_ratio(records, type, window.start_ns, end_ns);
  const double trained = run.out.training_completion[t];
  tg.throughput_change = trained > 0 ? ratio / trained - 1.0 : 0.0;
  if (auto it = run.spec.truth.find(l.label); it != run.spec.truth.end()) {
    if (auto jt = it->second.find(tg.type); jt != it->second.end()) tg.truth = jt->second;
  }
  if (!tg.reliable) {
    run.out.warnings.push_back(l.label + " " + tg.type + ": " + std::to_string(series.filled_bins) +
                               " empty bins; the gradient may be low");
  }
  return tg;
}

namespace {

// The wave's phase in bins: estimated (phase unknown) on every type, that of
// the type with the highest SNR if any detected the wave, else 0. Notes the
// types whose noise much exceeded the training's.
double wave_phase_bins(CampaignRun& run, const CampaignLink& l,
                       const std::vector<analysis::BinnedSeries>& series,
                       const analysis::GradientOptions& go, ActiveAttempt& out) {
  std::vector<analysis::GradientEstimate> first;
  for (std::size_t t = 0; t < series.size(); ++t) {
    first.push_back(analysis::estimate_gradient_with_baseline_spectrum(
        series[t].mean_latency_ns, run.trainings[t].fft0_mean, run.kd.k_d, out.delta_l_ns, go));
  }
  std::optional<std::size_t> best;
  for (std::size_t t = 0; t < first.size(); ++t) {
    if (first[t].detected && (!best || first[t].snr > first[*best].snr)) best = t;
  }
  // The amplitude was sized for the training's noise; say so when the
  // active phase was much noisier (a busy machine), since the CI widens.
  for (std::size_t t = 0; t < first.size(); ++t) {
    const double trained = run.trainings[t].fft0_sigma.at(static_cast<std::size_t>(run.kd.k_d));
    if (trained <= 0) continue;
    const double ratio = first[t].noise_sigma / trained;
    out.worst_noise_ratio = std::max(out.worst_noise_ratio, ratio);
    if (ratio > 2.0) {
      out.noise_warnings.push_back(l.label + " " + run.out.types[t] +
                                   ": noise during the active phase " + format_ratio(ratio) +
                                   "x the training's; the CI is wider than planned");
    }
  }
  return best ? first[*best].phase_bins : 0.0;
}

// One active phase at amplitude_ns: injects, bins each type, estimates
// the gradients (phase from the type with the highest SNR) and stores the
// phase with its injection and samples.
ActiveAttempt active_attempt(CampaignRun& run, const CampaignLink& l, double amplitude_ns,
                             std::size_t index, std::size_t count, std::size_t number) {
  const GradientSpec& g = run.spec.gradient;
  const std::int64_t w = run.out.bin_width_ns;
  const std::int64_t window = static_cast<std::int64_t>(g.bins) * w;
  run.set_phase("active", index, count, g.bins, 0);
  ActiveAttempt out;
  out.number = number;
  Injected act;
  const std::int64_t tail = std::min<std::int64_t>(2 * w, 200'000'000);
  MessageSampler sampler(run, {&l});
  const loadgen::EngineResult rr = inject_phase(run, l, amplitude_ns, 0, window, tail, act);
  out.delta_l_ns = act.delta_l_ns;
  out.delta_l_measured = act.measured;
  if (!act.measured) {
    run.out.warnings.push_back(l.label +
                               ": the injector saw no packet in a half-cycle; the "
                               "requested amplitude is used as delta-l");
  }
  const auto records = to_records(rr);
  if (rr.errors.total() > 0) {
    run.out.warnings.push_back(l.label + ": " + std::to_string(rr.errors.total()) +
                               " requests failed during the active phase (" +
                               failure_kinds(rr.errors) + "; not in the samples)");
  }
  out.damage = phase_damage(rr, act.stats, amplitude_ns, run.spec.workload.timeout_ns);
  analysis::GradientOptions go;
  go.confidence = g.confidence;
  const GradientWindow gw{act.anchor_ns, g.bins, run.kd.k_d};
  const auto series = bin_types(run, l, records, gw);
  go.phase_bins = wave_phase_bins(run, l, series, go, out);
  for (std::size_t t = 0; t < run.out.types.size(); ++t) {
    out.gradients.push_back(type_gradient(run, l, t, series[t], records, gw, go, out.delta_l_ns));
  }
  sampler.fill(0, out.gradients, records, gw.start_ns, gw.start_ns + window);
  db::Transaction tx(run.recorder.store_database());
  out.phase_id = store_injected_phase(run, db::PhaseKind::kActive, l, act, amplitude_ns,
                                      static_cast<std::int64_t>(g.bins), rr, records, window);
  tx.commit();
  return out;
}

// Type t's gradient in each attempt.
std::vector<TypeGradient> type_phases(const std::vector<ActiveAttempt>& attempts, std::size_t t) {
  std::vector<TypeGradient> phases;
  phases.reserve(attempts.size());
  for (const ActiveAttempt& a : attempts) phases.push_back(a.gradients[t]);
  return phases;
}

// The widest CI half-width of the attempts combined, over the types, as a
// fraction of max(|gradient|, 1); and that type.
std::pair<double, std::string> widest_relative_half_width(
    const std::vector<ActiveAttempt>& attempts, std::size_t types) {
  std::pair<double, std::string> widest{0.0, ""};
  for (std::size_t t = 0; t < types; ++t) {
    const std::vector<TypeGradient> phases = type_phases(attempts, t);
    const analysis::GradientEstimate e = combine_type_gradients(phases).estimate;
    const double relative = (e.ci_high - e.ci_low) / 2 / std::max(std::abs(e.value), 1.0);
    if (relative > widest.first) widest = {relative, phases.back().type};
  }
  return widest;
}

// Leaves the damaged attempts out when an undamaged one is left (their
// bias is not in their variance, so no weight makes them right), each with
// a note; when every attempt was damaged, keeps them with a warning.
void drop_damaged(CampaignRun& run, const CampaignLink& l, std::vector<ActiveAttempt>& attempts) {
  auto damaged = [](const ActiveAttempt& a) { return !a.damage.empty(); };
  const auto kept = std::count_if(attempts.begin(), attempts.end(),
                                  [&](const ActiveAttempt& a) { return !damaged(a); });
  if (kept == static_cast<std::ptrdiff_t>(attempts.size())) return;
  if (kept == 0) {
    run.out.warnings.push_back(l.label + ": every active phase was damaged (" +
                               attempts.back().damage + "); its gradients may be biased");
    return;
  }
  for (const ActiveAttempt& a : attempts) {
    if (!damaged(a)) continue;
    run.note(l.label + ": active phase " + std::to_string(a.number) + " of " +
             std::to_string(attempts.size()) + " left out: " + a.damage);
  }
  std::erase_if(attempts, damaged);
}

// The active phase, measured again (up to `repeats` times) while it was
// damaged (phase_damage), much noisier than the training, or while a CI is
// wider than `precision` asks.
std::vector<ActiveAttempt> active_phases(CampaignRun& run, const CampaignLink& l,
                                         double amplitude_ns, std::size_t index,
                                         std::size_t count) {
  const GradientSpec& g = run.spec.gradient;
  std::vector<ActiveAttempt> attempts;
  for (;;) {
    attempts.push_back(active_attempt(run, l, amplitude_ns, index, count, attempts.size() + 1));
    if (attempts.size() > g.repeats) break;
    const double ratio = attempts.back().worst_noise_ratio;
    const auto [width, type] = g.precision > 0
                                   ? widest_relative_half_width(attempts, run.out.types.size())
                                   : std::pair<double, std::string>{0.0, ""};
    if (!attempts.back().damage.empty()) {
      run.note(l.label + ": " + attempts.back().damage +
               " in the active phase; measuring it again");
    } else if (ratio > g.repeat_noise_ratio) {
      run.note(l.label + ": the active phase was " + format_ratio(ratio) +
               "x as noisy as the training; measuring it again");
    } else if (width > g.precision) {
      run.note(l.label + " " + type + ": CI half-width " + common::format_number(width, 2) +
               " of max(|gradient|, 1), more than the precision " +
               common::format_number(g.precision, 2) + " asks; measuring it again");
    } else {
      break;
    }
    // budget_ns stays the up-front estimate; the time left follows.
    extend_estimate_for_repeat(run, g.bins);
  }
  for (const ActiveAttempt& a : attempts) {
    for (const std::string& w : a.noise_warnings) {
      run.out.warnings.push_back(attempts.size() > 1
                                     ? w + " (active phase " + std::to_string(a.number) + " of " +
                                           std::to_string(attempts.size()) + ")"
                                     : w);
    }
  }
  drop_damaged(run, l, attempts);
  return attempts;
}

// Type t's gradient over every attempt (combine_type_gradients), with each
// phase's own estimate in the log when there was more than one.
TypeGradient combine_attempts(CampaignRun& run, const CampaignLink& l,
                              const std::vector<ActiveAttempt>& attempts, std::size_t t) {
  const std::vector<TypeGradient> phases = type_phases(attempts, t);
  const TypeGradient tg = combine_type_gradients(phases);
  if (attempts.size() == 1) return tg;
  // Each phase's own estimate next to the combination, so a user can see
  // whether the phases agreed.
  std::string each;
  for (const TypeGradient& x : phases) {
    each += (each.empty() ? "" : ", ") + common::format_number(x.estimate.value, 3) + " ± " +
            common::format_number(x.estimate.standard_error, 2);
  }
  run.note(l.label + " " + tg.type + ": phases " + each + " -> " +
           common::format_number(tg.estimate.value, 3) + " ± " +
           common::format_number(tg.estimate.standard_error, 2) + " (value ± standard error)");
  return tg;
}

}  // namespace

namespace {

// The interaction bias of an inverse-variance combination of phases: the
// same weights as the gradients'; none unless every phase has one.
std::optional<analysis::InteractionBias> combine_interactions(
    const std::vector<TypeGradient>& phases) {
  double weight = 0, value = 0, variance = 0;
  for (const TypeGradient& x : phases) {
    if (!x.interaction) return std::nullopt;
    const double w = inverse_variance_weight(x.estimate.standard_error);
    weight += w;
    value += w * x.interaction->value;
    variance += w * w * x.interaction->standard_error * x.interaction->standard_error;
  }
  if (phases.empty() || weight <= 0) {
    return phases.size() == 1 ? phases.front().interaction : std::nullopt;
  }
  return analysis::InteractionBias{value / weight, std::sqrt(variance) / weight};
}

}  // namespace

bool depends_on_other_links(const TypeGradient& tg) {
  if (!tg.interaction) return false;
  const double half_width = (tg.estimate.ci_high - tg.estimate.ci_low) / 2.0;
  const double bias = std::abs(tg.interaction->value);
  return bias > half_width && bias > 2.0 * tg.interaction->standard_error;
}

TypeGradient combine_type_gradients(const std::vector<TypeGradient>& phases) {
  std::vector<analysis::GradientEstimate> estimates;
  std::vector<double> errors, amplitudes, perturbations, throughputs;
  std::vector<std::optional<MessagesPerTxn>> messages;
  TypeGradient tg = phases.back();
  for (const TypeGradient& x : phases) {
    messages.push_back(x.messages);
    estimates.push_back(x.estimate);
    errors.push_back(x.estimate.standard_error);
    amplitudes.push_back(x.actual_amplitude_ns);
    perturbations.push_back(x.perturbation_ns);
    throughputs.push_back(x.throughput_change);
    tg.reliable = tg.reliable && x.reliable;
  }
  tg.estimate = combine_estimates(estimates);
  tg.messages = combine_messages(messages);
  tg.interaction = combine_interactions(phases);
  tg.depends_on_other_links = depends_on_other_links(tg);
  if (phases.size() == 1) return tg;
  tg.actual_amplitude_ns =
      inverse_variance_mean(amplitudes, errors).value_or(tg.actual_amplitude_ns);
  tg.perturbation_ns = inverse_variance_mean(perturbations, errors).value_or(tg.perturbation_ns);
  tg.throughput_change = inverse_variance_mean(throughputs, errors).value_or(tg.throughput_change);
  return tg;
}

namespace {

// The link's gradients at one amplitude: its active phase(s) there, each
// type combined over them.
SweepAmplitude measure_at(CampaignRun& run, const CampaignLink& l, double amplitude_ns,
                          std::size_t index, std::size_t count, LinkMeasurement& m) {
  const std::vector<ActiveAttempt> attempts = active_phases(run, l, amplitude_ns, index, count);
  const ActiveAttempt& last = attempts.back();
  m.delta_l_ns = last.delta_l_ns;
  m.delta_l_measured = last.delta_l_measured;
  SweepAmplitude at;
  at.requested_ns = std::llround(amplitude_ns);
  at.phase_id = last.phase_id;
  for (std::size_t t = 0; t < run.out.types.size(); ++t) {
    at.gradients.push_back(combine_attempts(run, l, attempts, t));
  }
  return at;
}

// [gradient] amplitudes: the link at every amplitude, a linearity verdict
// per type, and the headline gradients from the amplitude nearest the
// adaptive one (log scale).
std::int64_t measure_sweep(CampaignRun& run, const CampaignLink& l, LinkMeasurement& m,
                           std::size_t index, std::size_t count) {
  const std::vector<std::int64_t>& amplitudes = run.spec.gradient.amplitudes_ns;
  std::size_t headline = 0;
  std::vector<std::pair<double, bool>> delta_l;
  for (std::size_t i = 0; i < amplitudes.size(); ++i) {
    m.sweep.push_back(measure_at(run, l, static_cast<double>(amplitudes[i]), index, count, m));
    delta_l.emplace_back(m.delta_l_ns, m.delta_l_measured);
    const auto distance = [&](std::size_t k) {
      return std::abs(std::log(static_cast<double>(amplitudes[k]) / m.amplitude_ns));
    };
    if (distance(i) < distance(headline)) headline = i;
  }
  m.amplitude_ns = static_cast<double>(amplitudes[headline]);
  std::tie(m.delta_l_ns, m.delta_l_measured) = delta_l[headline];
  m.gradients = m.sweep[headline].gradients;
  for (std::size_t t = 0; t < run.out.types.size(); ++t) {
    std::vector<analysis::SweepPoint> points;
    for (const SweepAmplitude& a : m.sweep) {
      const analysis::GradientEstimate& e = a.gradients[t].estimate;
      points.push_back({static_cast<double>(a.requested_ns), e.value, e.ci_low, e.ci_high});
    }
    m.linearity.push_back(analysis::linearity_verdict(points));
    run.note(l.label + " " + run.out.types[t] + ": " + analysis::describe(m.linearity.back()));
  }
  return m.sweep[headline].phase_id;
}

}  // namespace

void measure_link(CampaignRun& run, CampaignLink& l, std::size_t index, std::size_t count) {
  LinkMeasurement m;
  m.label = l.label;
  m.training_amplitude_ns = run.out.training_amplitude_ns;
  m.k_d = run.kd.k_d;
  m.bins = run.spec.gradient.bins;
  run.note("link " + std::to_string(index) + "/" + std::to_string(count) + ": " + l.label +
           " (inject on " + l.src_node + ": " + l.spec + ")");
  adaptive_phase(run, l, m, index, count);
  std::int64_t phase_id = 0;
  if (run.spec.gradient.amplitudes_ns.empty()) {
    SweepAmplitude at = measure_at(run, l, m.amplitude_ns, index, count, m);
    m.gradients = std::move(at.gradients);
    phase_id = at.phase_id;
  } else {
    phase_id = measure_sweep(run, l, m, index, count);
  }
  if (run.spec.gradient.verify) verify_step(run, l, m, index, count);
  // One gradient row per type, on the (headline's) last active phase, with
  // the sweep's amplitudes beside it; every attempt's phase, injection and
  // samples are stored under their own phase rows.
  db::Transaction tx(run.recorder.store_database());
  store_sweep(run, m, store_gradients(run, l, m, phase_id));
  tx.commit();
  run.out.measurements.push_back(std::move(m));
}

}  // namespace nabla::campaign
