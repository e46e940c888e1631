#pragma once
// The parts of a report page's data model, one builder per section; shared
// by the files of report/ only. Every builder reads through db/reads.hh and
// returns JSON: plain values (the numbers as stored), Vega-Lite specs
// (charts.hh) and tables the page script renders.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/json_null.hh"
#include "nabla/db/reads.hh"

namespace nabla::db {
class Database;
}

namespace nabla::report::detail {

using nlohmann::json;

// What one run stored, read once and shared by the section builders.
struct StoredRun {
  db::RunInfo info;
  std::optional<db::RunSummary> summary;
  std::optional<db::Campaign> campaign;
  std::vector<db::Node> nodes;
  std::vector<db::LinkRow> links;
  std::vector<db::PhaseRow> phases;
  std::vector<db::InjectionRow> injections;
  std::vector<db::GradientRow> gradients;
  std::vector<db::TailResultRow> tail_results;
  std::vector<db::LoadCheck> load_checks;          // none in runs before schema version 7
  std::map<std::int64_t, std::string> type_names;  // every type in the database
};

StoredRun read_stored_run(db::Database& db, std::int64_t run_id);

using common::or_null;

// A table the page renders: {"columns": [...], "rows": [[...], ...]}.
json table(std::vector<std::string> columns, json rows);

// The run's header: status, seed, duration, nodes, campaign file, warnings.
json run_header(const StoredRun& run);
// Sentences naming what a run that stopped early did not store.
std::vector<std::string> missing_parts(const StoredRun& run);

// The first section, the answer: the gradient matrix (link x type) with CIs
// and truth verdicts, the links that cost each type the most, the run's
// verdicts and warnings, and a status line that names what failed.
json answer_section(db::Database& db, const StoredRun& run, const json& header);

// The link graph: its DOT text, and the section with the SVG `dot` laid out
// (or the error that says why there is none).
std::string link_graph_dot(const StoredRun& run, const json& nodes);
json link_graph_section(const StoredRun& run);
// The campaign sections: per-link charts, training, injections.
json link_sections(db::Database& db, const StoredRun& run);
json training_section(db::Database& db, const StoredRun& run);
json injections_section(const StoredRun& run);
// The tail-latency sections: percentiles, load curve, histogram, lateness,
// the controller's checks per rate point.
json tail_section(db::Database& db, const StoredRun& run);
// The run's fault experiments as stored, each with one chart per SLO term:
// every window's value with its CI against the term's bound.
json experiments_section(db::Database& db, const StoredRun& run);
// Two runs side by side.
json comparison_section(const StoredRun& a, const StoredRun& b);

// The gradients as stored, one object per (link, type), with the truth the
// campaign file gives when it has one.
json gradients_json(const StoredRun& run);
// The campaign file as stored: the campaigns row's spec, else the run's
// configuration; null when neither parses.
json campaign_spec(const StoredRun& run);
// The campaign file's truth for a link label and type, when it has one.
std::optional<double> truth_for(const StoredRun& run, const std::string& link_label,
                                const std::string& type);

}  // namespace nabla::report::detail
