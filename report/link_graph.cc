// The link graph, laid out by Graphviz: hosts as clusters, the processes the
// run's links name as nodes (host:port; host:* for an ephemeral port), one
// edge per one-way link labelled with its gradient per type, its width and
// colour by the link's largest |gradient|. `dot -Tsvg` lays it out when the
// report is written (docs/report.md says why `dot` and not libgvc); edge
// labels are placed by dot as part of the layout, so they take room of their
// own and do not overlap nodes or each other. Requests rank the layout
// (client to server, left to right); responses follow without ranking it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "charts.hh"
#include "nabla/common/graphviz.hh"
#include "page_model.hh"

namespace nabla::report::detail {
namespace {

// Edge widths in points: an unmeasured link and the run's largest gradient.
constexpr double kThinPen = 1.0;
constexpr double kThickPen = 6.0;

std::string process_name(const std::string& host, int port) {
  return host + ":" + (port > 0 ? std::to_string(port) : "*");
}

// The largest |gradient| per link id.
std::map<std::int64_t, double> link_magnitudes(const StoredRun& run) {
  std::map<std::int64_t, double> out;
  for (const db::GradientRow& g : run.gradients) {
    out[g.link.id] = std::max(out[g.link.id], std::abs(g.gradient.value));
  }
  return out;
}

// "/auth 1.03" per type, one line each; "not measured" without gradients.
std::vector<std::string> gradient_lines(const StoredRun& run, std::int64_t link_id) {
  std::vector<std::string> lines;
  for (const db::GradientRow& g : run.gradients) {
    if (g.link.id != link_id) continue;
    char value[32];
    // No "-0.00": a value that rounds to zero is written as 0.00.
    const double v = std::abs(g.gradient.value) < 0.005 ? 0.0 : g.gradient.value;
    std::snprintf(value, sizeof value, "%.2f", v);
    lines.push_back(g.type + " " + value);
  }
  if (lines.empty()) lines.push_back("not measured");
  return lines;
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c == '&'   ? "&amp;"
           : c == '<' ? "&lt;"
           : c == '>' ? "&gt;"
           : c == '"' ? "&quot;"
                      : std::string(1, c);
  }
  return out;
}

// An HTML-like label, one table row per line: the cell padding spaces the
// lines further apart than a plain label's line height, so each line's text
// box (which a browser makes about 1.3 times the font size) stays clear of
// the next one's.
std::string label_table(const std::vector<std::string>& lines) {
  std::string out = "<<table border=\"0\" cellborder=\"0\" cellspacing=\"0\" cellpadding=\"2\">";
  for (const std::string& line : lines) out += "<tr><td>" + html_escaped(line) + "</td></tr>";
  return out + "</table>>";
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

// Grey for a gradient near zero to red for the run's largest.
std::string edge_colour(double fraction) {
  const auto mix = [&](int from, int to) {
    return static_cast<int>(std::lround(from + (to - from) * std::clamp(fraction, 0.0, 1.0)));
  };
  char hex[8];
  std::snprintf(hex, sizeof hex, "#%02x%02x%02x", mix(0x90, 0xc0), mix(0x90, 0x39),
                mix(0x90, 0x2b));
  return hex;
}

// Hosts in the run's order, each with its processes.
std::vector<std::pair<std::string, std::vector<std::string>>> hosts_and_processes(
    const StoredRun& run, const json& nodes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const json& n : nodes) out.push_back({n["name"].get<std::string>(), {}});
  auto add = [&](const std::string& host, int port) {
    for (auto& [name, processes] : out) {
      const std::string p = process_name(host, port);
      if (name == host && std::find(processes.begin(), processes.end(), p) == processes.end()) {
        processes.push_back(p);
      }
    }
  };
  for (const db::LinkRow& l : run.links) {
    add(l.link.src_host, l.link.src_port);
    add(l.link.dst_host, l.link.dst_port);
  }
  for (auto& [host, processes] : out) std::sort(processes.begin(), processes.end());
  return out;
}

// Requests flow left to right: in a host that serves and also calls out,
// an invisible edge puts its servers left of its client end.
void write_tier_order(std::ostream& dot, const std::string& host,
                      const std::vector<std::string>& processes) {
  const std::string client = process_name(host, 0);
  if (std::find(processes.begin(), processes.end(), client) == processes.end()) return;
  for (const std::string& p : processes) {
    if (p == client) continue;
    dot << "    " << common::dot_quote(p) << " -> " << common::dot_quote(client)
        << " [style=invis];\n";
  }
}

void write_clusters(std::ostream& dot, const StoredRun& run, const json& nodes) {
  std::size_t index = 0;
  for (const auto& [host, processes] : hosts_and_processes(run, nodes)) {
    if (processes.empty()) continue;
    dot << "  subgraph " << common::dot_quote("cluster_" + std::to_string(index++)) << " {\n"
        << "    label=" << common::dot_quote(host) << "; id=" << common::dot_quote("host_" + host)
        << ";\n";
    for (const std::string& p : processes) {
      dot << "    " << common::dot_quote(p) << " [label=" << common::dot_quote(p) << "];\n";
    }
    write_tier_order(dot, host, processes);
    dot << "  }\n";
  }
}

void write_edges(std::ostream& dot, const StoredRun& run) {
  const auto magnitude = link_magnitudes(run);
  double largest = 0;
  for (const auto& [link, m] : magnitude) largest = std::max(largest, m);
  for (const db::LinkRow& l : run.links) {
    const auto m = magnitude.find(l.id);
    const double fraction = m == magnitude.end() || largest <= 0 ? 0 : m->second / largest;
    dot << "  " << common::dot_quote(process_name(l.link.src_host, l.link.src_port)) << " -> "
        << common::dot_quote(process_name(l.link.dst_host, l.link.dst_port))
        << " [label=" << label_table(gradient_lines(run, l.id))
        << ", id=" << common::dot_quote("link_" + std::to_string(l.id))
        << ", tooltip=" << common::dot_quote(l.label)
        << ", penwidth=" << kThinPen + (kThickPen - kThinPen) * fraction
        << ", color=" << common::dot_quote(edge_colour(fraction))
        << (m == magnitude.end() ? ", style=dashed" : "")
        // A response (server port to ephemeral port) does not rank the
        // layout, so both directions of a connection run the same way.
        << (l.link.src_port > 0 && l.link.dst_port == 0 ? ", constraint=false" : "") << "];\n";
  }
}

}  // namespace

std::string link_graph_dot(const StoredRun& run, const json& nodes) {
  std::ostringstream dot;
  dot << "digraph nabla_links {\n"
         "  graph [rankdir=LR, nodesep=0.3, ranksep=0.6, fontname=\"Helvetica\", fontsize=13,"
         " style=rounded, color=\"#7a8fa6\"];\n"
         "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", color=\"#2c7fb8\","
         " fontname=\"Helvetica\", fontsize=11];\n"
         "  edge [fontname=\"Helvetica\", fontsize=10, arrowsize=0.7,"
         " decorate=true];\n";
  write_clusters(dot, run, nodes);
  write_edges(dot, run);
  dot << "}\n";
  return dot.str();
}

json link_graph_section(const StoredRun& run) {
  const json nodes = run_header(run)["nodes"];
  const std::string dot = link_graph_dot(run, nodes);
  json section{{"nodes", nodes}, {"dot", dot}, {"svg", nullptr}, {"error", nullptr}};
  json edges = json::array();
  const auto magnitude = link_magnitudes(run);
  for (const db::LinkRow& l : run.links) {
    const auto m = magnitude.find(l.id);
    edges.push_back({{"link_id", l.id},
                     {"link", l.label},
                     {"from", process_name(l.link.src_host, l.link.src_port)},
                     {"to", process_name(l.link.dst_host, l.link.dst_port)},
                     {"magnitude", m == magnitude.end() ? json(nullptr) : json(m->second)},
                     {"gradients", joined(gradient_lines(run, l.id))}});
  }
  section["edges"] = std::move(edges);
  try {
    section["svg"] = common::dot_to_svg(dot);
  } catch (const std::exception& e) {
    section["error"] = std::string("no link graph: ") + e.what();
  }
  return section;
}

}  // namespace nabla::report::detail
