// The tail-latency sections of a `nabla load` run: percentiles with CI bars,
// the latency-load curve of a sweep with where the verdict turns n/a, the
// histogram of sojourn against server-reported service time, lateness, and
// the self-correcting controller's checks of each rate point with their
// numbers (runs stored before schema version 7 have none and say so).
//
// What the database does not store is not drawn: the client's in-flight
// times and its lateness quantiles are printed by `nabla load` but not kept;
// the page draws the stored late-send counts instead.
#include <algorithm>
#include <cmath>
#include <set>

#include "charts.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

std::string type_of(const db::TailResultRow& t) {
  return t.type.value_or("*");
}

json tail_rows(const StoredRun& run) {
  json rows = json::array();
  for (const db::TailResultRow& t : run.tail_results) {
    const db::TailResult& r = t.result;
    const json reasons = json::parse(r.reasons_json, nullptr, false);
    rows.push_back({{"type", type_of(t)},
                    {"metric", r.metric},
                    {"rate_rps", r.rate_rps},
                    {"throughput_rps", or_null(r.throughput_rps)},
                    {"percentile", r.percentile},
                    {"p", "p" + short_number(r.percentile)},
                    {"value_ns", or_null(r.value_ns)},
                    {"ci_low_ns", or_null(r.ci_low_ns)},
                    {"ci_high_ns", or_null(r.ci_high_ns)},
                    {"value_us", r.value_ns ? json(us(*r.value_ns)) : json(nullptr)},
                    {"low_us", r.ci_low_ns ? json(us(*r.ci_low_ns)) : json(nullptr)},
                    {"high_us", r.ci_high_ns ? json(us(*r.ci_high_ns)) : json(nullptr)},
                    {"confidence", r.confidence},
                    {"verdict", r.ok ? "ok" : "n/a"},
                    {"reasons", reasons.is_discarded() ? json::array() : reasons},
                    {"samples", or_null(r.samples)},
                    {"late_sends", or_null(r.late_sends)}});
  }
  return rows;
}

json percentile_chart(const json& rows) {
  json values = json::array();
  for (const json& r : rows) {
    if (r["value_us"].is_null()) continue;
    json v = r;
    v["value"] = r["value_us"];
    v["low"] = r["low_us"].is_null() ? r["value_us"] : r["low_us"];
    v["high"] = r["high_us"].is_null() ? r["value_us"] : r["high_us"];
    v["series"] = r["type"].get<std::string>() + " " + r["metric"].get<std::string>() + " @" +
                  short_number(r["rate_rps"].get<double>()) + " rps";
    values.push_back(std::move(v));
  }
  return layered(values,
                 estimate_with_ci_layers("p", "percentile", "latency (µs), CI bars", "series"), 640,
                 260);
}

json load_curve_chart(const json& rows) {
  // The answer's metric: 'response' since it exists, 'sojourn' in older runs.
  std::string answer = "sojourn";
  for (const json& r : rows) {
    if (r["metric"] == "response") answer = "response";
  }
  json values = json::array();
  for (const json& r : rows) {
    if (r["type"] != "*" || r["metric"] != answer) continue;
    json v = r;
    v["load_rps"] = r["throughput_rps"].is_null() ? r["rate_rps"] : r["throughput_rps"];
    std::string reasons;
    for (const json& why : r["reasons"])
      reasons += (reasons.empty() ? "" : "; ") + why.get<std::string>();
    v["why"] = reasons;
    values.push_back(std::move(v));
  }
  const json x = channel("load_rps", "quantitative", "achieved load (requests/s)");
  const json color = channel("p", "nominal", "percentile");
  json band{{"transform", json::array({{{"filter", "datum.verdict == 'ok'"}}})},
            {"mark", {{"type", "area"}, {"opacity", 0.2}}},
            {"encoding",
             {{"x", x},
              {"y", channel("low_us", "quantitative", "latency (µs)")},
              {"y2", {{"field", "high_us"}}},
              {"color", color}}}};
  json line{{"transform", json::array({{{"filter", "datum.verdict == 'ok'"}}})},
            {"mark", {{"type", "line"}, {"point", true}}},
            {"encoding",
             {{"x", x},
              {"y", channel("value_us", "quantitative", "latency (µs)")},
              {"color", color},
              {"tooltip",
               json::array({channel("p", "nominal", "percentile"),
                            number_channel("load_rps", "load (rps)"),
                            number_channel("value_us", "µs"), number_channel("low_us", "CI low"),
                            number_channel("high_us", "CI high")})}}}};
  json refused{
      {"transform", json::array({{{"filter", "datum.verdict != 'ok'"}}})},
      {"mark", {{"type", "rule"}, {"color", "#c0392b"}, {"strokeDash", json::array({4, 3})}}},
      {"encoding",
       {{"x", x},
        {"tooltip", json::array({channel("p", "nominal", "percentile"),
                                 number_channel("load_rps", "load (rps)"),
                                 channel("why", "nominal", "n/a because")})}}}};
  return layered(values, json::array({band, line, refused}), 640, 260);
}

// Log-spaced histogram of the stored response and service times over the
// run's samples (runs stored before schema version 6 hold the sojourn from
// the intended send instead, docs/schema.md).
json histogram_chart(db::Database& db, const StoredRun& run) {
  std::vector<double> sojourn, service;
  for (const db::PhaseRow& p : run.phases) {
    for (const db::Sample& s : db::phase_samples(db, p.id)) {
      sojourn.push_back(static_cast<double>(s.latency_ns));
      if (s.service_ns) service.push_back(static_cast<double>(*s.service_ns));
    }
  }
  if (sojourn.empty()) return nullptr;
  double lo = *std::min_element(sojourn.begin(), sojourn.end());
  double hi = *std::max_element(sojourn.begin(), sojourn.end());
  for (const double v : service) lo = std::min(lo, v), hi = std::max(hi, v);
  lo = std::max(lo, 1.0);
  hi = std::max(hi, lo * 1.01);
  constexpr int kBins = 60;
  const double step = std::log(hi / lo) / kBins;
  json values = json::array();
  auto add = [&](const std::vector<double>& v, const char* metric) {
    std::vector<std::int64_t> counts(kBins, 0);
    for (const double x : v) {
      const int b = static_cast<int>(std::log(std::max(x, lo) / lo) / step);
      ++counts[static_cast<std::size_t>(std::clamp(b, 0, kBins - 1))];
    }
    for (int b = 0; b < kBins; ++b) {
      if (counts[static_cast<std::size_t>(b)] == 0) continue;
      values.push_back({{"metric", metric},
                        {"from_us", us(lo * std::exp(b * step))},
                        {"to_us", us(lo * std::exp((b + 1) * step))},
                        {"count", counts[static_cast<std::size_t>(b)]}});
    }
  };
  add(sojourn, "response (stored samples)");
  add(service, "service (server-reported)");
  return {
      {"width", 640},
      {"height", 220},
      {"data", {{"values", values}}},
      {"mark", {{"type", "bar"}, {"opacity", 0.6}}},
      {"encoding",
       {{"x",
         {{"field", "from_us"},
          {"type", "quantitative"},
          {"title", "latency (µs, log scale)"},
          {"scale", {{"type", "log"}}}}},
        {"x2", {{"field", "to_us"}}},
        {"y", {{"field", "count"}, {"type", "quantitative"}, {"title", "requests"}}},
        {"y2", {{"datum", 0}}},
        {"color", channel("metric", "nominal", "time")},
        {"tooltip",
         json::array({channel("metric", "nominal", "time"), number_channel("from_us", "from (µs)"),
                      number_channel("to_us", "to (µs)"), number_channel("count", "requests")})}}}};
}

// Late sends per rate point: the first stored row of each rate holds them.
json lateness_table(const json& rows) {
  json out = json::array();
  std::set<double> seen;
  for (const json& r : rows) {
    if (!seen.insert(r["rate_rps"].get<double>()).second) continue;
    const json& n = r["samples"];
    const json& late = r["late_sends"];
    out.push_back({r["rate_rps"], r["throughput_rps"], n, late,
                   n.is_number() && late.is_number() && n.get<double>() > 0
                       ? json(100.0 * late.get<double>() / n.get<double>())
                       : json(nullptr)});
  }
  return table({"rate (rps)", "throughput (rps)", "samples", "late sends", "late (%)"}, out);
}

// The controller's checks, one object per (rate point, check) as stored.
json checks_rows(const StoredRun& run) {
  json out = json::array();
  for (const db::LoadCheck& c : run.load_checks) {
    out.push_back({{"rate_rps", c.rate_rps},
                   {"check", c.name},
                   {"outcome", c.outcome},
                   {"statistic", or_null(c.statistic)},
                   {"threshold", or_null(c.threshold)},
                   {"p_value", or_null(c.p_value)},
                   {"samples", or_null(c.samples)},
                   {"detail", c.detail}});
  }
  return out;
}

}  // namespace

json tail_section(db::Database& db, const StoredRun& run) {
  if (run.tail_results.empty()) return nullptr;
  const json rows = tail_rows(run);
  std::set<double> rates;
  for (const db::TailResultRow& t : run.tail_results) rates.insert(t.result.rate_rps);
  json charts =
      json::array({chart("tail-percentiles", "percentiles with CIs", percentile_chart(rows))});
  json turns_na = nullptr;
  if (rates.size() > 1) {
    charts.push_back(chart("tail-load-curve", "latency against load (CI bands; n/a in red)",
                           load_curve_chart(rows)));
  }
  for (const json& r : rows) {
    if (r["verdict"] == "n/a" && turns_na.is_null()) {
      turns_na = {
          {"rate_rps", r["rate_rps"]}, {"percentile", r["percentile"]}, {"reasons", r["reasons"]}};
    }
  }
  if (json h = histogram_chart(db, run); !h.is_null()) {
    charts.push_back(chart("tail-histogram", "sojourn vs service time", std::move(h)));
  }
  return {{"results", rows},
          {"turns_na", turns_na},
          {"lateness", lateness_table(rows)},
          {"checks", checks_rows(run)},
          {"checks_note",
           run.load_checks.empty()
               ? json("this run was stored before nabla kept the controller's checks (schema "
                      "version 7); its verdicts and reasons are in the results table")
               : json(nullptr)},
          {"not_stored",
           "nabla load prints in-flight times and lateness quantiles but does not store them; "
           "the table shows the stored late-send counts"},
          {"charts", charts}};
}

}  // namespace nabla::report::detail
