#pragma once
// `nabla report [RUN...] [--db nabla.db] [-o FILE]`: one self-contained HTML
// page for stored runs (report/, docs/report.md). Without RUN it reports the
// newest run; with two or more the page compares the first two.
//
// Exit 1 with one line for a missing database, an empty one and an unknown
// run id; exit 2 for a run id that is not a positive integer.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct ReportCommandOptions {
  std::vector<std::int64_t> run_ids;  // empty: the newest run
  std::string db_path = "nabla.db";
  std::optional<std::string> output;  // default: default_report_path(run_ids)
};

// "nabla-report-12.html", "nabla-report-12-13.html".
std::string default_report_path(std::span<const std::int64_t> run_ids);

// The command that writes the report of `run_ids`, as the measuring
// commands print it: "nabla report 12 --db nabla.db".
std::string report_command_line(std::span<const std::int64_t> run_ids, const std::string& db_path);

// Writes the page and returns its path; prints one line naming it to `out`.
std::string write_report(const ReportCommandOptions& options, std::ostream& out);

void register_report_command(CLI::App& app);

}  // namespace nabla::coordinator
