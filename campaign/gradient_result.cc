// One gradient result from the campaign or the run history, one JSON shape;
// see gradient_result.hh.
#include "nabla/campaign/gradient_result.hh"

#include <cmath>

#include "nabla/campaign/messages.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/link_label.hh"

namespace nabla::campaign {
namespace {

using ojson = nlohmann::ordered_json;
using common::or_null;

std::optional<double> finite(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

const char* verdict_name(analysis::Linearity kind) {
  switch (kind) {
    case analysis::Linearity::kSinglePoint:
      return "one_amplitude";
    case analysis::Linearity::kLinear:
      return "linear";
    case analysis::Linearity::kBreaks:
      return "breaks";
    case analysis::Linearity::kUndecided:
      break;
  }
  return "undecided";
}

// The verdict over the stored curve, as the campaign reached it
// (measurement.cc measure_sweep); none without a sweep.
std::optional<analysis::LinearityVerdict> stored_linearity(
    const std::vector<db::GradientAmplitude>& amplitudes) {
  if (amplitudes.empty()) return std::nullopt;
  std::vector<analysis::SweepPoint> points;
  for (const db::GradientAmplitude& a : amplitudes) {
    points.push_back({static_cast<double>(a.amplitude_ns), a.value, a.ci_low.value_or(a.value),
                      a.ci_high.value_or(a.value)});
  }
  return analysis::linearity_verdict(points);
}

}  // namespace

GradientResult gradient_result(const LinkMeasurement& m, std::size_t t) {
  const TypeGradient& g = m.gradients.at(t);
  const analysis::GradientEstimate& e = g.estimate;
  GradientResult r;
  r.link = m.label;
  r.type = g.type;
  r.gradient = finite(e.value);
  r.ci_low = finite(e.ci_low);
  r.ci_high = finite(e.ci_high);
  r.standard_error = finite(e.standard_error);
  r.snr = finite(e.snr);
  r.detected = e.detected;
  r.time_domain = finite(e.time_domain_value);
  r.phase_bins = e.phase_bins;
  r.reliable = g.reliable;
  r.actual_amplitude_ns = g.actual_amplitude_ns;
  r.perturbation_ns = finite(g.perturbation_ns);
  r.throughput_change = finite(g.throughput_change);
  r.truth = g.truth;
  if (g.messages) {
    r.messages_per_txn = g.messages->value;
    r.messages_ci_low = g.messages->ci_low;
    r.messages_ci_high = g.messages->ci_high;
    r.waits_not_hops = waits_not_hops(e.value, e.ci_low, e.ci_high, *g.messages);
  }
  if (g.interaction) {
    r.interaction_bias = finite(g.interaction->value);
    r.interaction_se = finite(g.interaction->standard_error);
    r.depends_on_other_links = g.depends_on_other_links;
  }
  if (g.step) {
    r.step = StepResult{finite(g.step->value), finite(g.step->ci_low), finite(g.step->ci_high),
                        m.step_delay_ns, g.step_disagrees};
  }
  for (const SweepAmplitude& a : m.sweep) {
    if (t >= a.gradients.size()) continue;
    const TypeGradient& at = a.gradients[t];
    r.amplitudes.push_back({a.requested_ns, at.actual_amplitude_ns, finite(at.estimate.value),
                            finite(at.estimate.ci_low), finite(at.estimate.ci_high)});
  }
  if (t < m.linearity.size()) r.linearity = m.linearity[t];
  return r;
}

GradientResult gradient_result(const db::GradientRow& row,
                               const std::vector<db::GradientAmplitude>& amplitudes) {
  const db::Gradient& g = row.gradient;
  GradientResult r;
  // The campaign's label, as `nabla run` prints it and [truth] names it,
  // not the stored one with the processes.
  const db::Link& l = row.link.link;
  r.link = common::campaign_link_label(l.proto, l.src_host, l.src_port, l.dst_host, l.dst_port);
  r.type = row.type;
  r.gradient = finite(g.value);
  r.ci_low = g.ci_low;
  r.ci_high = g.ci_high;
  r.time_domain = g.time_domain;
  r.actual_amplitude_ns = g.actual_amplitude_ns;
  r.perturbation_ns = g.perturbation_ns;
  r.throughput_change = g.throughput_change;
  r.messages_per_txn = g.messages_per_txn;
  r.messages_ci_low = g.messages_ci_low;
  r.messages_ci_high = g.messages_ci_high;
  if (g.messages_per_txn && g.messages_ci_low && g.messages_ci_high && g.ci_low && g.ci_high) {
    const MessagesPerTxn m{*g.messages_per_txn, 0, *g.messages_ci_low, *g.messages_ci_high};
    r.waits_not_hops = waits_not_hops(g.value, *g.ci_low, *g.ci_high, m);
  }
  if (g.step_value) {
    StepResult s{g.step_value, g.step_ci_low, g.step_ci_high, std::nullopt, false};
    if (g.ci_low && g.ci_high && g.step_ci_low && g.step_ci_high) {
      s.disagrees =
          analysis::estimates_disagree(*g.ci_low, *g.ci_high, *g.step_ci_low, *g.step_ci_high);
    }
    r.step = s;
  }
  for (const db::GradientAmplitude& a : amplitudes) {
    r.amplitudes.push_back(
        {a.amplitude_ns, a.actual_amplitude_ns, finite(a.value), a.ci_low, a.ci_high});
  }
  r.linearity = stored_linearity(amplitudes);
  return r;
}

std::vector<GradientResult> stored_gradient_results(db::Database& db, std::int64_t run_id) {
  const auto sweeps = db::run_gradient_amplitudes(db, run_id);
  std::vector<GradientResult> out;
  for (const db::GradientRow& row : db::run_gradients(db, run_id)) {
    const auto it = sweeps.find(row.id);
    out.push_back(gradient_result(
        row, it == sweeps.end() ? std::vector<db::GradientAmplitude>{} : it->second));
  }
  return out;
}

ojson gradient_json(const GradientResult& g) {
  ojson step;
  if (g.step) {
    step = {{"gradient", or_null<ojson>(g.step->gradient)},
            {"ci_low", or_null<ojson>(g.step->ci_low)},
            {"ci_high", or_null<ojson>(g.step->ci_high)},
            {"delay_ns", or_null<ojson>(g.step->delay_ns)},
            {"disagrees", g.step->disagrees}};
  }
  ojson amplitudes = ojson::array();
  for (const AmplitudeResult& a : g.amplitudes) {
    amplitudes.push_back({{"amplitude_ns", a.amplitude_ns},
                          {"actual_amplitude_ns", or_null<ojson>(a.actual_amplitude_ns)},
                          {"gradient", or_null<ojson>(a.gradient)},
                          {"ci_low", or_null<ojson>(a.ci_low)},
                          {"ci_high", or_null<ojson>(a.ci_high)}});
  }
  ojson linearity;
  if (g.linearity) {
    const analysis::LinearityVerdict& v = *g.linearity;
    linearity = {{"verdict", verdict_name(v.kind)},
                 {"text", analysis::describe(v)},
                 {"band", {v.band_low, v.band_high}},
                 {"breaks_at_ns", or_null<ojson>(v.breaks_at_ns)}};
  }
  return {{"link", g.link},
          {"type", g.type},
          {"gradient", or_null<ojson>(g.gradient)},
          {"ci_low", or_null<ojson>(g.ci_low)},
          {"ci_high", or_null<ojson>(g.ci_high)},
          {"standard_error", or_null<ojson>(g.standard_error)},
          {"snr", or_null<ojson>(g.snr)},
          {"detected", or_null<ojson>(g.detected)},
          {"time_domain", or_null<ojson>(g.time_domain)},
          {"phase_bins", or_null<ojson>(g.phase_bins)},
          {"reliable", or_null<ojson>(g.reliable)},
          {"actual_amplitude_ns", or_null<ojson>(g.actual_amplitude_ns)},
          {"perturbation_ns", or_null<ojson>(g.perturbation_ns)},
          {"throughput_change", or_null<ojson>(g.throughput_change)},
          {"truth", or_null<ojson>(g.truth)},
          {"messages_per_txn", or_null<ojson>(g.messages_per_txn)},
          {"messages_ci_low", or_null<ojson>(g.messages_ci_low)},
          {"messages_ci_high", or_null<ojson>(g.messages_ci_high)},
          {"waits_not_hops", g.waits_not_hops},
          {"interaction_bias", or_null<ojson>(g.interaction_bias)},
          {"interaction_se", or_null<ojson>(g.interaction_se)},
          {"depends_on_other_links", or_null<ojson>(g.depends_on_other_links)},
          {"step", std::move(step)},
          {"amplitudes", std::move(amplitudes)},
          {"linearity", std::move(linearity)}};
}

}  // namespace nabla::campaign
