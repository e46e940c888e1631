// The experiments section of `nabla runs show`; see runs_experiments.hh.
#include "runs_experiments.hh"

#include <cmath>

#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/loadgen/controller_checks.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

// A term's number as people read it: latencies with their unit, shares and
// changes in percent.
std::string term_value(const std::string& term, const json& v) {
  if (v.is_null()) return "-";
  const double x = v.get<double>();
  if (term == "errors" || term == "throughput") return format_number(100.0 * x, 3) + "%";
  return common::format_latency_ns(x);
}

std::string change(const json& value, const json& low, const json& high) {
  if (value.is_null()) return "-";
  std::string s = (value.get<double>() >= 0 ? "+" : "-") +
                  common::format_latency_ns(std::abs(value.get<double>()));
  if (!low.is_null() && !high.is_null()) {
    s += " [" + common::format_latency_ns(low.get<double>()) + ", " +
         common::format_latency_ns(high.get<double>()) + "]";
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
         delay.is_null() ? "-" : common::format_latency_ns(delay.get<double>()),
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
