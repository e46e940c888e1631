// The campaign sections that are not per link: the link graph, the training
// statistics and the injections, requested against actual.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "charts.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

// Hosts on a circle, in the order the run lists them. Vega-Lite has no
// graph layout; with the few hosts of a campaign a circle keeps every link
// visible and the two directions of a pair apart (offset_edge).
std::map<std::string, std::pair<double, double>> circle_layout(const json& nodes) {
  std::map<std::string, std::pair<double, double>> at;
  const double n = static_cast<double>(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const double angle = std::numbers::pi / 2 - 2 * std::numbers::pi * static_cast<double>(i) / n;
    at[nodes[i]["name"].get<std::string>()] = {std::cos(angle), std::sin(angle)};
  }
  return at;
}

// Magnitude of a link: the largest |gradient| over its types.
std::map<std::int64_t, double> link_magnitudes(const StoredRun& run) {
  std::map<std::int64_t, double> out;
  for (const db::GradientRow& g : run.gradients) {
    out[g.link.id] = std::max(out[g.link.id], std::abs(g.gradient.value));
  }
  return out;
}

std::string gradient_labels(const StoredRun& run, std::int64_t link_id) {
  std::string text;
  for (const db::GradientRow& g : run.gradients) {
    if (g.link.id != link_id) continue;
    char value[32];
    std::snprintf(value, sizeof value, "%.2f", g.gradient.value);
    text += (text.empty() ? "" : ", ") + g.type + " " + value;
  }
  return text.empty() ? "not measured" : text;
}

json graph_edges(const StoredRun& run, const std::map<std::string, std::pair<double, double>>& at) {
  const auto magnitude = link_magnitudes(run);
  json edges = json::array();
  for (const db::LinkRow& l : run.links) {
    auto [x1, y1] = at.at(l.link.src_host);
    auto [x2, y2] = at.at(l.link.dst_host);
    const double dx = x2 - x1, dy = y2 - y1;
    const double length = std::max(std::hypot(dx, dy), 1e-9);
    // One-way links: each direction is drawn to its own right, so A->B and
    // B->A do not overlap.
    const double ox = 0.06 * dy / length, oy = -0.06 * dx / length;
    x1 += ox, x2 += ox, y1 += oy, y2 += oy;
    const auto m = magnitude.find(l.id);
    edges.push_back({{"link", l.label},
                     {"x", x1},
                     {"y", y1},
                     {"x2", x2},
                     {"y2", y2},
                     {"arrow_x", x1 + 0.8 * (x2 - x1)},
                     {"arrow_y", y1 + 0.8 * (y2 - y1)},
                     {"label_x", x1 + 0.5 * (x2 - x1) + ox},
                     {"label_y", y1 + 0.5 * (y2 - y1) + oy},
                     // The label starts at the link and runs away from it.
                     {"label_align", ox >= 0 ? "left" : "right"},
                     {"angle", 90.0 - std::atan2(dy, dx) * 180.0 / std::numbers::pi},
                     {"magnitude", m == magnitude.end() ? json(nullptr) : json(m->second)},
                     {"gradients", gradient_labels(run, l.id)}});
  }
  return edges;
}

json graph_spec(const json& nodes, const json& edges,
                const std::map<std::string, std::pair<double, double>>& at) {
  json points = json::array();
  for (const json& n : nodes) {
    const auto [x, y] = at.at(n["name"].get<std::string>());
    std::string processes;
    for (const json& p : n["processes"])
      processes += (processes.empty() ? "" : ", ") + p.get<std::string>();
    points.push_back({{"name", n["name"]}, {"x", x}, {"y", y}, {"processes", processes}});
  }
  const json scale{{"domain", json::array({-1.4, 1.4})}};
  const json axis_off{{"axis", nullptr}, {"scale", scale}};
  auto pos = [&](const char* field) {
    json c{{"field", field}, {"type", "quantitative"}};
    c.update(axis_off);
    return c;
  };
  const json color{{"field", "magnitude"},
                   {"type", "quantitative"},
                   {"title", "max |gradient|"},
                   {"scale", {{"range", json::array({"#b0b0b0", "#c0392b"})}}}};
  const json tip = json::array(
      {channel("link", "nominal", "link"), channel("gradients", "nominal", "gradients")});
  json rules{{"data", {{"values", edges}}},
             {"mark", {{"type", "rule"}}},
             {"encoding",
              {{"x", pos("x")},
               {"y", pos("y")},
               {"x2", {{"field", "x2"}}},
               {"y2", {{"field", "y2"}}},
               {"color", color},
               {"strokeWidth",
                {{"field", "magnitude"},
                 {"type", "quantitative"},
                 {"legend", nullptr},
                 {"scale", {{"range", json::array({1.5, 8})}}}}},
               {"tooltip", tip}}}};
  json arrows{{"data", {{"values", edges}}},
              {"mark",
               {{"type", "point"},
                {"shape", "triangle-up"},
                {"filled", true},
                {"size", 260},
                {"opacity", 1}}},
              {"encoding",
               {{"x", pos("arrow_x")},
                {"y", pos("arrow_y")},
                {"color", color},
                {"angle", {{"field", "angle"}, {"type", "quantitative"}, {"scale", nullptr}}},
                {"tooltip", tip}}}};
  auto labels = [&](const char* align) {
    return json{
        {"data", {{"values", edges}}},
        {"transform",
         json::array({{{"filter", std::string("datum.label_align == '") + align + "'"}}})},
        {"mark",
         {{"type", "text"}, {"fontSize", 10}, {"align", align}, {"dx", align[0] == 'l' ? 4 : -4}}},
        {"encoding",
         {{"x", pos("label_x")}, {"y", pos("label_y")}, {"text", {{"field", "gradients"}}}}}};
  };
  json hosts{{"data", {{"values", points}}},
             {"mark", {{"type", "circle"}, {"size", 900}, {"color", "#2c7fb8"}}},
             {"encoding",
              {{"x", pos("x")},
               {"y", pos("y")},
               {"tooltip", json::array({channel("name", "nominal", "host"),
                                        channel("processes", "nominal", "processes")})}}}};
  json names{{"data", {{"values", points}}},
             {"mark", {{"type", "text"}, {"dy", -24}, {"fontWeight", "bold"}}},
             {"encoding", {{"x", pos("x")}, {"y", pos("y")}, {"text", {{"field", "name"}}}}}};
  json procs{{"data", {{"values", points}}},
             {"mark", {{"type", "text"}, {"dy", 26}, {"fontSize", 10}}},
             {"encoding", {{"x", pos("x")}, {"y", pos("y")}, {"text", {{"field", "processes"}}}}}};
  return {{"width", 560},
          {"height", 560},
          {"layer",
           json::array({rules, arrows, labels("left"), labels("right"), hosts, names, procs})}};
}

double quantile(std::vector<std::int64_t>& v, double q) {
  const auto i = static_cast<std::size_t>(std::llround(q * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]);
}

}  // namespace

json link_graph_section(const StoredRun& run) {
  const json nodes = run_header(run)["nodes"];
  const auto at = circle_layout(nodes);
  const json edges = graph_edges(run, at);
  return {{"nodes", nodes},
          {"edges", edges},
          {"charts", json::array({chart("graph", "link graph: one-way links, gradients per type",
                                        graph_spec(nodes, edges, at))})}};
}

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
