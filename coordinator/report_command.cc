#include "nabla/coordinator/report_command.hh"

#include <CLI/CLI.hpp>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "nabla/common/clock.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/db/reads.hh"
#include "nabla/report/report.hh"

namespace nabla::coordinator {
namespace {

std::string utc_now() {
  const std::time_t now = static_cast<std::time_t>(common::realtime_ns() / 1'000'000'000);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string ids_joined(std::span<const std::int64_t> run_ids, char separator) {
  std::string out;
  for (const std::int64_t id : run_ids) {
    if (!out.empty()) out += separator;
    out += std::to_string(id);
  }
  return out;
}

// A page without its link graph (no `dot`) is still written; say why on stderr.
void print_graph_errors(const nlohmann::json& data) {
  for (const nlohmann::json& run : data["runs"]) {
    const nlohmann::json& graph = run["graph"];
    if (graph.is_object() && graph["error"].is_string()) {
      std::cerr << "nabla report: " << graph["error"].get<std::string>() << "\n";
      return;  // the same cause for every run
    }
  }
}

}  // namespace

std::string default_report_path(std::span<const std::int64_t> run_ids) {
  return "nabla-report-" + ids_joined(run_ids, '-') + ".html";
}

std::string report_command_line(std::span<const std::int64_t> run_ids, const std::string& db_path) {
  return "nabla report " + ids_joined(run_ids, ' ') + " --db " + db_path;
}

std::string write_report(const ReportCommandOptions& options, std::ostream& out) {
  db::Store store = open_history_for_reading(options.db_path);
  std::vector<std::int64_t> ids = options.run_ids;
  if (ids.empty()) {
    const std::vector<db::RunInfo> newest = db::list_runs(store.database(), 1);
    if (newest.empty()) {
      throw std::runtime_error(
          "the database '" + options.db_path +
          "' holds no runs yet (nabla run, nabla load or nabla demo store one)");
    }
    ids.push_back(newest.front().id);
  }
  const report::ReportOptions ro{utc_now(), options.db_path};
  const nlohmann::json data = report::build_report_data(store.database(), ids, ro);
  print_graph_errors(data);
  const std::string path = options.output.value_or(default_report_path(ids));
  const std::string page = report::render_report_html(data);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << page;
  file.close();
  if (!file) throw std::runtime_error("cannot write '" + path + "'");
  out << "wrote " << path << " (run" << (ids.size() > 1 ? "s " : " ") << ids_joined(ids, ' ')
      << ", " << (page.size() + 1023) / 1024 << " KiB)\n";
  return path;
}

void register_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommandOptions>();
  auto* cmd = app.add_subcommand(
      "report", "write one self-contained HTML page for stored runs (two runs: side by side)");
  cmd->add_option("RUN", o->run_ids, "run id(s); none: the newest run")->check(CLI::PositiveNumber);
  cmd->add_option("--db", o->db_path, "SQLite database")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "the HTML file (default nabla-report-RUN.html)");
  cmd->callback([o] { write_report(*o, std::cout); });
}

}  // namespace nabla::coordinator
