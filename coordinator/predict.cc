#include "nabla/coordinator/predict.hh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/prediction.hh"
#include "nabla/analysis/sweep.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

double parse_signed_duration_ns(std::string_view text, std::string_view whole) {
  double sign = 1;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    if (text.front() == '-') sign = -1;
    text.remove_prefix(1);
  }
  try {
    return sign * static_cast<double>(common::parse_duration_ns(text));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--set '" + std::string(whole) + "': " + e.what());
  }
}

struct RunLink {
  std::int64_t id = 0;
  std::string label, src_host, dst_host;
  std::string short_label;  // campaign form
};

struct StoredGradient {
  double value = 0;
  double se = 0;
  // (actual amplitude, gradient, se) per measured amplitude; empty when the
  // gradient was stored without an amplitude.
  std::vector<analysis::CurvePoint> curve;
};

// Welford running mean/variance of one type's training response times.
struct Running {
  std::int64_t n = 0;
  double mean = 0, m2 = 0;
  void add(double x) {
    ++n;
    const double d = x - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (x - mean);
  }
};

std::vector<RunLink> selectable_links(db::Database& db, std::int64_t run_id) {
  std::vector<RunLink> links;
  for (const db::LinkRow& row : db::run_links(db, run_id)) {
    const db::Link& l = row.link;
    links.push_back({row.id, row.label, l.src_host, l.dst_host,
                     campaign_link_label(l.proto, l.src_host, l.src_port, l.dst_host, l.dst_port)});
  }
  return links;
}

std::vector<const RunLink*> select_links(const std::vector<RunLink>& links,
                                         const std::string& selector) {
  std::vector<const RunLink*> out;
  for (const RunLink& l : links) {
    if (l.label == selector || l.short_label == selector) return {&l};
  }
  const auto arrow = selector.find("->");
  if (arrow == std::string::npos) {
    throw std::invalid_argument("--set '" + selector +
                                "': select links as HOST->HOST or by their full label");
  }
  const std::string_view sv(selector);
  const std::string_view src = trim(sv.substr(0, arrow)), dst = trim(sv.substr(arrow + 2));
  for (const RunLink& l : links) {
    if (l.src_host == src && l.dst_host == dst) out.push_back(&l);
  }
  if (out.empty()) {
    std::string msg = "--set '" + selector + "' matches no link of the run; its links are:";
    for (const RunLink& l : links) msg += "\n  " + l.label;
    if (links.empty()) msg += " (none)";
    throw std::invalid_argument(msg);
  }
  return out;
}

}  // namespace

LatencySet parse_latency_set(std::string_view text) {
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw std::invalid_argument("--set '" + std::string(text) +
                                "': expected LINK=DELTA, e.g. \"web->app=+20ms\"");
  }
  LatencySet set;
  set.selector = std::string(trim(text.substr(0, eq)));
  std::string_view value = trim(text.substr(eq + 1));
  const auto tilde = value.find('~');
  if (tilde != std::string_view::npos) {
    const double sd = parse_signed_duration_ns(trim(value.substr(tilde + 1)), text);
    if (sd < 0) {
      throw std::invalid_argument("--set '" + std::string(text) +
                                  "': the standard deviation after '~' must be >= 0");
    }
    set.delta_stddev_ns = sd;
    value = trim(value.substr(0, tilde));
  }
  set.delta_ns = parse_signed_duration_ns(value, text);
  return set;
}

namespace {

// Accumulated change of one selected link (two selectors may hit one link).
struct LinkChange {
  const RunLink* link = nullptr;
  double delta_ns = 0, delta_var = 0;
};

// The selections of the report and the change per selected link id.
std::map<std::int64_t, LinkChange> select_changes(const std::vector<RunLink>& links,
                                                  const std::vector<LatencySet>& sets,
                                                  PredictionReport& report) {
  std::map<std::int64_t, LinkChange> changes;
  for (const LatencySet& s : sets) {
    PredictionReport::Selection sel{s.selector, s.delta_ns, s.delta_stddev_ns, {}};
    for (const RunLink* l : select_links(links, s.selector)) {
      LinkChange& c = changes[l->id];
      c.link = l;
      c.delta_ns += s.delta_ns;
      c.delta_var += s.delta_stddev_ns * s.delta_stddev_ns;
      sel.links.push_back(l->label);
    }
    report.selections.push_back(std::move(sel));
  }
  return changes;
}

// The standard error recovered from a stored CI (0 without one).
double se_from_ci(double value, std::optional<double> ci_low, std::optional<double> ci_high,
                  double confidence) {
  if (!ci_low || !ci_high) return 0;
  const double z = analysis::normal_quantile((1 + confidence) / 2);
  return std::max(value - *ci_low, *ci_high - value) / z;
}

// A gradient's curve: its sweep's points at their actual amplitudes (the
// requested one when the actual is unknown), else its own point.
std::vector<analysis::CurvePoint> gradient_curve(const db::Gradient& g,
                                                 const std::vector<db::GradientAmplitude>* sweep,
                                                 double se) {
  std::vector<analysis::CurvePoint> curve;
  if (sweep != nullptr) {
    for (const db::GradientAmplitude& a : *sweep) {
      curve.push_back({a.actual_amplitude_ns.value_or(static_cast<double>(a.amplitude_ns)), a.value,
                       se_from_ci(a.value, a.ci_low, a.ci_high, g.confidence)});
    }
  } else if (g.actual_amplitude_ns && *g.actual_amplitude_ns > 0) {
    curve.push_back({*g.actual_amplitude_ns, g.value, se});
  }
  return curve;
}

// The run's gradients by type name, then link id, each with its standard
// error and its curve.
std::map<std::string, std::map<std::int64_t, StoredGradient>> stored_gradients(
    db::Database& db, std::int64_t run_id) {
  std::map<std::string, std::map<std::int64_t, StoredGradient>> gradients;
  const auto sweeps = db::run_gradient_amplitudes(db, run_id);
  for (const db::GradientRow& row : db::run_gradients(db, run_id)) {
    const db::Gradient& stored = row.gradient;
    StoredGradient g;
    g.value = stored.value;
    g.se = se_from_ci(g.value, stored.ci_low, stored.ci_high, stored.confidence);
    const auto sweep = sweeps.find(row.id);
    g.curve = gradient_curve(stored, sweep == sweeps.end() ? nullptr : &sweep->second, g.se);
    gradients[row.type][row.link.id] = g;
  }
  return gradients;
}

// The term of one link's change: the gradient read off its curve at the
// change (the stored value when it has no curve).
PredictionTerm read_term(const std::string& link, const StoredGradient& g, double delta_ns) {
  PredictionTerm term{link, g.value, g.se, delta_ns, 0, std::nullopt, {}, false};
  if (!g.curve.empty()) {
    const analysis::GradientAt at = analysis::gradient_at(g.curve, delta_ns);
    term.gradient = at.value;
    term.gradient_se = at.standard_error;
    term.range_ns = std::make_pair(at.range_low_ns, at.range_high_ns);
    for (const analysis::CurvePoint& p : at.used) term.points.push_back({p.amplitude_ns, p.value});
    term.beyond_range = at.beyond_range;
  }
  term.contribution_ns = term.gradient * delta_ns;
  return term;
}

// Mean and variance of each type's training-phase response times.
std::map<std::string, Running> training_baselines(db::Database& db, std::int64_t run_id) {
  std::map<std::string, Running> baselines;
  for (const auto& [type, latencies_ns] :
       db::latencies_by_type(db, run_id, db::PhaseKind::kTraining)) {
    Running& r = baselines[type];
    for (const std::int64_t ns : latencies_ns) r.add(static_cast<double>(ns));
  }
  return baselines;
}

TypePrediction predict_type(const std::string& type, const Running* baseline,
                            const std::map<std::int64_t, StoredGradient>& by_link,
                            const std::map<std::int64_t, LinkChange>& changes, double confidence) {
  TypePrediction tp;
  tp.type = type;
  if (baseline == nullptr || baseline->n < 2) {
    tp.missing = "fewer than 2 training-phase samples of this type in the run";
    return tp;
  }
  tp.samples = baseline->n;
  tp.baseline_ns = baseline->mean;
  const double var = baseline->m2 / static_cast<double>(baseline->n - 1);
  tp.baseline_se_ns = std::sqrt(var / static_cast<double>(baseline->n));
  std::vector<analysis::LinkChange> link_changes;
  for (const auto& [link_id, c] : changes) {
    const auto g = by_link.find(link_id);
    if (g == by_link.end()) {
      tp.missing = "no gradient for this type on " + c.link->label;
      tp.terms.clear();
      return tp;
    }
    const PredictionTerm term = read_term(c.link->label, g->second, c.delta_ns);
    link_changes.push_back(
        {c.delta_ns, c.delta_var, term.gradient, term.gradient_se * term.gradient_se});
    tp.terms.push_back(term);
  }
  const analysis::Prediction p = analysis::predict_response_time(
      tp.baseline_ns, tp.baseline_se_ns * tp.baseline_se_ns, link_changes, confidence);
  tp.predicted_ns = p.rt_ns;
  tp.stddev_ns = p.stddev_ns;
  tp.ci_low_ns = p.ci_low_ns;
  tp.ci_high_ns = p.ci_high_ns;
  return tp;
}

std::string ms_text(double ns) {
  return format_number(ns / 1e6) + " ms";
}

// "(0.8 to 12.8 ms)", or "(4 ms)" for one amplitude.
std::string range_text(const std::pair<double, double>& range_ns) {
  if (range_ns.first == range_ns.second) return "(" + ms_text(range_ns.first) + ")";
  return "(" + format_number(range_ns.first / 1e6) + " to " + ms_text(range_ns.second) + ")";
}

// One warning per link and type whose change lies beyond 2x the measured
// amplitudes.
void add_range_warnings(PredictionReport& report) {
  for (const TypePrediction& t : report.types) {
    for (const PredictionTerm& term : t.terms) {
      if (!term.beyond_range) continue;
      report.warnings.push_back(
          (term.delta_ns >= 0 ? "+" : "-") + ms_text(std::abs(term.delta_ns)) + " on " + term.link +
          " for " + t.type + " is beyond 2x its measured amplitudes " + range_text(*term.range_ns) +
          "; the gradient there was not measured");
    }
  }
}

}  // namespace

PredictionReport predict_run(db::Database& db, std::int64_t run_id,
                             const std::vector<LatencySet>& sets, double confidence) {
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("--confidence must be in (0, 1)");
  }
  if (!db::find_run(db, run_id)) throw std::runtime_error("no run " + std::to_string(run_id));
  PredictionReport report;
  report.run_id = run_id;
  report.confidence = confidence;
  const std::vector<RunLink> links = selectable_links(db, run_id);
  const std::map<std::int64_t, LinkChange> changes = select_changes(links, sets, report);
  const auto gradients = stored_gradients(db, run_id);
  if (gradients.empty()) {
    throw std::runtime_error("run " + std::to_string(run_id) +
                             " has no gradients (is it a complete `nabla run`/`nabla demo`?)");
  }
  const std::map<std::string, Running> baselines = training_baselines(db, run_id);
  for (const auto& [type, by_link] : gradients) {
    const auto b = baselines.find(type);
    report.types.push_back(predict_type(type, b == baselines.end() ? nullptr : &b->second, by_link,
                                        changes, confidence));
  }
  add_range_warnings(report);
  return report;
}

json to_json(const PredictionReport& r) {
  json out;
  out["run_id"] = r.run_id;
  out["confidence"] = r.confidence;
  json sels = json::array();
  for (const auto& s : r.selections) {
    sels.push_back({{"set", s.selector},
                    {"delta_ns", s.delta_ns},
                    {"delta_stddev_ns", s.delta_stddev_ns},
                    {"links", s.links}});
  }
  out["sets"] = std::move(sels);
  json types = json::array();
  for (const auto& t : r.types) {
    json j = {{"type", t.type}};
    if (t.missing) {
      j["missing"] = *t.missing;
      j["predicted_ns"] = nullptr;
    } else {
      j["samples"] = t.samples;
      j["baseline_ns"] = t.baseline_ns;
      j["baseline_se_ns"] = t.baseline_se_ns;
      j["predicted_ns"] = t.predicted_ns;
      j["stddev_ns"] = t.stddev_ns;
      j["ci_low_ns"] = t.ci_low_ns;
      j["ci_high_ns"] = t.ci_high_ns;
      json terms = json::array();
      for (const auto& term : t.terms) {
        json points = json::array();
        for (const CurveUse& p : term.points) {
          points.push_back({{"amplitude_ns", p.amplitude_ns}, {"gradient", p.gradient}});
        }
        terms.push_back(
            {{"link", term.link},
             {"gradient", term.gradient},
             {"gradient_se", term.gradient_se},
             {"delta_ns", term.delta_ns},
             {"contribution_ns", term.contribution_ns},
             {"range_ns", term.range_ns ? json::array({term.range_ns->first, term.range_ns->second})
                                        : json(nullptr)},
             {"points", std::move(points)},
             {"beyond_range", term.beyond_range}});
      }
      j["terms"] = std::move(terms);
    }
    types.push_back(std::move(j));
  }
  out["predictions"] = std::move(types);
  out["warnings"] = r.warnings;
  return out;
}

void print_prediction(const PredictionReport& r, std::ostream& out) {
  out << "run " << r.run_id << ": predicted mean response time ("
      << format_number(r.confidence * 100, 3) << "% CI)\n";
  for (const auto& s : r.selections) {
    out << "  " << s.selector << " " << (s.delta_ns >= 0 ? "+" : "")
        << format_number(s.delta_ns / 1e6) << " ms on";
    for (const auto& l : s.links) out << "\n    " << l;
    out << '\n';
  }
  TextTable table(
      {"type", "samples", "baseline ms", "predicted ms", "ci low ms", "ci high ms", "change ms"});
  for (const auto& t : r.types) {
    if (t.missing) {
      table.add_row({t.type, "-", "-", "n/a", "-", "-", *t.missing});
      continue;
    }
    table.add_row({t.type, std::to_string(t.samples), format_number(t.baseline_ns / 1e6),
                   format_number(t.predicted_ns / 1e6), format_number(t.ci_low_ns / 1e6),
                   format_number(t.ci_high_ns / 1e6),
                   format_number((t.predicted_ns - t.baseline_ns) / 1e6)});
  }
  table.print(out);
}

void register_predict_command(CLI::App& app) {
  struct Options {
    std::int64_t run_id = 0;
    std::vector<std::string> sets;
    std::string db_path = "nabla.db";
    double confidence = 0.95;
    bool json = false;
    bool strict = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "predict mean response times per type from a run's gradients and new latencies");
  cmd->add_option("--run", opts->run_id, "Run whose gradients and baseline to use")->required();
  cmd->add_option("--set", opts->sets,
                  "LINK=DELTA[~STDDEV], LINK = HOST->HOST (every link between them) or a "
                  "full link label; DELTA e.g. +20ms (repeatable)");
  cmd->add_option("--db", opts->db_path, "Run history database (opened read-only)");
  cmd->add_option("--confidence", opts->confidence, "Confidence of the intervals");
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->add_flag("--strict", opts->strict,
                "Refuse (exit 1) a change beyond 2x a link's measured amplitudes");
  cmd->callback([opts] {
    std::vector<LatencySet> sets;
    for (const auto& s : opts->sets) sets.push_back(parse_latency_set(s));
    db::Store store = open_history_read_only(opts->db_path);
    const PredictionReport report =
        predict_run(store.database(), opts->run_id, sets, opts->confidence);
    if (opts->strict && !report.warnings.empty()) {
      throw std::runtime_error("--strict: " + report.warnings.front());
    }
    for (const std::string& w : report.warnings) std::cerr << "warning: " << w << '\n';
    if (opts->json) {
      std::cout << to_json(report).dump(2) << '\n';
    } else {
      print_prediction(report, std::cout);
    }
  });
}

}  // namespace nabla::coordinator
