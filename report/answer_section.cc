// The page's first section, the answer: the gradient of every link per
// transaction type with its CI (and the truth with its verdict when the
// campaign file has a [truth]), the links that cost each type the most, the
// run's verdicts and its warnings. The truth verdict is the rule `nabla demo`
// applies (campaign/truth_check.hh), so page and demo count the same checks.
#include <algorithm>
#include <cmath>
#include <set>

#include "charts.hh"
#include "nabla/analysis/sweep.hh"
#include "nabla/campaign/operating_point.hh"
#include "nabla/campaign/truth_check.hh"
#include "nabla/common/link_label.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

// How many links "cost each type the most" lists per type.
constexpr std::size_t kTopLinks = 3;

std::string campaign_label(const db::LinkRow& l) {
  return common::campaign_link_label(l.link.proto, l.link.src_host, l.link.src_port,
                                     l.link.dst_host, l.link.dst_port);
}

// The campaign file's [truth] as stored with the run.
campaign::TruthTable stored_truth(const StoredRun& run) {
  campaign::TruthTable out;
  const json spec = campaign_spec(run);
  if (!spec.is_object() || !spec.contains("truth") || !spec["truth"].is_object()) return out;
  for (const auto& [label, by_type] : spec["truth"].items()) {
    if (!by_type.is_object()) continue;
    for (const auto& [type, value] : by_type.items()) {
      if (value.is_number()) out[label][type] = value.get<double>();
    }
  }
  return out;
}

std::vector<std::string> gradient_types(const StoredRun& run) {
  std::vector<std::string> types;
  for (const db::GradientRow& g : run.gradients) {
    if (std::find(types.begin(), types.end(), g.type) == types.end()) types.push_back(g.type);
  }
  std::sort(types.begin(), types.end());
  return types;
}

const campaign::GradientCheck* find_check(const std::vector<campaign::GradientCheck>& checks,
                                          const std::string& label, const std::string& type) {
  for (const campaign::GradientCheck& c : checks) {
    if (c.link == label && c.type == type) return &c;
  }
  return nullptr;
}

json matrix_cell(const db::GradientRow& g, const campaign::GradientCheck* check) {
  json cell{{"value", g.gradient.value},
            {"ci_low", or_null(g.gradient.ci_low)},
            {"ci_high", or_null(g.gradient.ci_high)},
            {"truth", nullptr},
            {"verdict", nullptr},
            {"why", ""}};
  if (check && check->truth) {
    cell["truth"] = *check->truth;
    cell["verdict"] = check->pass ? "pass" : "fail";
    cell["why"] = check->why;
  }
  return cell;
}

// One row per link, one cell per type (null where the run has no gradient).
json gradient_matrix(const StoredRun& run, const std::vector<std::string>& types,
                     const std::vector<campaign::GradientCheck>& checks) {
  json rows = json::array();
  double largest = 0;
  for (const db::LinkRow& l : run.links) {
    json cells = json::array();
    bool measured = false;
    for (const std::string& type : types) {
      json cell = nullptr;
      for (const db::GradientRow& g : run.gradients) {
        if (g.link.id != l.id || g.type != type) continue;
        cell = matrix_cell(g, find_check(checks, campaign_label(l), type));
        largest = std::max(largest, std::abs(g.gradient.value));
        measured = true;
      }
      cells.push_back(std::move(cell));
    }
    rows.push_back(
        {{"link_id", l.id}, {"link", l.label}, {"measured", measured}, {"cells", cells}});
  }
  return {{"types", types}, {"rows", rows}, {"largest", largest}};
}

json top_links(const StoredRun& run, const std::vector<std::string>& types) {
  json out = json::array();
  for (const std::string& type : types) {
    std::vector<const db::GradientRow*> rows;
    for (const db::GradientRow& g : run.gradients) {
      if (g.type == type) rows.push_back(&g);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
      return std::abs(a->gradient.value) > std::abs(b->gradient.value);
    });
    json links = json::array();
    for (std::size_t i = 0; i < rows.size() && i < kTopLinks; ++i) {
      links.push_back({{"link", rows[i]->link.label},
                       {"value", rows[i]->gradient.value},
                       {"ci_low", or_null(rows[i]->gradient.ci_low)},
                       {"ci_high", or_null(rows[i]->gradient.ci_high)}});
    }
    out.push_back({{"type", type}, {"links", links}});
  }
  return out;
}

// A verdict line: ok is true (passed), false (failed) or null (undecided).
json verdict(const std::string& kind, json ok, std::string text, json details = json::array()) {
  return {{"kind", kind}, {"ok", std::move(ok)}, {"text", std::move(text)}, {"details", details}};
}

json truth_verdict(const std::vector<campaign::GradientCheck>& checks) {
  json failures = json::array();
  for (const campaign::GradientCheck& c : checks) {
    if (!c.pass) failures.push_back(c.link + " " + c.type + ": " + c.why);
  }
  const std::size_t failed = failures.size();
  const std::string text = failed == 0
                               ? "all " + std::to_string(checks.size()) + " truth checks pass"
                               : std::to_string(failed) + " of " + std::to_string(checks.size()) +
                                     " truth checks failed";
  return verdict("truth", failed == 0,
                 text +
                     " (within 10% of max(|truth|, 1), CI contains the "
                     "truth, the link's throughput changed by < 5%)",
                 failures);
}

json linearity_verdicts(db::Database& db, const StoredRun& run) {
  json out = json::array();
  const auto sweeps = db::run_gradient_amplitudes(db, run.info.id);
  for (const db::GradientRow& g : run.gradients) {
    const auto it = sweeps.find(g.id);
    if (it == sweeps.end() || it->second.size() < 2) continue;
    std::vector<analysis::SweepPoint> points;
    for (const db::GradientAmplitude& a : it->second) {
      points.push_back({static_cast<double>(a.amplitude_ns), a.value, a.ci_low.value_or(a.value),
                        a.ci_high.value_or(a.value)});
    }
    const analysis::LinearityVerdict v = analysis::linearity_verdict(points);
    const json ok = v.kind == analysis::Linearity::kLinear   ? json(true)
                    : v.kind == analysis::Linearity::kBreaks ? json(false)
                                                             : json(nullptr);
    out.push_back(
        verdict("linearity", ok,
                "linearity of " + g.link.label + " " + g.type + ": " + analysis::describe(v)));
  }
  return out;
}

json step_verdict(const StoredRun& run) {
  json disagreements = json::array();
  std::size_t steps = 0;
  for (const db::GradientRow& row : run.gradients) {
    const db::Gradient& g = row.gradient;
    if (!g.step_value || !g.ci_low || !g.ci_high || !g.step_ci_low || !g.step_ci_high) continue;
    ++steps;
    if (analysis::estimates_disagree(*g.ci_low, *g.ci_high, *g.step_ci_low, *g.step_ci_high)) {
      disagreements.push_back(row.link.label + " " + row.type + ": step " +
                              short_number(*g.step_value) + " [" + short_number(*g.step_ci_low) +
                              ", " + short_number(*g.step_ci_high) + "], spectral " +
                              short_number(g.value) + " [" + short_number(*g.ci_low) + ", " +
                              short_number(*g.ci_high) + "]");
    }
  }
  if (steps == 0) return nullptr;
  const std::size_t n = disagreements.size();
  return verdict("step", n == 0,
                 n == 0 ? "the step oracle agrees with all " + std::to_string(steps) + " gradients"
                        : "the step oracle disagrees with " + std::to_string(n) + " of " +
                              std::to_string(steps) + " gradients (disjoint CIs)",
                 disagreements);
}

// An SLO term's number: shares in percent, latencies in ms.
std::string term_text(const std::string& term, double v) {
  if (term == "errors" || term == "throughput") return short_number(100 * v) + "%";
  return short_number(ms(v)) + " ms";
}

json experiment_verdicts(db::Database& db, const StoredRun& run) {
  json out = json::array();
  for (const db::ExperimentRow& e : db::run_experiments(db, run.info.id)) {
    json failed = json::array();
    for (const db::ExperimentCheck& c : e.checks) {
      if (c.verdict == "fail") {
        failed.push_back(c.window + " " + c.term + ": " + term_text(c.term, c.value) + " against " +
                         term_text(c.term, c.bound));
      }
    }
    const std::string& v = e.experiment.verdict;
    out.push_back(verdict("experiment",
                          v == "pass"   ? json(true)
                          : v == "fail" ? json(false)
                                        : json(nullptr),
                          "experiment " + e.experiment.name + ": SLO " + v, failed));
  }
  return out;
}

// How far the measurement moved each type's mean response from the
// training's: not a pass or fail, the operating point the gradients were
// read at (campaign/operating_point.hh).
json operating_point_verdict(db::Database& db, const StoredRun& run) {
  json details = json::array();
  for (const campaign::OperatingPointShift& s :
       campaign::stored_operating_point_shifts(db, run.info.id)) {
    details.push_back(campaign::describe_shift(s));
  }
  if (details.empty()) return nullptr;
  return verdict("operating_point", nullptr,
                 "operating-point shift: the largest mean response of one phase minus the "
                 "training's, per type",
                 details);
}

json run_verdicts(db::Database& db, const StoredRun& run,
                  const std::vector<campaign::GradientCheck>& checks) {
  json out = json::array();
  if (!checks.empty()) out.push_back(truth_verdict(checks));
  if (json shift = operating_point_verdict(db, run); !shift.is_null()) {
    out.push_back(std::move(shift));
  }
  if (json step = step_verdict(run); !step.is_null()) out.push_back(std::move(step));
  for (json& v : linearity_verdicts(db, run)) out.push_back(std::move(v));
  for (json& v : experiment_verdicts(db, run)) out.push_back(std::move(v));
  return out;
}

// Phases a gradient or a sweep point was read from; any other active or
// simultaneous phase was an attempt measured again because it was noisy.
std::set<std::int64_t> used_phases(db::Database& db, const StoredRun& run) {
  std::set<std::int64_t> used;
  for (const db::GradientRow& g : run.gradients) {
    if (g.gradient.phase_id) used.insert(*g.gradient.phase_id);
  }
  for (const auto& [gradient, points] : db::run_gradient_amplitudes(db, run.info.id)) {
    for (const db::GradientAmplitude& a : points) {
      if (a.phase_id) used.insert(*a.phase_id);
    }
  }
  return used;
}

std::vector<std::string> repeat_warnings(db::Database& db, const StoredRun& run) {
  const std::set<std::int64_t> used = used_phases(db, run);
  std::map<std::string, int> repeated;
  for (const db::PhaseRow& p : run.phases) {
    const bool measuring =
        p.phase.kind == db::PhaseKind::kActive || p.phase.kind == db::PhaseKind::kSimultaneous;
    if (!measuring || used.count(p.id)) continue;
    std::string what = "the simultaneous phase";
    for (const db::LinkRow& l : run.links) {
      if (p.phase.link_id && *p.phase.link_id == l.id) what = "link " + l.label;
    }
    ++repeated[what];
  }
  std::vector<std::string> out;
  for (const auto& [what, n] : repeated) {
    out.push_back(what + ": measured again " + std::to_string(n) +
                  " time(s): an earlier attempt was too noisy against the training");
  }
  return out;
}

// The stored warnings (one per "; "-joined part), repeated noisy phases,
// links without gradients.
std::vector<std::string> answer_warnings(db::Database& db, const StoredRun& run,
                                         const std::vector<std::string>& header_warnings) {
  std::vector<std::string> out;
  for (const std::string& joined : header_warnings) {
    std::size_t from = 0;
    for (std::size_t at = joined.find("; "); at != std::string::npos;
         from = at + 2, at = joined.find("; ", from)) {
      out.push_back(joined.substr(from, at - from));
    }
    out.push_back(joined.substr(from));
  }
  for (std::string& w : repeat_warnings(db, run)) out.push_back(std::move(w));
  const bool campaign = run.info.kind == db::RunKind::kRun || run.info.kind == db::RunKind::kDemo;
  for (const db::LinkRow& l : run.links) {
    const bool measured = std::any_of(run.gradients.begin(), run.gradients.end(),
                                      [&](const db::GradientRow& g) { return g.link.id == l.id; });
    if (campaign && !measured) out.push_back("link " + l.label + " could not be measured");
  }
  return out;
}

// "complete", or "complete: 9 of 32 truth checks failed; experiment x: SLO fail".
std::string status_line(const StoredRun& run, const json& verdicts) {
  std::string line(db::to_string(run.info.status));
  std::string failures;
  for (const json& v : verdicts) {
    if (v["ok"] != false) continue;
    std::string text = v["text"].get<std::string>();
    text = text.substr(0, text.find(" ("));
    failures += (failures.empty() ? "" : "; ") + text;
  }
  return failures.empty() ? line : line + ": " + failures;
}

}  // namespace

json answer_section(db::Database& db, const StoredRun& run, const json& header) {
  const campaign::TruthTable truth = stored_truth(run);
  const std::vector<campaign::GradientCheck> checks =
      truth.empty() || run.gradients.empty()
          ? std::vector<campaign::GradientCheck>{}
          : campaign::check_run_gradients(db, run.info.id, truth);
  const std::vector<std::string> types = gradient_types(run);
  const json verdicts = run_verdicts(db, run, checks);
  const std::string status = status_line(run, verdicts);
  return {
      {"status", status},
      {"ok", run.info.status == db::RunStatus::kComplete &&
                 status == std::string(db::to_string(run.info.status))},
      {"matrix", gradient_matrix(run, types, checks)},
      {"top_links", top_links(run, types)},
      {"verdicts", verdicts},
      {"warnings", answer_warnings(db, run, header["warnings"].get<std::vector<std::string>>())}};
}

}  // namespace nabla::report::detail
