#include "nabla/coordinator/predict.hh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

#include "nabla/analysis/distributions.hh"
#include "nabla/analysis/prediction.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/sqlite.hh"
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

std::vector<RunLink> run_links(db::Database& db, std::int64_t run_id) {
  db::Statement st(db,
                   "SELECT id, label, src_host, dst_host, proto, src_port, dst_port FROM links "
                   "WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  std::vector<RunLink> links;
  while (st.step()) {
    RunLink l{st.column_int64(0), st.column_text(1), st.column_text(2), st.column_text(3), {}};
    l.short_label =
        campaign_link_label(st.column_text(4), l.src_host, static_cast<int>(st.column_int64(5)),
                            l.dst_host, static_cast<int>(st.column_int64(6)));
    links.push_back(std::move(l));
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

std::string campaign_link_label(std::string_view proto, std::string_view src_host, int src_port,
                                std::string_view dst_host, int dst_port) {
  std::string s(proto);
  s += ' ';
  s += src_host;
  if (src_port != 0) s += ':' + std::to_string(src_port);
  s += " -> ";
  s += dst_host;
  if (dst_port != 0) s += ':' + std::to_string(dst_port);
  return s;
}

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

PredictionReport predict_run(db::Database& db, std::int64_t run_id,
                             const std::vector<LatencySet>& sets, double confidence) {
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("--confidence must be in (0, 1)");
  }
  {
    db::Statement st(db, "SELECT count(*) FROM runs WHERE id = ?");
    st.bind(1, run_id);
    st.step();
    if (st.column_int64(0) == 0) throw std::runtime_error("no run " + std::to_string(run_id));
  }
  PredictionReport report;
  report.run_id = run_id;
  report.confidence = confidence;
  const std::vector<RunLink> links = run_links(db, run_id);

  // Accumulated change per selected link id (two selectors may hit one link).
  struct Change {
    const RunLink* link = nullptr;
    double delta_ns = 0, delta_var = 0;
  };
  std::map<std::int64_t, Change> changes;
  for (const LatencySet& s : sets) {
    PredictionReport::Selection sel{s.selector, s.delta_ns, s.delta_stddev_ns, {}};
    for (const RunLink* l : select_links(links, s.selector)) {
      Change& c = changes[l->id];
      c.link = l;
      c.delta_ns += s.delta_ns;
      c.delta_var += s.delta_stddev_ns * s.delta_stddev_ns;
      sel.links.push_back(l->label);
    }
    report.selections.push_back(std::move(sel));
  }

  // Gradients by (type, link id).
  std::map<std::string, std::map<std::int64_t, StoredGradient>> gradients;
  {
    db::Statement st(db,
                     "SELECT g.link_id, tt.name, g.value, g.ci_low, g.ci_high, g.confidence "
                     "FROM gradients g JOIN transaction_types tt ON tt.id = g.type_id "
                     "WHERE g.run_id = ?");
    st.bind(1, run_id);
    while (st.step()) {
      StoredGradient g;
      g.value = st.column_double(2);
      const auto lo = st.optional_double(3), hi = st.optional_double(4);
      if (lo && hi) {
        const double z = analysis::normal_quantile((1 + st.column_double(5)) / 2);
        g.se = std::max(g.value - *lo, *hi - g.value) / z;
      }
      gradients[st.column_text(1)][st.column_int64(0)] = g;
    }
  }
  if (gradients.empty()) {
    throw std::runtime_error("run " + std::to_string(run_id) +
                             " has no gradients (is it a complete `nabla run`/`nabla demo`?)");
  }

  std::map<std::string, Running> baseline;
  {
    db::Statement st(db,
                     "SELECT tt.name, s.latency_ns FROM samples s "
                     "JOIN phases p ON p.id = s.phase_id "
                     "JOIN transaction_types tt ON tt.id = s.type_id "
                     "WHERE s.run_id = ? AND p.kind = 'training'");
    st.bind(1, run_id);
    while (st.step()) baseline[st.column_text(0)].add(static_cast<double>(st.column_int64(1)));
  }

  for (const auto& [type, by_link] : gradients) {
    TypePrediction tp;
    tp.type = type;
    const auto b = baseline.find(type);
    if (b == baseline.end() || b->second.n < 2) {
      tp.missing = "fewer than 2 training-phase samples of this type in the run";
      report.types.push_back(std::move(tp));
      continue;
    }
    tp.samples = b->second.n;
    tp.baseline_ns = b->second.mean;
    const double var = b->second.m2 / static_cast<double>(b->second.n - 1);
    tp.baseline_se_ns = std::sqrt(var / static_cast<double>(b->second.n));
    std::vector<analysis::LinkChange> link_changes;
    for (const auto& [link_id, c] : changes) {
      const auto g = by_link.find(link_id);
      if (g == by_link.end()) {
        tp.missing = "no gradient for this type on " + c.link->label;
        break;
      }
      link_changes.push_back(
          {c.delta_ns, c.delta_var, g->second.value, g->second.se * g->second.se});
      tp.terms.push_back(
          {c.link->label, g->second.value, g->second.se, c.delta_ns, g->second.value * c.delta_ns});
    }
    if (!tp.missing) {
      const analysis::Prediction p = analysis::predict_response_time(
          tp.baseline_ns, tp.baseline_se_ns * tp.baseline_se_ns, link_changes, confidence);
      tp.predicted_ns = p.rt_ns;
      tp.stddev_ns = p.stddev_ns;
      tp.ci_low_ns = p.ci_low_ns;
      tp.ci_high_ns = p.ci_high_ns;
    } else {
      tp.terms.clear();
    }
    report.types.push_back(std::move(tp));
  }
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
        terms.push_back({{"link", term.link},
                         {"gradient", term.gradient},
                         {"gradient_se", term.gradient_se},
                         {"delta_ns", term.delta_ns},
                         {"contribution_ns", term.contribution_ns}});
      }
      j["terms"] = std::move(terms);
    }
    types.push_back(std::move(j));
  }
  out["predictions"] = std::move(types);
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
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Predict mean response times per transaction type for new link latencies");
  cmd->add_option("--run", opts->run_id, "Run whose gradients and baseline to use")->required();
  cmd->add_option("--set", opts->sets,
                  "LINK=DELTA[~STDDEV], LINK = HOST->HOST (every link between them) or a "
                  "full link label; DELTA e.g. +20ms (repeatable)");
  cmd->add_option("--db", opts->db_path, "Run history database (opened read-only)");
  cmd->add_option("--confidence", opts->confidence, "Confidence of the intervals");
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->callback([opts] {
    std::vector<LatencySet> sets;
    for (const auto& s : opts->sets) sets.push_back(parse_latency_set(s));
    if (!std::filesystem::exists(opts->db_path)) {
      throw std::runtime_error("no database at '" + opts->db_path + "' (give --db FILE)");
    }
    db::Store store = db::Store::open_read_only(opts->db_path);
    const PredictionReport report =
        predict_run(store.database(), opts->run_id, sets, opts->confidence);
    if (opts->json) {
      std::cout << to_json(report).dump(2) << '\n';
    } else {
      print_prediction(report, std::cout);
    }
  });
}

}  // namespace nabla::coordinator
