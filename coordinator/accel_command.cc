#include "nabla/coordinator/accel_command.hh"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "accel_history.hh"
#include "nabla/accel/config.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/coordinator/predict.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/reads.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

struct Options {
  std::optional<double> cycles, alpha, accel_factor, offloads_per_s;
  std::optional<double> o0, transfer, queue, o1;
  std::optional<double> cycles_per_byte;
  double beta = 1;
  std::string design = "sync", strategy = "on-chip";
  std::string config;
  std::optional<std::int64_t> from_run, gradient_run;
  std::string db_path = "nabla.db";
  std::optional<double> host_ghz;
  double offloads_per_request = 1;
  std::string link, link_latency;
  double confidence = 0.95;
  bool json = false;
  // Store the evaluation in the run history: with --db given, and whenever
  // it reads a stored run (the database it read from).
  bool store = false;
};

void report_stored(const Options& o, std::int64_t run_id) {
  std::cerr << "stored as run " << run_id << " in " << o.db_path << '\n';
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using common::or_null;

std::string ratio_text(const std::optional<double>& v) {
  return v ? format_number(*v) + " (" + format_number((*v - 1) * 100, 3) + "%)" : "-";
}

std::string bytes_text(const std::optional<double>& v) {
  return v ? ">= " + format_number(*v, 12) + " B" : "never";
}

double required_ghz(const Options& o, const char* why) {
  if (!o.host_ghz) throw std::invalid_argument(std::string("--host-ghz: required ") + why);
  if (!(*o.host_ghz > 0)) throw std::invalid_argument("--host-ghz: must be > 0");
  return *o.host_ghz;
}

// --link-latency in ns; std::invalid_argument naming the flag.
double link_latency_ns(const Options& o) {
  try {
    return static_cast<double>(common::parse_duration_ns(o.link_latency));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--link-latency: ") + e.what());
  }
}

// Where a flag and a measured value would both set one parameter.
void refuse_both(const std::optional<double>& flag_value, const char* flag, const char* source) {
  if (flag_value) {
    throw std::invalid_argument(std::string(flag) + ": give it or " + source + ", not both");
  }
}

// --config: every kernel × strategy × design of the file side by side.
void run_config(const Options& o) {
  const std::int64_t started_ns = common::realtime_ns();
  const accel::ServiceSpec spec = accel::load_service_spec(o.config);
  const std::vector<accel::DesignRow> rows = accel::evaluate(spec);
  if (o.store) {
    std::vector<db::AccelResult> results;
    for (const accel::DesignRow& r : rows) {
      results.push_back(accel_result_row(r.kernel, r.strategy, r.design, r.params, r.cost,
                                         r.estimate, r.min_bytes_speedup, r.min_bytes_latency));
    }
    const json config = {{"mode", "config"}, {"config", o.config}, {"toml", file_text(o.config)}};
    report_stored(o, store_accel_run(o.db_path, config, started_ns, results, std::nullopt));
  }
  if (o.json) {
    json out = {{"cycles", spec.cycles_per_s}, {"rows", json::array()}};
    for (const accel::DesignRow& r : rows) {
      out["rows"].push_back({{"kernel", r.kernel},
                             {"strategy", accel::strategy_name(r.strategy)},
                             {"design", accel::design_name(r.design)},
                             {"offloads_per_s", r.offloads_per_s},
                             {"alpha", r.alpha},
                             {"min_bytes_speedup", or_null(r.min_bytes_speedup)},
                             {"min_bytes_latency", or_null(r.min_bytes_latency)},
                             {"speedup", r.estimate.speedup},
                             {"latency_reduction", or_null(r.estimate.latency_reduction)}});
    }
    std::cout << out.dump(2) << '\n';
    return;
  }
  TextTable table({"kernel", "strategy", "design", "pays from (speedup)", "pays from (latency)",
                   "n/s", "alpha", "speedup C/C_S", "latency C/C_L"});
  for (const accel::DesignRow& r : rows) {
    table.add_row({r.kernel, std::string(accel::strategy_name(r.strategy)),
                   std::string(accel::design_name(r.design)), bytes_text(r.min_bytes_speedup),
                   bytes_text(r.min_bytes_latency), format_number(r.offloads_per_s, 6),
                   format_number(r.alpha), ratio_text(r.estimate.speedup),
                   ratio_text(r.estimate.latency_reduction)});
  }
  table.print(std::cout);
}

json inputs_json(const accel::Params& p) {
  return {{"cycles", p.cycles_per_s},
          {"alpha", p.alpha},
          {"accel_factor", or_null(p.accel_factor)},
          {"offloads_per_s", p.offloads_per_s},
          {"o0", p.setup_cycles},
          {"L", p.transfer_cycles},
          {"Q", p.queue_cycles},
          {"o1", p.switch_cycles}};
}

// The model's inputs from the flags, with C and n from a load run and L from
// the link's latency where asked.
accel::Params single_params(const Options& o, db::Database* db, json& out) {
  accel::Params p;
  p.alpha = o.alpha.value_or(-1);
  if (!o.alpha) throw std::invalid_argument("--alpha: required (the kernel's share of C)");
  p.accel_factor = o.accel_factor;
  p.setup_cycles = o.o0.value_or(0);
  p.transfer_cycles = o.transfer.value_or(0);
  p.queue_cycles = o.queue.value_or(0);
  p.switch_cycles = o.o1.value_or(0);
  if (o.from_run) {
    refuse_both(o.cycles, "--cycles", "--from-run");
    refuse_both(o.offloads_per_s, "--offloads-per-s", "--from-run");
    const double ghz = required_ghz(o, "with --from-run (to turn service time into cycles)");
    const MeasuredLoad m = measured_load(*db, *o.from_run, ghz, o.offloads_per_request);
    p.cycles_per_s = m.cycles_per_s;
    p.offloads_per_s = m.offloads_per_s;
    out["from_run"] = {{"run", *o.from_run},
                       {"throughput_rps", m.throughput_rps},
                       {"mean_service_ns", m.mean_service_ns},
                       {"service_samples", m.service_samples},
                       {"host_ghz", ghz},
                       {"offloads_per_request", o.offloads_per_request}};
  } else {
    if (!o.cycles) throw std::invalid_argument("--cycles: required (or --from-run)");
    p.cycles_per_s = *o.cycles;
    p.offloads_per_s = o.offloads_per_s.value_or(0);
  }
  if (!o.link.empty()) {
    refuse_both(o.transfer, "--L", "--link-latency");
    const double ghz = required_ghz(o, "with --link (to turn the link's latency into cycles)");
    p.transfer_cycles = link_latency_ns(o) * ghz;
  }
  return p;
}

// The link-gradient side of a remote offload: each offload puts the link's
// one-way latency on the request's path once more, so the projected change
// of each transaction type's mean response time is gradient × that delay,
// with the gradient's CI carried through (nabla predict's rule).
PredictionReport link_projection(const Options& o, db::Database& db) {
  const double latency_ns = link_latency_ns(o);
  const LatencySet set{o.link, o.offloads_per_request * latency_ns, 0};
  return predict_run(db, *o.gradient_run, {set}, o.confidence);
}

// Flag combinations, checked before any database is opened.
void check_flag_combinations(const Options& o, accel::Strategy strategy) {
  if (o.from_run) required_ghz(o, "with --from-run (to turn service time into cycles)");
  if (!(o.offloads_per_request > 0)) {
    throw std::invalid_argument("--offloads-per-request: must be > 0");
  }
  if (!(o.confidence > 0 && o.confidence < 1)) {
    throw std::invalid_argument("--confidence: must be in (0, 1)");
  }
  if (o.link.empty()) {
    if (!o.link_latency.empty() || o.gradient_run) {
      throw std::invalid_argument("--link: required with --link-latency and --gradient-run");
    }
    return;
  }
  if (strategy != accel::Strategy::kRemote) {
    throw std::invalid_argument("--link: only with --strategy remote");
  }
  if (o.link_latency.empty()) {
    throw std::invalid_argument(
        "--link-latency: required with --link (the link's one-way latency)");
  }
  link_latency_ns(o);
  if (!o.gradient_run) {
    throw std::invalid_argument("--gradient-run: required with --link (a run that measured it)");
  }
}

void print_single(const json& out, const std::optional<PredictionReport>& projection) {
  std::cout << "design " << out["design"].get<std::string>() << ", strategy "
            << out["strategy"].get<std::string>() << '\n';
  if (out.contains("from_run")) {
    const json& m = out["from_run"];
    std::cout << "from run " << m["run"] << ": " << format_number(m["throughput_rps"]) << " req/s, "
              << format_number(m["mean_service_ns"].get<double>() / 1e3) << " us service ("
              << m["service_samples"] << " samples)\n";
  }
  const json& in = out["inputs"];
  std::cout << "C " << format_number(in["cycles"]) << " cycles/s, n "
            << format_number(in["offloads_per_s"]) << "/s, alpha " << format_number(in["alpha"])
            << '\n';
  const auto ratio = [](const json& v) {
    return v.is_null() ? std::string("- (needs --accel-factor)") : ratio_text(v.get<double>());
  };
  std::cout << "speedup C/C_S            " << ratio(out["speedup"]) << '\n';
  std::cout << "latency reduction C/C_L  " << ratio(out["latency_reduction"]) << '\n';
  if (out.contains("min_paying_bytes")) {
    const auto bytes = [](const json& v) {
      return v.is_null() ? std::string("never") : bytes_text(v.get<double>());
    };
    std::cout << "an offload pays from     " << bytes(out["min_paying_bytes"]["speedup"])
              << " (speedup), " << bytes(out["min_paying_bytes"]["latency"]) << " (latency)\n";
  }
  if (projection) {
    std::cout << "\nlink-gradient projection of the mean response time, +"
              << format_number(out["link_latency_ns"].get<double>() / 1e3) << " us per offload on "
              << out["link"].get<std::string>() << ":\n";
    print_prediction(*projection, std::cout);
  }
}

std::optional<double> optional_number(const json& v) {
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

// Stores a single evaluation: `out` without its outputs is what was asked.
void store_single(const Options& o, std::int64_t started_ns, const json& out,
                  const accel::Params& p, const accel::Estimate& e,
                  const std::optional<PredictionReport>& projection) {
  std::optional<accel::Kernel> cost;
  std::optional<double> min_speedup, min_latency;
  if (out.contains("min_paying_bytes")) {
    cost = accel::Kernel{*o.cycles_per_byte, o.beta};
    min_speedup = optional_number(out["min_paying_bytes"]["speedup"]);
    min_latency = optional_number(out["min_paying_bytes"]["latency"]);
  }
  json config = out;
  for (const char* output :
       {"speedup", "latency_reduction", "min_paying_bytes", "link_projection"}) {
    config.erase(output);
  }
  config["mode"] = "flags";
  std::optional<StoredProjection> stored;
  if (projection) {
    config["gradient_run"] = *o.gradient_run;
    config["confidence"] = o.confidence;
    stored = StoredProjection{*o.gradient_run, o.link,
                              out["link_latency_ns"].get<double>() * o.offloads_per_request,
                              &*projection};
  }
  const db::AccelResult row =
      accel_result_row(std::nullopt, accel::parse_strategy(o.strategy),
                       accel::parse_design(o.design), p, cost, e, min_speedup, min_latency);
  report_stored(o, store_accel_run(o.db_path, config, started_ns, {row}, stored));
}

void run_single(const Options& o) {
  const std::int64_t started_ns = common::realtime_ns();
  const accel::Design design = accel::parse_design(o.design);
  const accel::Strategy strategy = accel::parse_strategy(o.strategy);
  check_flag_combinations(o, strategy);
  std::optional<db::Store> store;
  // Read-write when it will store there too, so an older file is migrated.
  if (o.from_run || o.gradient_run) {
    store.emplace(o.store ? open_history_for_reading(o.db_path)
                          : open_history_read_only(o.db_path));
  }
  json out = {{"design", accel::design_name(design)}, {"strategy", accel::strategy_name(strategy)}};
  const accel::Params p = single_params(o, store ? &store->database() : nullptr, out);
  const accel::Estimate e = accel::estimate(p, design, strategy);
  out["inputs"] = inputs_json(p);
  out["speedup"] = e.speedup;
  out["latency_reduction"] = or_null(e.latency_reduction);
  if (o.cycles_per_byte) {
    if (!(*o.cycles_per_byte > 0)) throw std::invalid_argument("--cycles-per-byte: must be > 0");
    if (!(o.beta > 0)) throw std::invalid_argument("--beta: must be > 0");
    const accel::Kernel k{*o.cycles_per_byte, o.beta};
    out["min_paying_bytes"] = {
        {"speedup", or_null(accel::min_paying_bytes_speedup(p, k, design, strategy))},
        {"latency", or_null(accel::min_paying_bytes_latency(p, k, design))}};
  }
  std::optional<PredictionReport> projection;
  if (!o.link.empty()) {
    projection = link_projection(o, store->database());
    out["link"] = o.link;
    out["link_latency_ns"] = link_latency_ns(o);
    out["link_projection"] = to_json(*projection);
  }
  if (o.json) {
    std::cout << out.dump(2) << '\n';
  } else {
    print_single(out, projection);
  }
  if (o.store) store_single(o, started_ns, out, p, e, projection);
}

}  // namespace

MeasuredLoad measured_load(db::Database& db, std::int64_t run_id, double host_ghz,
                           double offloads_per_request) {
  const db::ServiceLoad load = db::run_service_load(db, run_id);
  const std::string run = "run " + std::to_string(run_id);
  if (!load.mean_service_ns || load.service_samples == 0) {
    throw std::runtime_error(run + " stored no service times (X-Service-Time-Ns)");
  }
  if (!load.throughput_rps || !(*load.throughput_rps > 0)) {
    throw std::runtime_error(run + " stored no throughput (not a nabla load run?)");
  }
  MeasuredLoad m;
  m.throughput_rps = *load.throughput_rps;
  m.mean_service_ns = *load.mean_service_ns;
  m.service_samples = load.service_samples;
  m.cycles_per_s = m.throughput_rps * m.mean_service_ns * host_ghz;
  m.offloads_per_s = m.throughput_rps * offloads_per_request;
  return m;
}

void register_accel_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "accel", "estimate what offloading a kernel to an accelerator gains (Accelerometer model)");
  cmd->add_option("--cycles", o->cycles, "C: host cycles per second");
  cmd->add_option("--alpha", o->alpha, "alpha: share of C in the kernel, in [0, 1]");
  cmd->add_option("--accel-factor", o->accel_factor, "A: peak speedup of the accelerator");
  cmd->add_option("--offloads-per-s", o->offloads_per_s, "n: offloads per second");
  cmd->add_option("--o0", o->o0, "o0: host cycles setting up one offload");
  cmd->add_option("--L", o->transfer, "L: cycles moving one offload to the accelerator");
  cmd->add_option("--Q", o->queue, "Q: cycles one offload waits in a queue");
  cmd->add_option("--o1", o->o1, "o1: cycles of one thread switch");
  cmd->add_option("--design", o->design, "sync, sync-os, async or async-distinct");
  cmd->add_option("--strategy", o->strategy, "on-chip, off-chip or remote");
  cmd->add_option("--cycles-per-byte", o->cycles_per_byte,
                  "C_b: host cycles per byte of offload (prints the sizes that pay off)");
  cmd->add_option("--beta", o->beta, "beta: kernel complexity exponent (cycles = C_b g^beta)");
  cmd->add_option("--config", o->config, "TOML file of kernels, granularities and strategies");
  cmd->add_option("--from-run", o->from_run, "Take C and n from this stored nabla load run");
  cmd->add_option("--host-ghz", o->host_ghz, "Host busy frequency, to turn ns into cycles");
  cmd->add_option("--offloads-per-request", o->offloads_per_request,
                  "Offloads per request (with --from-run and --link)");
  cmd->add_option("--link", o->link, "Remote offload across this link (label or HOST->HOST)");
  cmd->add_option("--link-latency", o->link_latency, "The link's one-way latency, e.g. 250us");
  cmd->add_option("--gradient-run", o->gradient_run, "Run that measured the link's gradient");
  cmd->add_option(
      "--db", o->db_path,
      "Run history: read --from-run and --gradient-run from it, store the result in it");
  cmd->add_option("--confidence", o->confidence, "Confidence of the projection's intervals");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o, cmd] {
    o->store = cmd->count("--db") > 0 || o->from_run || o->gradient_run;
    if (o->config.empty()) {
      run_single(*o);
    } else {
      run_config(*o);
    }
  });
}

}  // namespace nabla::coordinator
