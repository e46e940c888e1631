// `nabla load`: flags (load_options.cc) -> the load library (load/: the
// workload, the rate-point driver, the run-history recorder) -> the report
// (load_report.cc); and the subcommand's registration.
#include "nabla/coordinator/load_command.hh"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "load_memlat.hh"
#include "load_options.hh"
#include "load_report.hh"
#include "memlat_rows.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/report_command.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/load/driver.hh"
#include "nabla/loadgen/timestamping.hh"

namespace nabla::coordinator {
namespace {

// Null without --agent.
nlohmann::json agents_config_json(const LoadPlan& plan) {
  if (plan.agents.empty()) return nullptr;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : plan.agents) {
    list.push_back({{"agent", a.name()}, {"kind", loadgen::to_string(a.kind)}});
  }
  return {{"list", list}, {"lease_s", plan.agent_lease.count()}};
}

nlohmann::json config_json(const LoadOptions& o, const LoadPlan& plan,
                           const nlohmann::json& cpu_latency) {
  return {
      {"command", "load"},
      {"target", o.target},
      {"target_address", plan.target.host},
      {"rates", plan.rates},
      {"connections", o.connections},
      {"threads", o.threads},
      {"outstanding", o.outstanding},
      {"mix", o.mix},
      {"percentiles", plan.controller.percentiles},
      {"ci_width_ns", plan.controller.ci_width_ns},
      {"confidence", plan.controller.confidence},
      {"max_duration_ns", plan.controller.max_duration_ns},
      {"late_threshold_ns", plan.controller.engine.late_threshold_ns},
      {"spin_ns", plan.controller.engine.spin_ns ? nlohmann::json(*plan.controller.engine.spin_ns)
                                                 : nlohmann::json()},
      {"slice_ns", plan.controller.engine.slice_ns},
      {"rt_priority", plan.controller.engine.rt_priority},
      {"cpus", plan.controller.engine.cpus},
      {"cpu_latency_us",
       plan.cpu_latency_us ? nlohmann::json(*plan.cpu_latency_us) : nlohmann::json()},
      {"cpu_latency", cpu_latency},
      {"interarrival", o.interarrival},
      {"keys", o.keys},
      {"key_dist", o.key_dist},
      {"value_size", o.value_size},
      {"streams_per_connection", loadgen::is_http2(plan.controller.engine.protocol)
                                     ? nlohmann::json(plan.controller.engine.max_outstanding)
                                     : nlohmann::json()},
      {"tls", plan.controller.engine.tls.enabled
                  ? nlohmann::json{{"ca_file", o.ca_file},
                                   {"verify", plan.controller.engine.tls.verify},
                                   {"server_name", plan.controller.engine.tls.server_name}}
                  : nlohmann::json()},
      {"grpc_methods", o.grpc_methods},
      {"grpc_messages", o.grpc_messages},
      {"seed", o.seed},
      {"agents", agents_config_json(plan)}};
}

void print_progress(std::ostream& err, double rate, const loadgen::ControllerProgress& p) {
  err << "\r\033[K" << format_number(rate) << " rps  " << p.phase << " round " << p.round
      << "  achieved " << format_number(p.throughput_rps) << " rps";
  if (p.phase == "measurement") {
    err << "  samples " << p.samples << " kept " << p.kept << "  CI width "
        << (p.ci_width_ns ? common::format_latency_ns(*p.ci_width_ns) : std::string("-"));
  }
  err << std::flush;
}

// Counters that cannot be had for --memlat (docs/memlat.md).
constexpr int kCountersUnavailable = 3;

void print_load_output(const LoadOptions& o, const LoadPlan& plan,
                       std::vector<nlohmann::json>& points, const nlohmann::json& memlat,
                       const load::LoadRunRecorder* recorder, std::ostream& out) {
  if (o.json) {
    if (plan.sweep) {
      nlohmann::json doc{{"sweep", points}};
      if (!memlat.is_null()) doc["memlat"] = memlat;
      out << doc.dump(2) << '\n';
    } else {
      if (!memlat.is_null()) points.front()["memlat"] = memlat;
      out << points.front().dump(2) << '\n';
    }
    return;
  }
  out << "nabla load " << o.target << '\n';
  if (plan.sweep) {
    print_load_sweep(out, points);
  } else {
    print_load_point(out, points.front());
  }
  if (!memlat.is_null()) {
    const nlohmann::json& mean = memlat["mean_latency_ns"];
    out << "memory latency (" << memlat["target"].get<std::string>() << ", " << memlat["intervals"]
        << " intervals): "
        << (mean.is_null() ? std::string("- (no LLC-miss reads)")
                           : format_number(mean.get<double>()) + " ns mean")
        << '\n';
  }
  if (recorder) {
    const std::int64_t ids[] = {recorder->run_id()};
    out << "stored as run " << ids[0] << " in " << o.db << '\n'
        << "report: " << report_command_line(ids, o.db) << '\n';
  }
}

// With --agent: connects to every agent (each by its own key) before
// anything is measured; null without agents.
std::unique_ptr<loadd::AgentPool> connect_agents(const LoadOptions& o, const LoadPlan& plan,
                                                 const load::LoadRunRecorder* recorder,
                                                 std::ostream& err) {
  if (plan.agents.empty()) return nullptr;
  loadd::AgentPoolOptions options;
  options.owner = recorder ? "nabla-load-run-" + std::to_string(recorder->run_id())
                           : "nabla-load-pid-" + std::to_string(::getpid());
  options.lease = plan.agent_lease;
  options.clock = common::monotonic_ns;
  const std::optional<std::string> key_file =
      o.key_file.empty() ? std::nullopt : std::optional<std::string>(o.key_file);
  options.key_for = [key_file](const loadd::AgentAddress& a) {
    return common::client_key(key_file, common::kLoaddKeyName, a.host, a.port);
  };
  auto pool = std::make_unique<loadd::AgentPool>(plan.agents, std::move(options));
  err << "nabla load: " << plan.agents.size() << " agents:";
  for (const auto& a : plan.agents) err << ' ' << a.name() << '/' << loadgen::to_string(a.kind);
  err << '\n';
  return pool;
}

}  // namespace

int run_load(const LoadOptions& o, std::ostream& out, std::ostream& err) {
  LoadPlan plan = parse_load_options(o);
  auto memlat_opened = open_load_memlat(o);
  if (const auto* u = std::get_if<memlat::Unavailable>(&memlat_opened)) {
    err << "nabla load: --memlat: counters unavailable: " << u->reason << '\n';
    return kCountersUnavailable;
  }
  LoadMemlat* memlat_setup = std::get_if<LoadMemlat>(&memlat_opened);
  resolve_load_target(plan, common::system_resolver(), err);
  // SIGINT/SIGTERM are blocked from before the run is stored until the
  // measurement ends (the engine threads inherit the mask) and taken after
  // each round, so an interrupted run ends through the normal error path:
  // the stored run is marked failed, exit 1.
  common::StopSignals signals(common::StopSignals::Mode::kBlock);
  // Held until every point is measured; the kernel drops it if we die.
  std::optional<common::CpuLatencyRequest> cpu_latency;
  nlohmann::json cpu_latency_json;  // null with --cpu-latency-us off
  if (plan.cpu_latency_us) {
    cpu_latency.emplace(*plan.cpu_latency_us);
    cpu_latency_json = {{"limit_us", *plan.cpu_latency_us},
                        {"requested", plan.cpu_latency_auto ? "auto" : "flag"},
                        {"held", cpu_latency->held()},
                        {"error", cpu_latency->error()}};
    if (!cpu_latency->held() && !plan.cpu_latency_auto) {
      err << "nabla load: warning: --cpu-latency-us " << *plan.cpu_latency_us
          << " not held: " << cpu_latency->error() << "; measuring without it\n";
    }
    plan.controller.engine.cpu_latency_held = cpu_latency->held();
  }
  std::unique_ptr<load::LoadRunRecorder> recorder;
  if (!o.db.empty()) {
    recorder = std::make_unique<load::LoadRunRecorder>(o.db, config_json(o, plan, cpu_latency_json),
                                                       o.seed);
  }
  std::vector<nlohmann::json> points;
  std::unique_ptr<loadd::AgentPool> agents = connect_agents(o, plan, recorder.get(), err);
  nlohmann::json memlat_json;  // null without --memlat
  std::optional<MemlatSampler> sampler;
  if (memlat_setup) {
    memlat_setup->counters.read_delta(0);  // intervals start now
    sampler.emplace([c = &memlat_setup->counters](std::int64_t ns) { return c->read_delta(ns); },
                    memlat_setup->constants, memlat_setup->interval_ns, common::realtime_ns);
  }
  // Held for the whole run: restores the NIC's setting if it was changed.
  // Agents stamp on their own machines.
  const loadgen::TimestampPlan stamps =
      agents ? loadgen::TimestampPlan{} : loadgen::plan_timestamps(plan.target.host);
  const bool live = ::isatty(STDERR_FILENO) != 0;
  load::DriverConfig run;
  run.controller = plan.controller;
  run.controller.engine.phc_index = stamps.phc_index;
  run.rates = plan.rates;
  run.clock = common::monotonic_ns;
  if (agents) run.runner = agents->runner();
  run.target = plan.target;
  load::DriverHooks hooks;
  hooks.store = recorder.get();
  hooks.progress = [&](double rate, const loadgen::ControllerProgress& p) {
    if (live) print_progress(err, rate, p);
    if (const int sig = signals.take()) {
      throw std::runtime_error(std::string("interrupted by ") +
                               (sig == SIGINT ? "SIGINT" : "SIGTERM") + " during round " +
                               std::to_string(p.round) + " at " + format_number(rate) + " rps");
    }
  };
  hooks.point_done = [&](const load::RatePoint& measured) {
    if (live) err << "\r\033[K" << std::flush;
    const loadgen::ControllerConfig& c = measured.config;
    nlohmann::json point =
        load_result_json(measured.result, c,
                         agents ? "taken by each agent on its own machine"
                         : c.engine.software_rx_timestamps
                             ? stamps.note
                             : "user space: kernel stamps are not matched through TLS records");
    point["cpu_latency"] = cpu_latency_json;
    if (recorder) {
      point["run_id"] = recorder->run_id();
      point["samples_stored"] = *measured.samples_stored;
    }
    if (live && plan.sweep) {
      err << "rate " << format_number(measured.rate)
          << " rps: " << point["verdict"].get<std::string>() << '\n';
    }
    points.push_back(std::move(point));
  };
  hooks.before_complete = [&] {
    if (!sampler) return;
    const std::vector<MemlatSampler::Interval> intervals = sampler->stop();
    memlat_json = memlat_summary_json(*memlat_setup, intervals);
    if (!recorder) return;
    for (const MemlatSampler::Interval& i : intervals) {
      recorder->add_memlat_sample(memlat_row(recorder->run_id(), i.t_ns, i.counters,
                                             memlat_setup->constants, memlat_setup->target));
    }
  };
  hooks.on_error = [&] {
    if (live) err << "\r\033[K" << std::flush;
    if (agents) agents->stop_all();
  };
  load::run_rate_points(run, hooks);
  print_load_output(o, plan, points, memlat_json, recorder.get(), out);
  return 0;
}

void register_load_command(CLI::App& app) {
  auto o = std::make_shared<LoadOptions>();
  auto* cmd = app.add_subcommand(
      "load", "measure tail latency at one load (or a sweep), with CIs, or N/A with the reasons");
  // Numbers are taken as strings and parsed by apply_number_flags, so every
  // bad value is one error line naming its flag and exit code 2.
  auto numbers = std::make_shared<LoadNumberFlags>();
  cmd->add_option("--target", o->target,
                  "http://H:P/path | https://H:P/path | h2://H:P/path (HTTP/2 over TLS) | "
                  "h2c://H:P/path (HTTP/2 cleartext, prior knowledge) | grpc://H:P | grpcs://H:P | "
                  "memcache://H:P | redis://H:P | echo://H:P | sockperf://H:P (a sockperf server)");
  cmd->add_option("--rate", o->rate, "target rate, requests per second (open loop, Poisson)");
  cmd->add_option("--connections", numbers->connections,
                  "connections, spread over the threads (default 1)");
  cmd->add_option("--threads", numbers->threads, "load threads (default 1)");
  cmd->add_option("--outstanding", numbers->outstanding,
                  "max requests outstanding per connection (K)");
  cmd->add_option("--streams-per-connection", numbers->streams_per_connection,
                  "h2, h2c, grpc, grpcs: streams open at once per connection (the K of "
                  "--outstanding; default 1)");
  cmd->add_option("--mix", o->mix,
                  "request mix: /view=0.7,/bid=0.3 (http, https, h2, h2c), get=0.9,set=0.1 "
                  "(memcache, redis) or /pkg.S/A=0.7,/pkg.S/B=0.3 (grpc methods)");
  cmd->add_option("--ca-file", o->ca_file,
                  "https, h2, grpcs: PEM file of the CAs the server's certificate must chain to "
                  "(default: the system's)");
  cmd->add_flag("--insecure", o->insecure,
                "https, h2, grpcs: accept any server certificate (no check at all)");
  cmd->add_option("--server-name", o->server_name,
                  "https, h2, grpcs: the name sent by SNI and checked in the certificate "
                  "(default: the target's host name, or its address against the IP SANs)");
  cmd->add_option("--grpc-method", o->grpc_methods,
                  "grpc, grpcs: a unary method /package.Service/Method to call, repeatable (each "
                  "is a transaction type; weights with --mix)");
  cmd->add_option("--grpc-message", o->grpc_messages,
                  "grpc, grpcs: a file with the request message in protobuf wire format, one per "
                  "--grpc-method in order, or one for all (default: empty messages)");
  cmd->add_option("--percentile", o->percentiles,
                  "percentile(s) to report, repeatable or comma list; the first is the target "
                  "(default 99)");
  cmd->add_option("--ci-width", o->ci_width, "target CI width of the first percentile")
      ->default_val("50us");
  cmd->add_option("--confidence", numbers->confidence, "CI confidence level (default 0.95)");
  cmd->add_option("--max-duration", o->max_duration, "give up (N/A) after this long, per rate")
      ->default_val("120s");
  cmd->add_option("--late-threshold", o->late_threshold,
                  "a send later than this is late (default 200us; 1ms on a busy VM)")
      ->default_val("200us");
  cmd->add_option("--spin", o->spin,
                  "arm each send timer this early and busy-poll to it: auto (default) = a high "
                  "quantile of the load thread's own measured wake-up lateness, at most half of "
                  "each ms; or a fixed duration, e.g. 50us; 0 = sleep only")
      ->default_val("auto");
  cmd->add_option("--slice", o->slice,
                  "scheduler slice the load threads ask for (EEVDF, Linux 6.12+; no privilege): "
                  "shorter than other tasks' so a send timer's wake-up preempts them at once; "
                  "100us..100ms, or off")
      ->default_val("100us");
  cmd->add_option("--rt-priority", numbers->rt_priority,
                  "SCHED_FIFO priority 1-99 of the load threads, so the server and other "
                  "tasks cannot delay sends (needs root; default 0 = normal scheduling)");
  cmd->add_option("--cpus", o->cpus,
                  "pin the load threads to these CPUs, e.g. 0 or 0,2-3 (thread i on the i-th; "
                  "keep them off the server's cores)");
  cmd->add_option("--cpu-latency-us", o->cpu_latency_us,
                  "hold this PM QoS CPU latency limit for the run (/dev/cpu_dma_latency, root; "
                  "0 = idle CPUs poll, so wake-ups are not delayed by halted CPUs); default auto: "
                  "0 when this process may hold it, else none; off: never")
      ->default_val("auto");
  cmd->add_option("--interarrival", o->interarrival,
                  "inter-arrival distribution: exp (Poisson), fixed, uniform, lognormal:SIGMA")
      ->capture_default_str();
  cmd->add_option("--keys", o->keys, "memcache/redis: number of keys")->capture_default_str();
  cmd->add_option("--key-dist", o->key_dist, "memcache/redis: uniform or zipf[:S] (S 0.99)")
      ->capture_default_str();
  cmd->add_option("--value-size", o->value_size,
                  "memcache/redis: SET value bytes, one size for every SET (1..1000000; for "
                  "several sizes, one run per size)")
      ->capture_default_str();
  cmd->add_option("--sweep", o->sweep, "rates LO:HI:STEPS instead of --rate");
  cmd->add_option("--agent", o->agents,
                  "HOST[:PORT][/KIND]: a load agent (nabla-loadd, port 7313) sends a share of "
                  "the rate instead of this process; repeatable. KIND: symmetric (default), "
                  "throughput (no latency recorded) or latency (5% of the rate, few connections)");
  cmd->add_option("--key-file", o->key_file,
                  "with --agent: key file, or key directory of HOST.key per agent (default: "
                  "$NABLA_KEY_FILE, /etc/nabla/keys/HOST.key, /etc/nabla/key)");
  cmd->add_option("--agent-lease", o->agent_lease,
                  "with --agent: an agent stops a round nobody has asked about for this long")
      ->default_val("5s");
  cmd->add_option("--db", o->db,
                  "store the run, tail results and kept samples in this SQLite file");
  cmd->add_option("--seed", numbers->seed,
                  "seed of the arrival schedule and request mix (default 1)");
  cmd->add_flag("--json", o->json, "print the result as JSON");
  cmd->add_flag("--memlat", o->memlat,
                "sample memory latency from counters beside the measurement (exit 3 without "
                "counters); stored in the memlat table with --db");
  cmd->add_option("--memlat-pid", o->memlat_pid,
                  "with --memlat: sample this process (the server) instead of the machine");
  cmd->add_option("--memlat-interval", o->memlat_interval, "with --memlat: interval (1s)");
  cmd->allow_extras();
  cmd->callback([o, cmd, numbers] {
    const auto extras = cmd->remaining();
    if (!extras.empty())
      throw std::invalid_argument("unknown option or argument '" + extras.front() + "'");
    apply_number_flags(*numbers, *o);
    const int code = run_load(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
