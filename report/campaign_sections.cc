// The campaign sections that are not per link: the training statistics and
// the injections, requested against actual.
#include <algorithm>
#include <cmath>

#include "charts.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

double quantile(std::vector<std::int64_t>& v, double q) {
  const auto i = static_cast<std::size_t>(std::llround(q * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]);
}

}  // namespace

json training_section(db::Database& db, const StoredRun& run) {
  for (const db::PhaseRow& p : run.phases) {
    if (p.phase.kind != db::PhaseKind::kTraining) continue;
    std::map<std::string, std::vector<std::int64_t>> by_type;
    for (const db::Sample& s : db::phase_samples(db, p.id)) {
      const auto name = run.type_names.find(s.type_id);
      by_type[name == run.type_names.end() ? std::to_string(s.type_id) : name->second].push_back(
          s.latency_ns);
    }
    const double window_s =
        p.phase.ended_ns ? static_cast<double>(*p.phase.ended_ns - p.phase.started_ns) / 1e9 : 0;
    json rows = json::array();
    for (auto& [type, v] : by_type) {
      double sum = 0;
      for (const std::int64_t x : v) sum += static_cast<double>(x);
      rows.push_back({type, v.size(), window_s > 0 ? static_cast<double>(v.size()) / window_s : 0.0,
                      ms(sum / static_cast<double>(v.size())), ms(quantile(v, 0.5)),
                      ms(quantile(v, 0.99))});
    }
    return {{"phase_id", p.id},
            {"bin_width_ns", or_null(p.phase.bin_width_ns)},
            {"bins", or_null(p.phase.bins)},
            {"chunks", or_null(p.phase.chunks)},
            {"k_d", or_null(p.phase.k_d)},
            {"amplitude_ns", or_null(p.phase.amplitude_ns)},
            {"samples", p.samples},
            {"by_type",
             table({"type", "samples", "rate (rps)", "mean (ms)", "p50 (ms)", "p99 (ms)"}, rows)}};
  }
  return nullptr;
}

json injections_section(const StoredRun& run) {
  json rows = json::array(), values = json::array();
  for (const db::InjectionRow& r : run.injections) {
    const db::Injection& i = r.injection;
    const std::string name = "#" + std::to_string(r.id) + " " + r.link_label.value_or("-");
    rows.push_back({r.id, r.link_label.value_or("-"), i.node.value_or("-"), i.waveform,
                    ms(static_cast<double>(i.requested_delay_ns)),
                    i.actual_mean_ns ? json(ms(*i.actual_mean_ns)) : json(nullptr),
                    i.actual_p99_ns ? json(ms(*i.actual_p99_ns)) : json(nullptr), i.packets,
                    i.delayed, i.dropped});
    values.push_back({{"injection", name},
                      {"which", "requested"},
                      {"delay_ms", ms(static_cast<double>(i.requested_delay_ns))}});
    if (i.actual_mean_ns) {
      values.push_back(
          {{"injection", name}, {"which", "actual"}, {"delay_ms", ms(*i.actual_mean_ns)}});
    }
  }
  if (rows.empty()) return nullptr;
  json spec{{"width", 640},
            {"height", {{"step", 12}}},
            {"data", {{"values", values}}},
            {"mark", "bar"},
            {"encoding",
             {{"y", channel("injection", "nominal", "injection")},
              {"yOffset", channel("which", "nominal", "")},
              {"x", channel("delay_ms", "quantitative", "delay (ms); actual = mean step Δl")},
              {"color", channel("which", "nominal", "delay")},
              {"tooltip", json::array({channel("injection", "nominal", "injection"),
                                       channel("which", "nominal", "delay"),
                                       number_channel("delay_ms", "ms")})}}}};
  return {{"table", table({"id", "link", "node", "waveform", "requested (ms)", "actual Δl (ms)",
                           "actual p99 (ms)", "packets", "delayed", "dropped"},
                          rows)},
          {"charts",
           json::array({chart("injections", "injections: requested vs actual delay", spec)})}};
}

}  // namespace nabla::report::detail
