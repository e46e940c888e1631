#include "nabla/coordinator/runs_command.hh"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "nabla/campaign/experiment_rows.hh"
#include "nabla/campaign/gradient_result.hh"
#include "nabla/campaign/messages.hh"
#include "nabla/campaign/operating_point.hh"
#include "nabla/common/json_null.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/db/reads.hh"
#include "runs_accel_memlat.hh"
#include "runs_experiments.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

using common::or_null;
using common::parsed_or_null;

std::runtime_error no_run(std::int64_t run_id, const std::string& db_path) {
  return std::runtime_error("no run " + std::to_string(run_id) + " in '" + db_path + "'");
}

// The keys are the run_summary view's columns.
json summary_json(const db::RunSummary& s) {
  return {{"run_id", s.run_id},
          {"campaign", or_null(s.campaign)},
          {"kind", db::to_string(s.kind)},
          {"status", db::to_string(s.status)},
          {"started", s.started},
          {"duration_s", or_null(s.duration_s)},
          {"links", s.links},
          {"samples", s.samples},
          {"gradients", s.gradients},
          {"tail_results", s.tail_results},
          {"error", or_null(s.error)}};
}

// The run's gradients in the shape `nabla run --json` prints them
// (campaign/gradient_result.hh).
json gradients_json(db::Database& db, std::int64_t run_id) {
  json out = json::array();
  for (const campaign::GradientResult& g : campaign::stored_gradient_results(db, run_id)) {
    out.push_back(json(campaign::gradient_json(g)));
  }
  return out;
}

// Per type, how far the measurement moved the mean response from the
// training's (campaign/operating_point.hh); empty without gradient rows.
json operating_point_json(db::Database& db, std::int64_t run_id) {
  json out = json::array();
  for (const campaign::OperatingPointShift& s :
       campaign::stored_operating_point_shifts(db, run_id)) {
    out.push_back({{"type", s.type},
                   {"training_mean_ns", or_null(s.training_mean_ns)},
                   {"largest_shift_ns", s.largest_ns},
                   {"largest_shift_link", s.largest_link},
                   {"mean_shift_ns", s.mean_ns},
                   {"phases", s.phases},
                   {"text", campaign::describe_shift(s)}});
  }
  return out;
}

void print_operating_point(const json& shifts, std::ostream& out) {
  if (shifts.empty()) return;
  out << "operating-point shift (mean response in a phase minus the training's, largest per "
         "type):\n";
  for (const json& s : shifts) out << "  " << s["text"].get<std::string>() << '\n';
}

json tail_results_json(const std::vector<db::TailResultRow>& rows) {
  json out = json::array();
  for (const db::TailResultRow& row : rows) {
    const db::TailResult& t = row.result;
    out.push_back({{"type", row.type.value_or("*")},
                   {"metric", t.metric},
                   {"rate_rps", t.rate_rps},
                   {"percentile", t.percentile},
                   {"value_ns", or_null(t.value_ns)},
                   {"ci_low_ns", or_null(t.ci_low_ns)},
                   {"ci_high_ns", or_null(t.ci_high_ns)},
                   {"verdict", t.ok ? "ok" : "n/a"},
                   {"reasons", t.reasons_json}});
  }
  return out;
}

// A load run's agents (load_agents), none without --agent.
json load_agents_json(const std::vector<db::LoadAgent>& rows) {
  json out = json::array();
  for (const db::LoadAgent& a : rows) {
    out.push_back({{"rate_rps", a.rate_rps},
                   {"agent", a.agent},
                   {"kind", a.kind},
                   {"share_rps", a.share_rps},
                   {"rounds", a.rounds},
                   {"rounds_failed", a.rounds_failed},
                   {"sent", a.sent},
                   {"completed", a.completed},
                   {"late_sends", a.late},
                   {"errors", a.errors},
                   {"samples", a.samples},
                   {"timer_lateness_p99_ns", or_null(a.timer_lateness_p99_ns)},
                   {"reasons", parsed_or_null(a.reasons_json)}});
  }
  return out;
}

void print_load_agents_table(const json& agents, std::ostream& out) {
  TextTable t({"rate_rps", "agent", "kind", "share_rps", "sent", "completed", "late", "errors",
               "samples", "rounds_failed"});
  for (const auto& a : agents) {
    t.add_row({format_number(a["rate_rps"].get<double>()), a["agent"].get<std::string>(),
               a["kind"].get<std::string>(), format_number(a["share_rps"].get<double>()),
               a["sent"].dump(), a["completed"].dump(), a["late_sends"].dump(), a["errors"].dump(),
               a["samples"].dump(), a["rounds_failed"].dump() + " of " + a["rounds"].dump()});
  }
  t.print(out);
}

std::string cell(const json& v) {
  return v.is_null() ? std::string() : v.is_string() ? v.get<std::string>() : v.dump();
}

void print_runs_table(const json& rows, std::ostream& out) {
  TextTable table(
      {"run", "kind", "status", "started", "duration_s", "links", "samples", "gradients", "error"});
  for (const auto& r : rows) {
    table.add_row({cell(r["run_id"]), cell(r["kind"]), cell(r["status"]), cell(r["started"]),
                   r["duration_s"].is_null() ? "" : format_number(r["duration_s"].get<double>()),
                   cell(r["links"]), cell(r["samples"]), cell(r["gradients"]), cell(r["error"])});
  }
  table.print(out);
}

std::string num(const json& v) {
  return v.is_null() ? std::string("-") : format_number(v.get<double>());
}

// "1.95 [1.8, 2.1]", with " disagrees" when its CI and the spectral one are
// disjoint; "-" without a step.
std::string step_cell(const json& step) {
  if (step.is_null()) return "-";
  return num(step["gradient"]) + " [" + num(step["ci_low"]) + ", " + num(step["ci_high"]) + "]" +
         (step["disagrees"].get<bool>() ? " disagrees" : "");
}

void print_gradients_table(const json& gradients, std::ostream& out) {
  bool steps = false;
  for (const auto& row : gradients) steps = steps || !row.value("step", json()).is_null();
  std::vector<std::string> columns{"link", "type", "gradient", "ci_low", "ci_high", "msgs/txn"};
  if (steps) columns.push_back("step");
  TextTable g(columns);
  auto real = [](const json& v) {
    return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
  };
  bool flagged = false;
  for (const auto& row : gradients) {
    std::optional<campaign::MessagesPerTxn> m;
    if (!row["messages_per_txn"].is_null()) {
      m = campaign::MessagesPerTxn{real(row["messages_per_txn"]), 0, real(row["messages_ci_low"]),
                                   real(row["messages_ci_high"])};
    }
    const std::string msgs = campaign::messages_cell(real(row["gradient"]), real(row["ci_low"]),
                                                     real(row["ci_high"]), m);
    flagged = flagged || msgs.ends_with(" !");
    std::vector<std::string> cells{row["link"].get<std::string>(),
                                   row["type"].get<std::string>(),
                                   num(row["gradient"]),
                                   num(row["ci_low"]),
                                   num(row["ci_high"]),
                                   msgs};
    if (steps) cells.push_back(step_cell(row["step"]));
    g.add_row(cells);
  }
  g.print(out);
  if (flagged) out << campaign::kWaitsNotHopsLegend << '\n';
}

// Every swept gradient's curve, then its verdict per link and type.
void print_sweeps(const json& gradients, std::ostream& out) {
  TextTable t({"link", "type", "amplitude_ms", "actual_ms", "gradient", "ci_low", "ci_high"});
  std::vector<std::string> verdicts;
  auto ms = [](const json& v) {
    return v.is_null() ? std::string("-") : format_number(v.get<double>() / 1e6);
  };
  for (const auto& row : gradients) {
    if (row.value("amplitudes", json::array()).empty()) continue;
    for (const auto& a : row["amplitudes"]) {
      t.add_row({row["link"].get<std::string>(), row["type"].get<std::string>(),
                 ms(a["amplitude_ns"]), ms(a["actual_amplitude_ns"]), num(a["gradient"]),
                 num(a["ci_low"]), num(a["ci_high"])});
    }
    if (!row["linearity"].is_null()) {
      verdicts.push_back(row["link"].get<std::string>() + " " + row["type"].get<std::string>() +
                         ": " + row["linearity"]["text"].get<std::string>());
    }
  }
  if (t.empty()) return;
  out << "\nsweep (gradient per amplitude)\n";
  t.print(out);
  for (const std::string& v : verdicts) out << v << '\n';
}

void print_tail_results_table(const json& tail_results, std::ostream& out) {
  TextTable t({"type", "metric", "rate_rps", "percentile", "value_ns", "ci_low_ns", "ci_high_ns",
               "verdict"});
  for (const auto& row : tail_results) {
    auto num = [&](const char* k) {
      return row[k].is_null() ? std::string("-") : format_number(row[k].get<double>(), 10);
    };
    t.add_row({row["type"].get<std::string>(), row["metric"].get<std::string>(), num("rate_rps"),
               num("percentile"), num("value_ns"), num("ci_low_ns"), num("ci_high_ns"),
               row["verdict"].get<std::string>()});
  }
  t.print(out);
}

OutputFormat parse_export_format(const std::string& text) {
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "json") return OutputFormat::kJson;
  throw std::invalid_argument("--format must be csv or json, got '" + text + "'");
}

}  // namespace

void print_run(const json& r, std::ostream& out) {
  out << "run " << r["run_id"] << " (" << r["kind"].get<std::string>() << "), "
      << r["status"].get<std::string>() << ", started " << r["started"].get<std::string>() << ", "
      << r["samples"] << " samples\n";
  if (r["error"].is_string()) out << "error: " << r["error"].get<std::string>() << '\n';
  if (!r["gradients"].empty()) {
    out << '\n';
    print_gradients_table(r["gradients"], out);
    print_sweeps(r["gradients"], out);
    if (r.contains("operating_point_shift")) print_operating_point(r["operating_point_shift"], out);
  }
  if (!r["tail_results"].empty()) {
    out << '\n';
    print_tail_results_table(r["tail_results"], out);
  }
  if (r.contains("load_agents") && !r["load_agents"].empty()) {
    out << "\nload agents:\n";
    print_load_agents_table(r["load_agents"], out);
  }
  if (r.contains("accel")) print_accel_section(r["accel"], out);
  if (r.contains("memlat")) print_memlat_section(r["memlat"], out);
  print_experiments(r["experiments"], out);
}

json runs_list(const std::string& db_path, int limit) {
  if (limit < 1) throw std::invalid_argument("--limit must be at least 1");
  db::Store store = open_history_for_reading(db_path);
  json rows = json::array();
  for (const db::RunSummary& s : db::list_run_summaries(store.database(), limit)) {
    rows.push_back(summary_json(s));
  }
  return rows;
}

json runs_show(const std::string& db_path, std::int64_t run_id) {
  db::Store store = open_history_for_reading(db_path);
  auto& db = store.database();
  const auto summary = db::find_run_summary(db, run_id);
  const auto run = db::find_run(db, run_id);
  if (!summary || !run) throw no_run(run_id, db_path);
  json out = summary_json(*summary);
  out["config"] = parsed_or_null(run->config_json);
  out["host_info"] = parsed_or_null(run->host_info_json);
  out["tool_version"] = run->tool_version;
  out["seed"] = or_null(run->seed);
  out["pid"] = run->pid;
  // The lists replace the summary's counts of the same name.
  out["gradients"] = gradients_json(db, run_id);
  out["operating_point_shift"] = operating_point_json(db, run_id);
  out["tail_results"] = tail_results_json(db::run_tail_results(db, run_id));
  out["load_agents"] = load_agents_json(db::run_load_agents(db, run_id));
  if (json accel = accel_section_json(db, run_id); !accel.is_null()) out["accel"] = accel;
  if (json memlat = memlat_section_json(db, run_id); !memlat.is_null()) out["memlat"] = memlat;
  out["experiments"] = campaign::stored_experiments_json(db, run_id);
  return out;
}

void runs_export(const std::string& db_path, std::int64_t run_id, OutputFormat format,
                 std::ostream& out) {
  db::Store store = open_history_for_reading(db_path);
  if (!store.get_run(run_id)) throw no_run(run_id, db_path);
  const std::map<std::int64_t, std::string> type_names =
      db::transaction_type_names(store.database());
  auto type_name = [&](std::int64_t id) {
    const auto it = type_names.find(id);
    return it == type_names.end() ? std::to_string(id) : it->second;
  };
  if (format == OutputFormat::kCsv) {
    // Exactly the input format of `nabla analyze`.
    out << "t_ns,latency_ns,type\n";
    store.for_each_sample(run_id, [&](const db::Sample& s) {
      out << s.send_ns << ',' << s.latency_ns << ',' << csv_field(type_name(s.type_id)) << '\n';
    });
    return;
  }
  json doc = runs_show(db_path, run_id);
  json samples = json::array();
  store.for_each_sample(run_id, [&](const db::Sample& s) {
    samples.push_back({{"t_ns", s.send_ns},
                       {"latency_ns", s.latency_ns},
                       {"service_ns", or_null(s.service_ns)},
                       {"type", type_name(s.type_id)},
                       {"timestamp_source", std::string(db::to_string(s.source))},
                       {"phase_id", or_null(s.phase_id)}});
  });
  doc["samples"] = std::move(samples);
  out << doc.dump(2) << '\n';
}

namespace {

void add_list_command(CLI::App& runs, const std::function<void(CLI::App*)>& add_db,
                      std::shared_ptr<std::string> db_path) {
  auto limit = std::make_shared<int>(20);
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = runs.add_subcommand("list", "newest runs first");
  add_db(cmd);
  cmd->add_option("--limit", *limit, "how many runs")->default_val(20);
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([db_path, limit, as_json] {
    const json rows = runs_list(*db_path, *limit);
    if (*as_json) {
      std::cout << rows.dump(2) << '\n';
    } else {
      print_runs_table(rows, std::cout);
    }
  });
}

void add_show_command(CLI::App& runs, const std::function<void(CLI::App*)>& add_db,
                      std::shared_ptr<std::string> db_path) {
  auto id = std::make_shared<std::int64_t>(0);
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = runs.add_subcommand("show", "one run: summary, gradients, tail results, experiments");
  add_db(cmd);
  cmd->add_option("ID", *id, "run id")->required();
  cmd->add_flag("--json", *as_json, "print JSON");
  cmd->callback([db_path, id, as_json] {
    const json r = runs_show(*db_path, *id);
    if (*as_json) {
      std::cout << r.dump(2) << '\n';
    } else {
      print_run(r, std::cout);
    }
  });
}

void add_export_command(CLI::App& runs, const std::function<void(CLI::App*)>& add_db,
                        std::shared_ptr<std::string> db_path) {
  auto id = std::make_shared<std::int64_t>(0);
  auto format = std::make_shared<std::string>("csv");
  auto* cmd = runs.add_subcommand("export", "a run's samples as CSV (nabla analyze input) or JSON");
  add_db(cmd);
  cmd->add_option("ID", *id, "run id")->required();
  cmd->add_option("--format", *format, "csv or json")->default_val("csv");
  cmd->callback([db_path, id, format] {
    runs_export(*db_path, *id, parse_export_format(*format), std::cout);
  });
}

}  // namespace

void register_runs_command(CLI::App& app) {
  auto db_path = std::make_shared<std::string>("nabla.db");
  auto* runs = app.add_subcommand("runs", "list, show and export stored runs");
  runs->require_subcommand(1);
  // --db belongs to the whole group: accepted before the subcommand
  // (`nabla runs --db F list`) and after it (`nabla runs list --db F`, as the
  // demo's hints write it). Each subcommand declares it too, so its --help
  // shows it; all of them write the same path.
  const std::function<void(CLI::App*)> add_db = [db_path](CLI::App* cmd) {
    cmd->add_option("--db", *db_path, "SQLite database")->default_str("nabla.db");
  };
  add_db(runs);
  add_list_command(*runs, add_db, db_path);
  add_show_command(*runs, add_db, db_path);
  add_export_command(*runs, add_db, db_path);
}

}  // namespace nabla::coordinator
