// The fault experiments of a run: each as stored (campaign/experiment_rows.hh)
// and, per SLO term, a chart of every window's value with its CI against the
// term's bound, coloured by the window's verdict.
#include <set>

#include "charts.hh"
#include "nabla/campaign/experiment_rows.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

// Shares (errors, throughput) in percent, latencies in ms, as the page's
// tables show them.
bool is_share(const std::string& term) {
  return term == "errors" || term == "throughput";
}

double shown(const std::string& term, double v) {
  return is_share(term) ? 100 * v : ms(v);
}

json term_chart(const json& checks, const std::string& term) {
  const std::string unit = is_share(term) ? term + " (%)" : term + " (ms)";
  json values = json::array();
  double bound = 0;
  for (const json& c : checks) {
    if (c["term"] != term) continue;
    const double value = shown(term, c["value"].get<double>());
    bound = shown(term, c["bound"].get<double>());
    values.push_back(
        {{"window", c["window"]},
         {"verdict", c["verdict"]},
         {"value", value},
         {"low", c["ci_low"].is_number() ? shown(term, c["ci_low"].get<double>()) : value},
         {"high", c["ci_high"].is_number() ? shown(term, c["ci_high"].get<double>()) : value},
         {"bound", bound}});
  }
  const json windows = json::array({"baseline", "fault", "recovery"});
  json y = channel("window", "nominal", "window");
  y["sort"] = windows;
  const json color{{"field", "verdict"},
                   {"type", "nominal"},
                   {"title", "verdict"},
                   {"scale",
                    {{"domain", json::array({"pass", "fail", "inconclusive"})},
                     {"range", json::array({"#1e7b34", "#b00020", "#888888"})}}}};
  const json tooltip =
      json::array({channel("window", "nominal", "window"), number_channel("value", unit),
                   number_channel("low", "CI low"), number_channel("high", "CI high"),
                   number_channel("bound", "SLO bound"), channel("verdict", "nominal", "verdict")});
  json bars{{"mark", {{"type", "rule"}, {"strokeWidth", 2}}},
            {"encoding",
             {{"y", y},
              {"x", channel("low", "quantitative", unit)},
              {"x2", {{"field", "high"}}},
              {"color", color},
              {"tooltip", tooltip}}}};
  json points{{"mark", {{"type", "point"}, {"filled", true}, {"size", 80}}},
              {"encoding",
               {{"y", y},
                {"x", channel("value", "quantitative", unit)},
                {"color", color},
                {"tooltip", tooltip}}}};
  json slo{{"mark", {{"type", "rule"}, {"color", "#b00020"}, {"strokeDash", json::array({5, 3})}}},
           {"encoding",
            {{"x", channel("bound", "quantitative", unit)},
             {"tooltip", json::array({number_channel("bound", "SLO bound")})}}}};
  return layered(values, json::array({bars, points, slo}), 520, 110);
}

}  // namespace

json experiments_section(db::Database& db, const StoredRun& run) {
  json experiments = campaign::stored_experiments_json(db, run.info.id);
  for (json& e : experiments) {
    std::vector<std::string> terms;
    std::set<std::string> seen;
    for (const json& c : e["checks"]) {
      const std::string term = c["term"].get<std::string>();
      if (seen.insert(term).second) terms.push_back(term);
    }
    json charts = json::array();
    for (const std::string& term : terms) {
      charts.push_back(chart("experiment-slo",
                             e["name"].get<std::string>() + ": " + term +
                                 " per window against its SLO bound (dashed), CI bars",
                             term_chart(e["checks"], term)));
    }
    e["charts"] = std::move(charts);
  }
  return experiments;
}

}  // namespace nabla::report::detail
