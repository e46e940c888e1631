#include "nabla/coordinator/memlat_command.hh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <variant>

#include "memlat_rows.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/history_db.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/store.hh"
#include "nabla/memlat/counters.hh"
#include "nabla/memlat/probe.hh"
#include "nabla/memlat/recording.hh"
#include "nabla/memlat/uncore.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

// Counters that cannot be had: not a usage error and not a failure of the
// command's own making.
constexpr int kCountersUnavailable = 3;

struct Options {
  std::optional<int> pid;
  std::string cgroup;
  bool system = false;
  std::string interval = "1s", duration = "30s";
  std::optional<double> cache_cycles, base_ghz, cas_ns;
  std::string record, replay, db;
  bool probe = false;
  int load = 0;
  std::vector<std::size_t> sizes;
  std::uint64_t seed = 1;
  std::size_t loads = 2'000'000;
  bool json = false;
};

std::int64_t positive_duration_ns(const std::string& text, const char* flag) {
  std::int64_t ns = 0;
  try {
    ns = common::parse_duration_ns(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(flag) + ": " + e.what());
  }
  if (ns <= 0) throw std::invalid_argument(std::string(flag) + ": must be > 0");
  return ns;
}

std::string target_name(const memlat::Target& t) {
  switch (t.kind) {
    case memlat::Target::Kind::kPid:
      return "pid " + std::to_string(t.pid);
    case memlat::Target::Kind::kCgroup:
      return "cgroup " + t.cgroup_path;
    case memlat::Target::Kind::kSystem:
      break;
  }
  return "system";
}

memlat::Target target_of(const Options& o) {
  const int chosen = (o.pid ? 1 : 0) + (o.cgroup.empty() ? 0 : 1) + (o.system ? 1 : 0);
  if (chosen > 1) throw std::invalid_argument("--pid, --cgroup and --system exclude each other");
  memlat::Target t;
  if (o.pid) {
    if (*o.pid <= 0) throw std::invalid_argument("--pid: must be > 0");
    t.kind = memlat::Target::Kind::kPid;
    t.pid = *o.pid;
  } else if (!o.cgroup.empty()) {
    t.kind = memlat::Target::Kind::kCgroup;
    t.cgroup_path = o.cgroup;
  }
  return t;
}

[[noreturn]] void unavailable(const memlat::Unavailable& u) {
  std::cerr << "nabla memlat: counters unavailable: " << u.reason << '\n';
  throw CLI::RuntimeError(kCountersUnavailable);
}

void print_report(const json& report, bool as_json) {
  if (as_json) {
    std::cout << report.dump(2) << '\n';
    return;
  }
  const bool imc = report.contains("mean_imc_latency_ns");
  std::vector<std::string> columns = {"interval", "latency ns", "core GHz", "LLC-miss reads"};
  if (imc) columns.push_back("iMC latency ns");
  TextTable table(columns);
  const auto shown = [](const json& v) {
    return v.is_null() ? std::string("-") : format_number(v.get<double>());
  };
  int i = 0;
  for (const json& s : report["samples"]) {
    std::vector<std::string> row = {std::to_string(++i), shown(s["latency_ns"]),
                                    shown(s["frequency_ghz"]),
                                    format_number(s["requests"].get<double>(), 6)};
    if (imc) row.push_back(s.contains("imc") ? shown(s["imc"]["latency_ns"]) : "-");
    table.add_row(row);
  }
  table.print(std::cout);
  const json& mean = report["mean_latency_ns"];
  std::cout << "mean memory latency: "
            << (mean.is_null() ? std::string("- (no LLC-miss reads)")
                               : format_number(mean.get<double>()) + " ns")
            << '\n';
  if (imc) {
    std::cout << "mean at the memory controllers (all cores): "
              << shown(report["mean_imc_latency_ns"]) << " ns\n";
  }
}

// The run of kind memlat: the intervals (t_ns: wall clock at each one's
// end) and the probe's points, stored once the command has them all.
std::int64_t store_memlat_run(const Options& o, const json& config, std::int64_t started_ns,
                              const memlat::Recording* recording,
                              const std::vector<std::int64_t>& t_ns,
                              const std::vector<memlat::ProbePoint>& points) {
  db::RunStart start;
  start.kind = db::RunKind::kMemlat;
  start.config_json = config.dump();
  start.started_ns = started_ns;
  if (!points.empty()) start.seed = static_cast<std::int64_t>(o.seed);
  return store_finished_run(
      o.db, start, common::realtime_ns(), [&](db::Store& store, std::int64_t run) {
        for (std::size_t i = 0; recording && i < recording->samples.size(); ++i) {
          const std::string target = recording->target.empty() ? "replay" : recording->target;
          store.add_memlat_sample(
              memlat_row(run, t_ns.at(i), recording->samples[i], recording->constants, target));
        }
        for (const memlat::ProbePoint& p : points) {
          store.add_memlat_probe_point({run, static_cast<std::int64_t>(p.buffer_bytes),
                                        p.load_threads, p.latency_ns, p.huge_pages});
        }
      });
}

// What a stored counters run was: the report's inputs without its samples.
json counters_config(const char* mode, const memlat::Recording& r) {
  json config = memlat::report_json(r);
  config.erase("samples");
  config.erase("format");
  config["mode"] = mode;
  return config;
}

void report_stored(const Options& o, std::int64_t run_id) {
  std::cerr << "stored as run " << run_id << " in " << o.db << '\n';
}

void run_replay(const Options& o) {
  const std::int64_t started_ns = common::realtime_ns();
  const memlat::Recording r = memlat::load_recording(o.replay);
  print_report(memlat::report_json(r), o.json);
  if (o.db.empty()) return;
  // A recording has no wall clock: its intervals are laid end to end from
  // the moment it is stored.
  std::vector<std::int64_t> t_ns;
  std::int64_t t = started_ns;
  for (const memlat::CounterSample& s : r.samples) t_ns.push_back(t += s.interval_ns);
  json config = counters_config("replay", r);
  config["replay"] = o.replay;
  report_stored(o, store_memlat_run(o, config, started_ns, &r, t_ns, {}));
}

// The estimator's constants: the flags, else the table's and the
// machine's.
memlat::EstimatorConstants constants_for(const Options& o, const memlat::EventTable& table) {
  const std::optional<double> base = o.base_ghz ? o.base_ghz : memlat::detect_base_ghz();
  if (!base) unavailable({"unknown base frequency (no cpufreq base_frequency): give --base-ghz"});
  memlat::EstimatorConstants k{o.cache_cycles.value_or(table.default_cache_cycles), *base,
                               table.outstanding_scale};
  if (o.cas_ns) k.cas_ns = *o.cas_ns;
  return k;
}

void check_counter_flags(const Options& o) {
  if (o.base_ghz && !(*o.base_ghz > 0)) throw std::invalid_argument("--base-ghz: must be > 0");
  if (o.cache_cycles && *o.cache_cycles < 0) {
    throw std::invalid_argument("--cache-cycles: must be >= 0");
  }
  if (o.cas_ns && *o.cas_ns < 0) throw std::invalid_argument("--cas-ns: must be >= 0");
}

void run_counters(const Options& o) {
  const memlat::Target target = target_of(o);
  const std::int64_t interval_ns = positive_duration_ns(o.interval, "--interval");
  const std::int64_t duration_ns = positive_duration_ns(o.duration, "--for");
  check_counter_flags(o);
  auto detected = memlat::detect_event_table();
  if (auto* u = std::get_if<memlat::Unavailable>(&detected)) unavailable(*u);
  const memlat::EventTable table = std::get<memlat::EventTable>(detected);
  memlat::Recording recording;
  recording.microarch = table.microarch;
  recording.target = target_name(target);
  recording.constants = constants_for(o, table);
  auto opened = memlat::open_counters(table, target);
  if (auto* u = std::get_if<memlat::Unavailable>(&opened)) unavailable(*u);
  memlat::CounterSet& counters = std::get<memlat::CounterSet>(opened);
  const auto imc = memlat::count_imc(counters);
  if (const auto* u = std::get_if<memlat::Unavailable>(&imc)) {
    std::cerr << "nabla memlat: note: " << u->reason
              << "; the memory-controller variant is not computed\n";
  } else {
    recording.imc_microarch = std::get<std::string>(imc);
  }
  const std::int64_t started_ns = common::realtime_ns();
  std::vector<std::int64_t> t_ns;
  for (std::int64_t elapsed = 0; elapsed < duration_ns; elapsed += interval_ns) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(interval_ns));
    recording.samples.push_back(counters.read_delta(interval_ns));
    t_ns.push_back(common::realtime_ns());
  }
  if (!o.record.empty()) memlat::save_recording(recording, o.record);
  print_report(memlat::report_json(recording), o.json);
  if (o.db.empty()) return;
  json config = counters_config("counters", recording);
  config["interval_ns"] = interval_ns;
  config["for_ns"] = duration_ns;
  report_stored(o, store_memlat_run(o, config, started_ns, &recording, t_ns, {}));
}

void run_probe(const Options& o) {
  if (o.load < 0) throw std::invalid_argument("--load: must be >= 0");
  if (o.loads == 0) throw std::invalid_argument("--loads: must be > 0");
  for (std::size_t bytes : o.sizes) {
    // A cycle needs two lines to chase.
    if (bytes < 128) throw std::invalid_argument("--sizes: each must be >= 128 bytes");
  }
  const std::int64_t started_ns = common::realtime_ns();
  std::vector<std::size_t> sizes = o.sizes;
  if (sizes.empty()) sizes = memlat::default_buffer_sizes(memlat::read_cache_sizes());
  memlat::ProbeOptions options;
  options.seed = o.seed;
  options.loads = o.loads;
  json points = json::array();
  // Every size unloaded, then the largest under 1 .. N load threads.
  std::vector<memlat::ProbePoint> measured;
  for (std::size_t bytes : sizes) measured.push_back(memlat::chase(bytes, 0, options));
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  for (int n = 1; n <= o.load; ++n) measured.push_back(memlat::chase(largest, n, options));
  TextTable table({"buffer bytes", "load threads", "latency ns", "huge pages"});
  for (const memlat::ProbePoint& p : measured) {
    points.push_back({{"buffer_bytes", p.buffer_bytes},
                      {"latency_ns", p.latency_ns},
                      {"load_threads", p.load_threads},
                      {"huge_pages", p.huge_pages}});
    table.add_row({std::to_string(p.buffer_bytes), std::to_string(p.load_threads),
                   format_number(p.latency_ns), p.huge_pages ? "yes" : "no"});
  }
  if (o.json) {
    std::cout << json{{"seed", o.seed}, {"loads", o.loads}, {"points", points}}.dump(2) << '\n';
  } else {
    table.print(std::cout);
  }
  if (o.db.empty()) return;
  const json config = {{"mode", "probe"}, {"seed", o.seed}, {"loads", o.loads}, {"load", o.load}};
  report_stored(o, store_memlat_run(o, config, started_ns, nullptr, {}, measured));
}

}  // namespace

void register_memlat_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "memlat", "measure memory latency at run time from counters, or a pointer chase");
  cmd->add_option("--pid", o->pid, "Sample this process and its threads");
  cmd->add_option("--cgroup", o->cgroup, "Sample this cgroup (a cgroup v2 directory)");
  cmd->add_flag("--system", o->system, "Sample every CPU (the default)");
  cmd->add_option("--interval", o->interval, "Sampling interval (1s)");
  cmd->add_option("--for", o->duration, "How long to sample (30s)");
  cmd->add_option("--cache-cycles", o->cache_cycles,
                  "c_cache: core cycles a request spends in the caches (per-platform default)");
  cmd->add_option("--base-ghz", o->base_ghz, "f_base: the reference cycles' frequency");
  cmd->add_option("--cas-ns", o->cas_ns,
                  "t_CAS of the DRAM in ns, added to the memory controllers' estimate (14)");
  cmd->add_option("--record", o->record, "Also write the counter samples to FILE");
  cmd->add_option("--replay", o->replay, "Recompute the estimates of a recording");
  cmd->add_flag("--probe", o->probe, "Pointer chase: ns per dependent load per buffer size");
  cmd->add_option("--load", o->load, "With --probe: also under 1 .. N bandwidth threads");
  cmd->add_option("--sizes", o->sizes, "With --probe: buffer sizes in bytes (from the caches)");
  cmd->add_option("--seed", o->seed, "With --probe: seed of the random cycle (1)");
  cmd->add_option("--loads", o->loads, "With --probe: dependent loads timed per point");
  cmd->add_option("--db", o->db, "Also store the result as a run of kind memlat in this database");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    if (o->probe && !o->replay.empty()) {
      throw std::invalid_argument("--probe and --replay exclude each other");
    }
    if (o->probe) {
      run_probe(*o);
    } else if (!o->replay.empty()) {
      run_replay(*o);
    } else {
      run_counters(*o);
    }
  });
}

}  // namespace nabla::coordinator
