// Per link: the binned response-time series with the injected square wave,
// its spectrum against the training's noise band, and the gradients with
// their CIs and the truth.
//
// The database stores every sample of each phase's analysis window and the
// phase's bin width and N, so the series are binned again here exactly as
// the campaign binned them (analysis::bin_latencies over [phase start,
// start + N * width)), and the spectra recomputed with analysis::rfft; no
// series is stored twice.
#include <cmath>
#include <complex>
#include <map>
#include <stdexcept>

#include "charts.hh"
#include "nabla/analysis/binning.hh"
#include "nabla/analysis/fft.hh"
#include "nabla/analysis/training.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

struct PhaseSeries {
  std::map<std::string, analysis::BinnedSeries> by_type;
  std::string note;  // why there are none, when there are none
};

PhaseSeries bin_phase(db::Database& db, const StoredRun& run, const db::PhaseRow& phase,
                      std::size_t bins) {
  PhaseSeries out;
  if (!phase.phase.bin_width_ns || bins == 0) {
    out.note = "the phase stored no bin width or bin count";
    return out;
  }
  std::map<std::int64_t, std::vector<analysis::LatencyRecord>> records;
  for (const db::Sample& s : db::phase_samples(db, phase.id)) {
    records[s.type_id].push_back({s.send_ns, s.latency_ns, static_cast<std::int32_t>(s.type_id)});
  }
  if (records.empty()) out.note = "the phase stored no samples";
  for (const auto& [type_id, rs] : records) {
    const auto name = run.type_names.find(type_id);
    try {
      out.by_type[name == run.type_names.end() ? std::to_string(type_id) : name->second] =
          analysis::bin_latencies(rs, phase.phase.started_ns, *phase.phase.bin_width_ns, bins);
    } catch (const std::invalid_argument& e) {
      out.note = e.what();
    }
  }
  return out;
}

// The training phase's noise band per type: |FFT0 mean| +- 2 sigma per bin.
std::map<std::string, analysis::TrainingResult> training_spectra(db::Database& db,
                                                                 const StoredRun& run) {
  std::map<std::string, analysis::TrainingResult> out;
  for (const db::PhaseRow& p : run.phases) {
    if (p.phase.kind != db::PhaseKind::kTraining || !p.phase.bins || !p.phase.chunks) continue;
    const auto n = static_cast<std::size_t>(*p.phase.bins);
    const auto m = static_cast<std::size_t>(*p.phase.chunks);
    const PhaseSeries series = bin_phase(db, run, p, n * m);
    for (const auto& [type, s] : series.by_type) {
      try {
        out[type] = analysis::train(s.mean_latency_ns, s.bin_width_ns, {n, m});
      } catch (const std::invalid_argument&) {
        // A type too sparse to train on gets no band; its spectrum still shows.
      }
    }
  }
  return out;
}

const db::PhaseRow* measured_phase(const StoredRun& run, const db::LinkRow& link) {
  for (const db::GradientRow& g : run.gradients) {
    if (g.link.id != link.id || !g.gradient.phase_id) continue;
    for (const db::PhaseRow& p : run.phases) {
      if (p.id == *g.gradient.phase_id) return &p;
    }
  }
  const db::PhaseRow* last = nullptr;
  for (const db::PhaseRow& p : run.phases) {
    if (p.phase.link_id == link.id && p.phase.kind == db::PhaseKind::kActive) last = &p;
  }
  return last;
}

// The link's injection in the phase: a simultaneous phase holds one per
// link, each with its own period, so the link decides which wave is drawn.
const db::InjectionRow* phase_injection(const StoredRun& run, std::int64_t phase_id,
                                        const db::LinkRow& link) {
  const db::InjectionRow* any = nullptr;
  for (const db::InjectionRow& i : run.injections) {
    if (i.injection.phase_id != phase_id) continue;
    if (i.injection.link_id == link.id) return &i;
    if (any == nullptr) any = &i;
  }
  return any;
}

// The frequency the link's gradients were read at: the phase's, or in a
// simultaneous phase (which has none of its own) the link's gradient rows'.
int link_k_d(const StoredRun& run, const db::PhaseRow& phase, const db::LinkRow& link) {
  if (phase.phase.k_d) return static_cast<int>(*phase.phase.k_d);
  for (const db::GradientRow& g : run.gradients) {
    if (g.link.id == link.id && g.gradient.phase_id == phase.id && g.gradient.k_d) {
      return static_cast<int>(*g.gradient.k_d);
    }
  }
  return 0;
}

// Step points of a square wave of `amplitude_ns` from the injection's start,
// high first (the injector's rule), over [0, window) of the phase.
void add_wave(json& rows, const db::Injection& inj, std::int64_t phase_start_ns, double window_ns,
              const std::string& which, double amplitude_ns) {
  if (!inj.period_ns || *inj.period_ns <= 0) return;
  const double period = static_cast<double>(*inj.period_ns);
  const double high = inj.duty.value_or(0.5) * period;
  double t = static_cast<double>(inj.started_ns - phase_start_ns);
  while (t + period <= 0) t += period;
  for (; t < window_ns; t += period) {
    rows.push_back(
        {{"t_ms", ms(std::max(t, 0.0))}, {"delay_ms", ms(amplitude_ns)}, {"wave", which}});
    rows.push_back({{"t_ms", ms(std::max(t + high, 0.0))}, {"delay_ms", 0.0}, {"wave", which}});
  }
  rows.push_back({{"t_ms", ms(window_ns)}, {"delay_ms", 0.0}, {"wave", which}});
}

json series_chart(const PhaseSeries& series, const db::InjectionRow* inj,
                  const db::PhaseRow& phase) {
  json rows = json::array();
  double window_ns = 0;
  for (const auto& [type, s] : series.by_type) {
    window_ns = static_cast<double>(s.bin_width_ns) * static_cast<double>(s.mean_latency_ns.size());
    for (std::size_t i = 0; i < s.mean_latency_ns.size(); ++i) {
      rows.push_back({{"type", type},
                      {"t_ms", ms(static_cast<double>(i) * static_cast<double>(s.bin_width_ns))},
                      {"latency_ms", ms(s.mean_latency_ns[i])}});
    }
  }
  json wave = json::array();
  if (inj) {
    add_wave(wave, inj->injection, phase.phase.started_ns, window_ns, "requested",
             static_cast<double>(inj->injection.requested_delay_ns));
    if (inj->injection.actual_mean_ns) {
      add_wave(wave, inj->injection, phase.phase.started_ns, window_ns, "actual (Δl)",
               *inj->injection.actual_mean_ns);
    }
  }
  json latency{{"data", {{"values", rows}}},
               {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"strokeWidth", 1}}},
               {"encoding",
                {{"x", channel("t_ms", "quantitative", "time in the phase (ms)")},
                 {"y", channel("latency_ms", "quantitative", "mean response time per bin (ms)")},
                 {"color", channel("type", "nominal", "type")},
                 {"tooltip",
                  json::array({channel("type", "nominal", "type"), number_channel("t_ms", "t (ms)"),
                               number_channel("latency_ms", "response (ms)")})}}}};
  json delay{{"data", {{"values", wave}}},
             {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"opacity", 0.7}}},
             {"encoding",
              {{"x", channel("t_ms", "quantitative", "time in the phase (ms)")},
               {"y", channel("delay_ms", "quantitative", "injected delay (ms)")},
               {"strokeDash", channel("wave", "nominal", "delay")},
               {"color", {{"value", "#444"}}}}}};
  return {{"width", 640},
          {"height", 220},
          {"layer", json::array({latency, delay})},
          {"resolve", {{"scale", {{"y", "independent"}}}}}};
}

json spectrum_chart(const PhaseSeries& series, int k_d,
                    const std::map<std::string, analysis::TrainingResult>& training) {
  json lines = json::array(), bands = json::array(), marks = json::array();
  std::size_t n = 0;
  double hz_per_k = 0;
  for (const auto& [type, s] : series.by_type) {
    n = s.mean_latency_ns.size();
    hz_per_k = 1e9 / (static_cast<double>(n) * static_cast<double>(s.bin_width_ns));
    const std::vector<double> mag = analysis::magnitude_spectrum(s.mean_latency_ns);
    for (std::size_t k = 1; k < mag.size(); ++k) {
      lines.push_back({{"type", type}, {"f_hz", k * hz_per_k}, {"magnitude_ms", ms(mag[k])}});
    }
    const auto t = training.find(type);
    if (t == training.end() || t->second.fft0_mean.size() != mag.size()) continue;
    for (std::size_t k = 1; k < mag.size(); ++k) {
      const double mean = std::abs(t->second.fft0_mean[k]);
      const double sigma = t->second.fft0_sigma[k];
      bands.push_back({{"type", type},
                       {"f_hz", k * hz_per_k},
                       {"low_ms", ms(std::max(0.0, mean - 2 * sigma))},
                       {"high_ms", ms(mean + 2 * sigma)}});
    }
  }
  for (int h = 1; k_d > 0 && static_cast<std::size_t>(h * k_d) <= n / 2; h += 2) {
    marks.push_back({{"f_hz", h * k_d * hz_per_k},
                     {"harmonic", h == 1 ? std::string("f_d") : std::to_string(h) + " f_d"}});
  }
  const json x = channel("f_hz", "quantitative", "frequency (Hz)");
  json band{{"data", {{"values", bands}}},
            {"mark", {{"type", "area"}, {"opacity", 0.2}}},
            {"encoding",
             {{"x", x},
              {"y", channel("low_ms", "quantitative", "|FFT| (ms)")},
              {"y2", {{"field", "high_ms"}}},
              {"color", channel("type", "nominal", "type")}}}};
  json line{{"data", {{"values", lines}}},
            {"mark", {{"type", "line"}, {"strokeWidth", 1}}},
            {"encoding",
             {{"x", x},
              {"y", channel("magnitude_ms", "quantitative", "|FFT| (ms)")},
              {"color", channel("type", "nominal", "type")},
              {"tooltip",
               json::array({channel("type", "nominal", "type"), number_channel("f_hz", "f (Hz)"),
                            number_channel("magnitude_ms", "|FFT| (ms)")})}}}};
  json rule{{"data", {{"values", marks}}},
            {"mark", {{"type", "rule"}, {"strokeDash", json::array({4, 3})}}},
            {"encoding",
             {{"x", x},
              {"color", {{"value", "#c0392b"}}},
              {"tooltip", json::array({channel("harmonic", "nominal", "marker"),
                                       number_channel("f_hz", "f (Hz)")})}}}};
  return {{"width", 640}, {"height", 220}, {"layer", json::array({band, line, rule})}};
}

json gradient_chart(const StoredRun& run, const db::LinkRow& link) {
  json rows = json::array(), truth = json::array();
  for (const db::GradientRow& g : run.gradients) {
    if (g.link.id != link.id) continue;
    const double v = g.gradient.value;
    rows.push_back({{"type", g.type},
                    {"value", v},
                    {"low", g.gradient.ci_low.value_or(v)},
                    {"high", g.gradient.ci_high.value_or(v)}});
    if (const auto t = truth_for(run, link.label, g.type)) {
      truth.push_back({{"type", g.type}, {"truth", *t}});
    }
  }
  const std::string axis = "gradient (ns of response per ns of delay)";
  json layers = estimate_with_ci_layers("type", "type", axis, "");
  layers.push_back({{"data", {{"values", truth}}},
                    {"mark", {{"type", "tick"}, {"color", "#c0392b"}, {"thickness", 2}}},
                    {"encoding",
                     {{"y", channel("type", "nominal", "type")},
                      {"x", channel("truth", "quantitative", axis)},
                      {"tooltip", json::array({number_channel("truth", "truth")})}}}});
  return layered(rows, layers, 640, 40 + 28 * static_cast<int>(rows.size()));
}

}  // namespace

json link_sections(db::Database& db, const StoredRun& run) {
  const auto training = training_spectra(db, run);
  json out = json::array();
  for (const db::LinkRow& link : run.links) {
    json section{{"link_id", link.id}, {"label", link.label}, {"charts", json::array()}};
    const db::PhaseRow* phase = measured_phase(run, link);
    if (!phase || !phase->phase.bins) {
      section["note"] = "no active phase stored for this link";
      out.push_back(std::move(section));
      continue;
    }
    const PhaseSeries series =
        bin_phase(db, run, *phase, static_cast<std::size_t>(*phase->phase.bins));
    if (series.by_type.empty()) section["note"] = series.note;
    const db::InjectionRow* inj = phase_injection(run, phase->id, link);
    section["phase_id"] = phase->id;
    section["charts"].push_back(chart("link-series",
                                      "response time and injected delay: " + link.label,
                                      series_chart(series, inj, *phase)));
    section["charts"].push_back(
        chart("link-spectrum", "spectrum (training band ±2σ shaded): " + link.label,
              spectrum_chart(series, link_k_d(run, *phase, link), training)));
    section["charts"].push_back(chart("link-gradients",
                                      "gradients with CIs (truth in red): " + link.label,
                                      gradient_chart(run, link)));
    out.push_back(std::move(section));
  }
  return out;
}

}  // namespace nabla::report::detail
