#include "nabla/coordinator/history_command.hh"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

#include "nabla/common/clock.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/records.hh"
#include "nabla/db/sqlite.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

void require_database(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("no database at '" + path + "' (give --db FILE)");
  }
}

// Read-write when possible (recovers interrupted runs), else read-only.
db::Store open_for_reading(const std::string& path) {
  require_database(path);
  if (::access(path.c_str(), W_OK) == 0) return db::Store::open(path, common::realtime_ns());
  return db::Store::open_read_only(path);
}

json to_json(const db::Value& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, db::Blob>) {
          return "x'" + db::to_string(db::Value(x)) + "'";
        } else {
          return x;
        }
      },
      v);
}

json rows_to_json(const db::QueryResult& r) {
  json rows = json::array();
  for (const auto& row : r.rows) {
    json obj = json::object();
    for (std::size_t i = 0; i < r.columns.size(); ++i) obj[r.columns[i]] = to_json(row[i]);
    rows.push_back(std::move(obj));
  }
  return rows;
}

std::string csv_cell(const db::Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  std::string s = db::to_string(v);
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void print_result(const db::QueryResult& r, OutputFormat format, std::ostream& out) {
  switch (format) {
    case OutputFormat::kJson:
      out << rows_to_json(r).dump(2) << '\n';
      return;
    case OutputFormat::kCsv: {
      for (std::size_t i = 0; i < r.columns.size(); ++i) out << (i ? "," : "") << r.columns[i];
      out << '\n';
      for (const auto& row : r.rows) {
        for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_cell(row[i]);
        out << '\n';
      }
      return;
    }
    case OutputFormat::kTable: {
      TextTable table(r.columns);
      for (const auto& row : r.rows) {
        std::vector<std::string> cells;
        for (const auto& v : row) {
          cells.push_back(std::holds_alternative<std::monostate>(v) ? "" : db::to_string(v));
        }
        table.add_row(std::move(cells));
      }
      table.print(out);
      out << "(" << r.rows.size() << (r.rows.size() == 1 ? " row)\n" : " rows)\n");
      return;
    }
  }
}

db::QueryResult query_run(db::Database& db, const std::string& sql, std::int64_t run_id) {
  const db::Value id{run_id};
  return db::query(db, sql, std::span<const db::Value>(&id, 1));
}

OutputFormat parse_format(const std::string& text) {
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "json") return OutputFormat::kJson;
  throw std::invalid_argument("--format must be csv or json, got '" + text + "'");
}

}  // namespace

json runs_list(const std::string& db_path, int limit) {
  if (limit < 1) throw std::invalid_argument("--limit must be at least 1");
  db::Store store = open_for_reading(db_path);
  const db::Value n{static_cast<std::int64_t>(limit)};
  return rows_to_json(db::query(store.database(),
                                "SELECT * FROM run_summary ORDER BY run_id DESC LIMIT ?",
                                std::span<const db::Value>(&n, 1)));
}

json runs_show(const std::string& db_path, std::int64_t run_id) {
  db::Store store = open_for_reading(db_path);
  auto& db = store.database();
  const auto summary = query_run(db, "SELECT * FROM run_summary WHERE run_id = ?", run_id);
  if (summary.rows.empty()) {
    throw std::runtime_error("no run " + std::to_string(run_id) + " in '" + db_path + "'");
  }
  json out = rows_to_json(summary)[0];
  const auto run = query_run(db,
                             "SELECT config, host_info, tool_version, seed, pid FROM runs "
                             "WHERE id = ?",
                             run_id);
  const json details = rows_to_json(run)[0];
  for (const char* k : {"config", "host_info"}) {
    out[k] = details[k].is_string() ? json::parse(details[k].get<std::string>(), nullptr, false)
                                    : json(nullptr);
  }
  out["tool_version"] = details["tool_version"];
  out["seed"] = details["seed"];
  out["pid"] = details["pid"];
  out["gradients"] = rows_to_json(query_run(
      db,
      "SELECT l.label AS link, tt.name AS type, g.value AS gradient, g.ci_low, g.ci_high, "
      "g.actual_amplitude_ns, g.perturbation_ns, g.throughput_change "
      "FROM gradients g JOIN links l ON l.id = g.link_id "
      "JOIN transaction_types tt ON tt.id = g.type_id WHERE g.run_id = ? ORDER BY link, type",
      run_id));
  out["tail_results"] = rows_to_json(query_run(
      db,
      "SELECT coalesce(tt.name, '*') AS type, t.metric, t.rate_rps, t.percentile, t.value_ns, "
      "t.ci_low_ns, t.ci_high_ns, t.verdict, t.reasons FROM tail_results t "
      "LEFT JOIN transaction_types tt ON tt.id = t.type_id WHERE t.run_id = ? "
      "ORDER BY t.rate_rps, type, t.percentile",
      run_id));
  return out;
}

void runs_export(const std::string& db_path, std::int64_t run_id, OutputFormat format,
                 std::ostream& out) {
  db::Store store = open_for_reading(db_path);
  if (!store.get_run(run_id)) {
    throw std::runtime_error("no run " + std::to_string(run_id) + " in '" + db_path + "'");
  }
  std::unordered_map<std::int64_t, std::string> type_names;
  for (const auto& row :
       db::query(store.database(), "SELECT id, name FROM transaction_types").rows) {
    type_names[std::get<std::int64_t>(row[0])] = std::get<std::string>(row[1]);
  }
  auto type_name = [&](std::int64_t id) {
    const auto it = type_names.find(id);
    return it == type_names.end() ? std::to_string(id) : it->second;
  };
  if (format == OutputFormat::kCsv) {
    // Exactly the input format of `nabla analyze`.
    out << "t_ns,latency_ns,type\n";
    store.for_each_sample(run_id, [&](const db::Sample& s) {
      out << s.send_ns << ',' << s.latency_ns << ',' << csv_cell(db::Value(type_name(s.type_id)))
          << '\n';
    });
    return;
  }
  json doc = runs_show(db_path, run_id);
  json samples = json::array();
  store.for_each_sample(run_id, [&](const db::Sample& s) {
    samples.push_back({{"t_ns", s.send_ns},
                       {"latency_ns", s.latency_ns},
                       {"service_ns", s.service_ns ? json(*s.service_ns) : json(nullptr)},
                       {"type", type_name(s.type_id)},
                       {"timestamp_source", std::string(db::to_string(s.source))},
                       {"phase_id", s.phase_id ? json(*s.phase_id) : json(nullptr)}});
  });
  doc["samples"] = std::move(samples);
  out << doc.dump(2) << '\n';
}

void sql_query(const std::string& db_path, const std::string& sql, OutputFormat format,
               std::ostream& out) {
  require_database(db_path);
  db::Store store = db::Store::open_read_only(db_path);
  print_result(db::query(store.database(), sql), format, out);
}

void register_history_commands(CLI::App& app) {
  auto db_path = std::make_shared<std::string>("nabla.db");
  auto* runs = app.add_subcommand("runs", "list, show and export stored runs");
  runs->require_subcommand(1);
  // --db belongs to the whole group: accepted before the subcommand
  // (`nabla runs --db F list`) and after it (`nabla runs list --db F`, as the
  // demo's hints write it). Each subcommand declares it too, so its --help
  // shows it; all of them write the same path.
  auto add_db = [db_path](CLI::App* cmd) {
    cmd->add_option("--db", *db_path, "SQLite database")->default_str("nabla.db");
  };
  add_db(runs);
  {
    auto limit = std::make_shared<int>(20);
    auto as_json = std::make_shared<bool>(false);
    auto* cmd = runs->add_subcommand("list", "newest runs first");
    add_db(cmd);
    cmd->add_option("--limit", *limit, "how many runs")->default_val(20);
    cmd->add_flag("--json", *as_json, "print JSON");
    cmd->callback([db_path, limit, as_json] {
      const json rows = runs_list(*db_path, *limit);
      if (*as_json) {
        std::cout << rows.dump(2) << '\n';
        return;
      }
      TextTable table({"run", "kind", "status", "started", "duration_s", "links", "samples",
                       "gradients", "error"});
      for (const auto& r : rows) {
        auto text = [&](const char* k) {
          return r[k].is_null()     ? std::string()
                 : r[k].is_string() ? r[k].get<std::string>()
                                    : r[k].dump();
        };
        table.add_row(
            {text("run_id"), text("kind"), text("status"), text("started"),
             r["duration_s"].is_null() ? "" : format_number(r["duration_s"].get<double>()),
             text("links"), text("samples"), text("gradients"), text("error")});
      }
      table.print(std::cout);
    });
  }
  {
    auto id = std::make_shared<std::int64_t>(0);
    auto as_json = std::make_shared<bool>(false);
    auto* cmd = runs->add_subcommand("show", "one run: summary, gradients, tail results");
    add_db(cmd);
    cmd->add_option("ID", *id, "run id")->required();
    cmd->add_flag("--json", *as_json, "print JSON");
    cmd->callback([db_path, id, as_json] {
      const json r = runs_show(*db_path, *id);
      if (*as_json) {
        std::cout << r.dump(2) << '\n';
        return;
      }
      std::cout << "run " << r["run_id"] << " (" << r["kind"].get<std::string>() << "), "
                << r["status"].get<std::string>() << ", started " << r["started"].get<std::string>()
                << ", " << r["samples"] << " samples\n";
      if (r["error"].is_string()) std::cout << "error: " << r["error"].get<std::string>() << '\n';
      if (!r["gradients"].empty()) {
        std::cout << '\n';
        TextTable g({"link", "type", "gradient", "ci_low", "ci_high"});
        for (const auto& row : r["gradients"]) {
          g.add_row({row["link"].get<std::string>(), row["type"].get<std::string>(),
                     format_number(row["gradient"].get<double>()),
                     format_number(row["ci_low"].get<double>()),
                     format_number(row["ci_high"].get<double>())});
        }
        g.print(std::cout);
      }
      if (!r["tail_results"].empty()) {
        std::cout << '\n';
        TextTable t(
            {"type", "rate_rps", "percentile", "value_ns", "ci_low_ns", "ci_high_ns", "verdict"});
        for (const auto& row : r["tail_results"]) {
          auto num = [&](const char* k) {
            return row[k].is_null() ? std::string("-") : format_number(row[k].get<double>(), 10);
          };
          t.add_row({row["type"].get<std::string>(), num("rate_rps"), num("percentile"),
                     num("value_ns"), num("ci_low_ns"), num("ci_high_ns"),
                     row["verdict"].get<std::string>()});
        }
        t.print(std::cout);
      }
    });
  }
  {
    auto id = std::make_shared<std::int64_t>(0);
    auto format = std::make_shared<std::string>("csv");
    auto* cmd =
        runs->add_subcommand("export", "a run's samples as CSV (nabla analyze input) or JSON");
    add_db(cmd);
    cmd->add_option("ID", *id, "run id")->required();
    cmd->add_option("--format", *format, "csv or json")->default_val("csv");
    cmd->callback(
        [db_path, id, format] { runs_export(*db_path, *id, parse_format(*format), std::cout); });
  }
  {
    auto sql = std::make_shared<std::string>();
    auto sql_db = std::make_shared<std::string>("nabla.db");
    auto as_json = std::make_shared<bool>(false);
    auto as_csv = std::make_shared<bool>(false);
    auto* cmd = app.add_subcommand("sql", "run one SQL statement on the run history, read-only");
    cmd->add_option("QUERY", *sql, "e.g. \"SELECT * FROM run_summary\"")->required();
    cmd->add_option("--db", *sql_db, "SQLite database")->default_str("nabla.db");
    auto* j = cmd->add_flag("--json", *as_json, "print JSON rows");
    cmd->add_flag("--csv", *as_csv, "print CSV")->excludes(j);
    cmd->callback([sql, sql_db, as_json, as_csv] {
      sql_query(*sql_db, *sql,
                *as_json  ? OutputFormat::kJson
                : *as_csv ? OutputFormat::kCsv
                          : OutputFormat::kTable,
                std::cout);
    });
  }
}

}  // namespace nabla::coordinator
