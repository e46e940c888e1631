// Two runs side by side: the gradients of the links and types both measured
// (matched by the link's stored label, which is stable across runs), with
// the delta and whether the CIs overlap; and the percentiles both stored
// (matched by type, metric, rate and percentile).
#include <tuple>

#include "charts.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

// Closed intervals [a_lo, a_hi] and [b_lo, b_hi] share a point.
bool overlap(double a_lo, double a_hi, double b_lo, double b_hi) {
  return a_lo <= b_hi && b_lo <= a_hi;
}

json compare_gradients(const StoredRun& a, const StoredRun& b, json& chart_rows) {
  json rows = json::array();
  for (const db::GradientRow& ga : a.gradients) {
    for (const db::GradientRow& gb : b.gradients) {
      if (ga.link.label != gb.link.label || ga.type != gb.type) continue;
      const db::Gradient& x = ga.gradient;
      const db::Gradient& y = gb.gradient;
      const double xl = x.ci_low.value_or(x.value), xh = x.ci_high.value_or(x.value);
      const double yl = y.ci_low.value_or(y.value), yh = y.ci_high.value_or(y.value);
      rows.push_back({{"link", ga.link.label},
                      {"type", ga.type},
                      {"a", x.value},
                      {"a_ci_low", or_null(x.ci_low)},
                      {"a_ci_high", or_null(x.ci_high)},
                      {"b", y.value},
                      {"b_ci_low", or_null(y.ci_low)},
                      {"b_ci_high", or_null(y.ci_high)},
                      {"delta", y.value - x.value},
                      {"cis_overlap", overlap(xl, xh, yl, yh)}});
      const std::string key = ga.link.label + " · " + ga.type;
      chart_rows.push_back({{"key", key},
                            {"run", "run " + std::to_string(a.info.id)},
                            {"value", x.value},
                            {"low", xl},
                            {"high", xh}});
      chart_rows.push_back({{"key", key},
                            {"run", "run " + std::to_string(b.info.id)},
                            {"value", y.value},
                            {"low", yl},
                            {"high", yh}});
    }
  }
  return rows;
}

auto tail_key(const db::TailResultRow& t) {
  return std::make_tuple(t.type.value_or("*"), t.result.metric, t.result.rate_rps,
                         t.result.percentile);
}

json compare_percentiles(const StoredRun& a, const StoredRun& b, json& chart_rows) {
  json rows = json::array();
  for (const db::TailResultRow& ta : a.tail_results) {
    for (const db::TailResultRow& tb : b.tail_results) {
      if (tail_key(ta) != tail_key(tb)) continue;
      const db::TailResult& x = ta.result;
      const db::TailResult& y = tb.result;
      json row{{"type", ta.type.value_or("*")},
               {"metric", x.metric},
               {"rate_rps", x.rate_rps},
               {"percentile", x.percentile},
               {"a_ns", or_null(x.value_ns)},
               {"a_ci_low_ns", or_null(x.ci_low_ns)},
               {"a_ci_high_ns", or_null(x.ci_high_ns)},
               {"b_ns", or_null(y.value_ns)},
               {"b_ci_low_ns", or_null(y.ci_low_ns)},
               {"b_ci_high_ns", or_null(y.ci_high_ns)},
               {"delta_ns", nullptr},
               {"cis_overlap", nullptr}};
      if (x.value_ns && y.value_ns) {
        row["delta_ns"] = *y.value_ns - *x.value_ns;
        row["cis_overlap"] =
            overlap(x.ci_low_ns.value_or(*x.value_ns), x.ci_high_ns.value_or(*x.value_ns),
                    y.ci_low_ns.value_or(*y.value_ns), y.ci_high_ns.value_or(*y.value_ns));
        const std::string key = std::get<0>(tail_key(ta)) + " " + x.metric + " p" +
                                short_number(x.percentile) + " @" + short_number(x.rate_rps);
        for (const auto& [run, r] : {std::pair{&a, &x}, std::pair{&b, &y}}) {
          chart_rows.push_back({{"key", key},
                                {"run", "run " + std::to_string(run->info.id)},
                                {"value", us(*r->value_ns)},
                                {"low", us(r->ci_low_ns.value_or(*r->value_ns))},
                                {"high", us(r->ci_high_ns.value_or(*r->value_ns))}});
        }
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

json comparison_section(const StoredRun& a, const StoredRun& b) {
  json gradient_points = json::array(), percentile_points = json::array();
  json gradients = compare_gradients(a, b, gradient_points);
  json percentiles = compare_percentiles(a, b, percentile_points);
  json charts = json::array();
  if (!gradient_points.empty()) {
    charts.push_back(chart(
        "compare-gradients", "gradients, run A and run B",
        layered(gradient_points, estimate_with_ci_layers("key", "link · type", "gradient", "run"),
                640, 30 + 36 * static_cast<int>(gradients.size()))));
  }
  if (!percentile_points.empty()) {
    charts.push_back(
        chart("compare-percentiles", "percentiles, run A and run B",
              layered(percentile_points,
                      estimate_with_ci_layers("key", "percentile", "latency (µs)", "run"), 640,
                      30 + 36 * static_cast<int>(percentiles.size()))));
  }
  return {{"a", a.info.id},
          {"b", b.info.id},
          {"gradients", gradients},
          {"percentiles", percentiles},
          {"charts", charts}};
}

}  // namespace nabla::report::detail
