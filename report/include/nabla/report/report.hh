#pragma once
// `nabla report`: one self-contained HTML page for one or more stored runs
// (docs/report.md).
//
// Two steps, so tests can check each:
//  - build_report_data reads the runs through the typed reads (db/reads.hh)
//    and returns the page's data model as JSON: per run its header, what it
//    stored and what is missing, and the data and Vega-Lite spec of every
//    chart; with two or more runs, a comparison of the first two;
//  - render_report_html puts that JSON into the page template with every
//    script inlined (vega, vega-lite, vega-embed and the page's own), so the
//    file works from file:// with no network.
//
// The data is one <script type="application/json" id="nabla-data"> block.
// Numbers read from the database are written with round-trip precision, so
// reading the block back gives the stored doubles exactly.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>

namespace nabla::db {
class Database;
}

namespace nabla::report {

// A run id the database does not have.
class NoSuchRun : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReportOptions {
  std::string generated_utc;  // shown in the page's footer, e.g. "2026-11-25T12:00:00Z"
  std::string db_path;        // shown in the header and in the commands the page suggests
};

// The page's data model for `run_ids` (at least one). Throws NoSuchRun
// naming the first id that is not stored.
nlohmann::json build_report_data(db::Database& db, std::span<const std::int64_t> run_ids,
                                 const ReportOptions& options);

// The whole HTML page for a data model.
std::string render_report_html(const nlohmann::json& data);

// The JSON text as it is embedded in a <script> element: "</" and "<!--"
// escaped so no string in it can end the element early; still valid JSON.
std::string script_safe_json(const nlohmann::json& data);

}  // namespace nabla::report
