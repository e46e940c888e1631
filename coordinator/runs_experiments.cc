// The experiments section of `nabla runs show`; see runs_experiments.hh.
#include "runs_experiments.hh"

#include <cmath>

#include "nabla/coordinator/text_table.hh"
#include "nabla/db/reads.hh"
#include "nabla/loadgen/controller_checks.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json checks_json(const std::vector<db::ExperimentCheck>& checks) {
  json out = json::array();
  for (const db::ExperimentCheck& c : checks) {
    out.push_back({{"window", c.window},
                   {"term", c.term},
                   {"bound", c.bound},
                   {"value", c.value},
                   {"ci_low", or_null(c.ci_low)},
                   {"ci_high", or_null(c.ci_high)},
                   {"verdict", c.verdict},
                   {"extra_ns", or_null(c.extra_ns)},
                   {"note", or_null(c.note)},
                   {"samples", c.samples},
                   {"scheduled", c.scheduled}});
  }
  return out;
}

// A term's number as people read it: latencies with their unit, shares and
// changes in percent.
std::string term_value(const std::string& term, const json& v) {
  if (v.is_null()) return "-";
  const double x = v.get<double>();
  if (term == "errors" || term == "throughput") return format_number(100.0 * x, 3) + "%";
  return loadgen::format_latency_ns(x);
}

std::string change(const json& value, const json& low, const json& high) {
  if (value.is_null()) return "-";
  std::string s = (value.get<double>() >= 0 ? "+" : "-") +
                  loadgen::format_latency_ns(std::abs(value.get<double>()));
  if (!low.is_null() && !high.is_null()) {
    s += " [" + loadgen::format_latency_ns(low.get<double>()) + ", " +
         loadgen::format_latency_ns(high.get<double>()) + "]";
  }
  return s;
}

std::string decides(const json& c) {
  std::string s;
  if (!c["extra_ns"].is_null()) {
    s = "+" +
        common::format_duration_ns(c["extra_ns"].get<std::int64_t>() / 1'000'000 * 1'000'000) +
        " would decide";
  }
  if (!c["note"].is_null()) s += (s.empty() ? "" : "; ") + c["note"].get<std::string>();
  return s;
}

}  // namespace

json experiments_json(db::Database& db, std::int64_t run_id) {
  json out = json::array();
  for (const db::ExperimentRow& row : db::run_experiments(db, run_id)) {
    const db::Experiment& e = row.experiment;
    out.push_back({{"name", e.name},
                   {"verdict", e.verdict},
                   {"links", json::parse(e.links_json, nullptr, false)},
                   {"spec", json::parse(e.spec_json, nullptr, false)},
                   {"fault_start_ns", e.fault_start_ns},
                   {"fault_end_ns", e.fault_end_ns},
                   {"mean_delay_ns", or_null(e.mean_delay_ns)},
                   {"observed_change_ns", or_null(e.observed_change_ns)},
                   {"observed_ci_low_ns", or_null(e.observed_ci_low_ns)},
                   {"observed_ci_high_ns", or_null(e.observed_ci_high_ns)},
                   {"predicted_change_ns", or_null(e.predicted_change_ns)},
                   {"predicted_ci_low_ns", or_null(e.predicted_ci_low_ns)},
                   {"predicted_ci_high_ns", or_null(e.predicted_ci_high_ns)},
                   {"checks", checks_json(row.checks)}});
  }
  return out;
}

void print_experiments(const json& experiments, std::ostream& out) {
  if (experiments.empty()) return;
  TextTable summary({"experiment", "verdict", "links", "mean delay", "observed change",
                     "predicted by gradients"});
  TextTable checks({"experiment", "window", "term", "bound", "value", "ci_low", "ci_high",
                    "verdict", "to decide"});
  for (const json& e : experiments) {
    std::string links;
    for (const json& l : e["links"]) links += (links.empty() ? "" : ", ") + l.get<std::string>();
    const json& delay = e["mean_delay_ns"];
    summary.add_row(
        {e["name"].get<std::string>(), e["verdict"].get<std::string>(), links,
         delay.is_null() ? "-" : loadgen::format_latency_ns(delay.get<double>()),
         change(e["observed_change_ns"], e["observed_ci_low_ns"], e["observed_ci_high_ns"]),
         change(e["predicted_change_ns"], e["predicted_ci_low_ns"], e["predicted_ci_high_ns"])});
    for (const json& c : e["checks"]) {
      const std::string term = c["term"].get<std::string>();
      checks.add_row({e["name"].get<std::string>(), c["window"].get<std::string>(), term,
                      term_value(term, c["bound"]), term_value(term, c["value"]),
                      term_value(term, c["ci_low"]), term_value(term, c["ci_high"]),
                      c["verdict"].get<std::string>(), decides(c)});
    }
  }
  out << "\nexperiments\n";
  summary.print(out);
  out << '\n';
  checks.print(out);
}

}  // namespace nabla::coordinator
