#include "nabla/coordinator/load_command.hh"

#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "load_report.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/loadgen/timestamping.hh"

namespace nabla::coordinator {
namespace {

using loadgen::ProtocolSpec;

[[noreturn]] void bad(const std::string& flag, const std::string& what) {
  throw std::invalid_argument(flag + ": " + what);
}

double parse_number(const std::string& flag, std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    bad(flag, "expected a number, got '" + std::string(text) + "'");
  }
  return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

int64_t parse_duration(const std::string& flag, const std::string& text) {
  try {
    return common::parse_duration_ns(text);
  } catch (const std::invalid_argument& e) {
    bad(flag, e.what());
  }
}

// "/view=0.7,/bid=0.3" for HTTP; "get=0.9,set=0.1" for memcache and redis.
void apply_mix(const std::string& mix, const LoadTarget& target, ProtocolSpec& protocol) {
  if (mix.empty()) return;
  if (target.scheme == "echo" || target.scheme == "sockperf") {
    bad("--mix", target.scheme + " has a single request type");
  }
  std::vector<loadgen::WeightedUrl> urls;
  double get = -1, set = -1;
  for (const auto& item : split(mix, ',')) {
    const auto eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0)
      bad("--mix", "expected NAME=WEIGHT, got '" + item + "'");
    const std::string name = item.substr(0, eq);
    const double w = parse_number("--mix", item.substr(eq + 1));
    if (!(w > 0)) bad("--mix", "weight of '" + name + "' must be > 0");
    if (target.scheme == "http") {
      if (name.front() != '/') bad("--mix", "an HTTP path starts with '/', got '" + name + "'");
      urls.push_back({name, w});
    } else if (name == "get") {
      get = w;
    } else if (name == "set") {
      set = w;
    } else {
      bad("--mix", target.scheme + " types are get and set, got '" + name + "'");
    }
  }
  if (target.scheme == "http") {
    protocol.urls = urls;
  } else {
    get = std::max(get, 0.0);
    set = std::max(set, 0.0);
    protocol.get_ratio = get / (get + set);
  }
}

}  // namespace

LoadTarget parse_target(const std::string& text) {
  LoadTarget t;
  const auto sep = text.find("://");
  if (text.empty())
    bad("--target",
        "required (http://H:P/path, memcache://H:P, redis://H:P, echo://H:P, sockperf://H:P)");
  if (sep == std::string::npos) bad("--target", "expected SCHEME://HOST:PORT, got '" + text + "'");
  t.scheme = text.substr(0, sep);
  if (t.scheme != "http" && t.scheme != "memcache" && t.scheme != "redis" && t.scheme != "echo" &&
      t.scheme != "sockperf") {
    bad("--target",
        "scheme must be http, memcache, redis, echo or sockperf, got '" + t.scheme + "'");
  }
  std::string rest = text.substr(sep + 3);
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    if (t.scheme != "http") bad("--target", "only http targets take a path");
    t.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  } else if (t.scheme == "http") {
    t.path = "/";
  }
  const auto colon = rest.rfind(':');
  std::string host = rest.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) {
    bad("--target", "host must be an IPv4 address (or localhost), got '" + host + "'");
  }
  t.host = host;
  if (colon == std::string::npos) {
    if (t.scheme == "http")
      t.port = 80;
    else if (t.scheme == "memcache")
      t.port = 11211;
    else if (t.scheme == "redis")
      t.port = 6379;
    else
      bad("--target", t.scheme + " needs a port (" + t.scheme + "://H:P)");
  } else {
    const double p = parse_number("--target", rest.substr(colon + 1));
    if (!(p >= 1 && p <= 65535) || p != std::floor(p)) bad("--target", "port must be in 1..65535");
    t.port = static_cast<std::uint16_t>(p);
  }
  return t;
}

namespace {

void apply_interarrival(const std::string& spec, loadgen::ScheduleSpec& schedule) {
  if (spec == "exp") {
    schedule.kind = loadgen::ScheduleKind::kExponential;
  } else if (spec == "fixed") {
    schedule.kind = loadgen::ScheduleKind::kFixed;
  } else if (spec == "uniform") {
    schedule.kind = loadgen::ScheduleKind::kUniform;
  } else if (spec.rfind("lognormal:", 0) == 0) {
    schedule.kind = loadgen::ScheduleKind::kLognormal;
    schedule.lognormal_sigma = parse_number("--interarrival", spec.substr(10));
    if (!(schedule.lognormal_sigma > 0 && schedule.lognormal_sigma <= 10)) {
      bad("--interarrival", "lognormal:SIGMA needs SIGMA in (0, 10], got '" + spec + "'");
    }
  } else {
    bad("--interarrival", "must be exp, fixed, uniform or lognormal:SIGMA, got '" + spec + "'");
  }
}

void apply_keys(const LoadOptions& o, const LoadTarget& target, ProtocolSpec& protocol) {
  const bool key_value = target.scheme == "memcache" || target.scheme == "redis";
  if (!key_value && (o.keys != 1000 || o.key_dist != "uniform" || o.value_size != 32)) {
    bad("--keys", "--keys, --key-dist and --value-size apply to memcache:// and redis:// only");
  }
  if (o.keys < 1 || o.keys > 1'000'000'000) bad("--keys", "must be in 1..1e9");
  protocol.keys = o.keys;
  if (o.key_dist == "uniform") {
    protocol.key_distribution = loadgen::KeyDistribution::kUniform;
  } else if (o.key_dist == "zipf" || o.key_dist.rfind("zipf:", 0) == 0) {
    protocol.key_distribution = loadgen::KeyDistribution::kZipf;
    if (o.key_dist.size() > 5) protocol.zipf_s = parse_number("--key-dist", o.key_dist.substr(5));
    if (!(protocol.zipf_s > 0 && protocol.zipf_s <= 10)) {
      bad("--key-dist", "zipf:S needs S in (0, 10], got '" + o.key_dist + "'");
    }
  } else {
    bad("--key-dist", "must be uniform or zipf[:S], got '" + o.key_dist + "'");
  }
  if (o.value_size < 1 || o.value_size > 1'000'000) bad("--value-size", "must be in 1..1000000");
  protocol.value_bytes = o.value_size;
}

// "0,2-3" -> {0, 2, 3}; each CPU once, in the order given.
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  auto cpu = [&](const std::string& t) {
    const double v = parse_number("--cpus", t);
    if (v != std::floor(v) || v < 0 || v >= CPU_SETSIZE) {
      bad("--cpus", "expected CPU numbers like 0,2-3, got '" + text + "'");
    }
    return static_cast<int>(v);
  };
  for (const auto& item : split(text, ',')) {
    const auto dash = item.find('-');
    const int lo = cpu(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : cpu(item.substr(dash + 1));
    if (hi < lo) bad("--cpus", "range '" + item + "' runs backwards");
    for (int c = lo; c <= hi; ++c) {
      if (std::find(cpus.begin(), cpus.end(), c) != cpus.end()) {
        bad("--cpus", "CPU " + std::to_string(c) + " is listed twice");
      }
      cpus.push_back(c);
    }
  }
  try {
    loadgen::validate_cpus(cpus);
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    if (why.rfind("engine: ", 0) == 0) why.erase(0, 8);
    bad("--cpus", why);
  }
  return cpus;
}

}  // namespace

LoadPlan parse_load_options(const LoadOptions& o) {
  LoadPlan plan;
  plan.target = parse_target(o.target);
  auto& c = plan.controller;
  auto& e = c.engine;
  e.host = plan.target.host;
  e.port = plan.target.port;
  if (o.connections < 1) bad("--connections", "must be >= 1");
  if (o.threads < 1) bad("--threads", "must be >= 1");
  if (o.threads > o.connections) bad("--threads", "must be <= --connections");
  if (o.outstanding < 1) bad("--outstanding", "must be >= 1");
  e.connections = o.connections;
  e.threads = o.threads;
  e.max_outstanding = o.outstanding;
  e.seed = o.seed;
  // Kernel software RX/TX stamps (timestamping.hh); hardware is planned and
  // reported at run time.
  e.software_rx_timestamps = true;
  if (plan.target.scheme == "http") {
    e.protocol.kind = ProtocolSpec::Kind::kHttp;
    e.protocol.urls = {{plan.target.path, 1.0}};
    e.protocol.host_header = plan.target.host;
  } else if (plan.target.scheme == "memcache") {
    e.protocol.kind = ProtocolSpec::Kind::kMemcached;
  } else if (plan.target.scheme == "redis") {
    e.protocol.kind = ProtocolSpec::Kind::kRedis;
  } else if (plan.target.scheme == "sockperf") {
    // sockperf's TCP ping-pong frames against a `sockperf server`.
    e.protocol.kind = ProtocolSpec::Kind::kSockperf;
  } else {
    e.protocol.kind = ProtocolSpec::Kind::kEcho;
  }
  apply_mix(o.mix, plan.target, e.protocol);
  apply_interarrival(o.interarrival, e.schedule);
  apply_keys(o, plan.target, e.protocol);

  c.percentiles.clear();
  for (const auto& item : o.percentiles) {
    for (const auto& p : split(item, ',')) {
      const double v = parse_number("--percentile", p);
      if (!(v > 0 && v < 100)) bad("--percentile", "must be in (0, 100), got '" + p + "'");
      c.percentiles.push_back(v);
    }
  }
  if (c.percentiles.empty()) c.percentiles.push_back(99.0);
  // p50 is always reported (the sweep table shows it); the first stays the target.
  if (std::find(c.percentiles.begin(), c.percentiles.end(), 50.0) == c.percentiles.end()) {
    c.percentiles.push_back(50.0);
  }
  const int64_t width = parse_duration("--ci-width", o.ci_width);
  if (width <= 0) bad("--ci-width", "must be > 0");
  c.ci_width_ns = static_cast<double>(width);
  if (!(o.confidence > 0 && o.confidence < 1)) bad("--confidence", "must be in (0, 1)");
  c.confidence = o.confidence;
  e.late_threshold_ns = parse_duration("--late-threshold", o.late_threshold);
  if (e.late_threshold_ns <= 0) bad("--late-threshold", "must be > 0");
  if (o.spin != "auto") {
    e.spin_ns = parse_duration("--spin", o.spin);
    if (*e.spin_ns > 10'000'000) bad("--spin", "must be at most 10ms");
  }
  if (o.rt_priority < 0 || o.rt_priority > 99) bad("--rt-priority", "must be in 0..99");
  if (o.rt_priority > 0 && e.spin_ns != 0 &&
      o.threads >= static_cast<int>(std::thread::hardware_concurrency())) {
    bad("--rt-priority",
        "with --spin, use fewer threads than cores (" +
            std::to_string(std::thread::hardware_concurrency()) +
            "): spinning real-time threads on every core starve the rest of the machine");
  }
  e.rt_priority = o.rt_priority;
  if (!o.cpus.empty()) e.cpus = parse_cpu_list(o.cpus);
  try {
    plan.cpu_latency_us = common::parse_cpu_latency_limit(o.cpu_latency_us);
  } catch (const std::invalid_argument& ex) {
    bad("--cpu-latency-us", ex.what());
  }
  c.max_duration_ns = parse_duration("--max-duration", o.max_duration);
  if (c.max_duration_ns < 500'000'000) bad("--max-duration", "must be at least 500ms");

  if (!o.sweep.empty()) {
    if (!o.rate.empty()) bad("--sweep", "give either --rate or --sweep, not both");
    const auto parts = split(o.sweep, ':');
    if (parts.size() != 3) bad("--sweep", "expected LO:HI:STEPS, got '" + o.sweep + "'");
    const double lo = parse_number("--sweep", parts[0]);
    const double hi = parse_number("--sweep", parts[1]);
    const double steps = parse_number("--sweep", parts[2]);
    if (!(lo > 0) || !(hi >= lo)) bad("--sweep", "needs 0 < LO <= HI");
    if (!(steps >= 1 && steps <= 100) || steps != std::floor(steps)) {
      bad("--sweep", "STEPS must be an integer in 1..100");
    }
    const int n = static_cast<int>(steps);
    for (int i = 0; i < n; ++i) plan.rates.push_back(n == 1 ? lo : lo + (hi - lo) * i / (n - 1));
    plan.sweep = true;
  } else {
    if (o.rate.empty()) bad("--rate", "required (requests per second), or give --sweep");
    const double r = parse_number("--rate", o.rate);
    if (!(r > 0 && r <= 10'000'000)) bad("--rate", "must be in (0, 1e7] requests per second");
    plan.rates.push_back(r);
  }
  c.engine.schedule.rate_per_s = plan.rates.front();
  loadgen::validate(c);
  return plan;
}

namespace {

nlohmann::json config_json(const LoadOptions& o, const LoadPlan& plan) {
  return {
      {"command", "load"},
      {"target", o.target},
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
      {"rt_priority", plan.controller.engine.rt_priority},
      {"cpus", plan.controller.engine.cpus},
      {"cpu_latency_us",
       plan.cpu_latency_us ? nlohmann::json(*plan.cpu_latency_us) : nlohmann::json()},
      {"interarrival", o.interarrival},
      {"keys", o.keys},
      {"key_dist", o.key_dist},
      {"value_size", o.value_size},
      {"seed", o.seed}};
}

// SIGINT/SIGTERM are blocked while the measurement runs (the engine threads
// inherit the mask) and taken after each round, so an interrupted run ends
// through the normal error path: the stored run is marked failed, exit 1.
class InterruptSignals {
 public:
  InterruptSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~InterruptSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  InterruptSignals(const InterruptSignals&) = delete;
  InterruptSignals& operator=(const InterruptSignals&) = delete;

  // Takes a pending SIGINT/SIGTERM, if any; returns its number or 0.
  int take() const {
    timespec zero{0, 0};
    const int sig = sigtimedwait(&set_, nullptr, &zero);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

void print_progress(std::ostream& err, double rate, const loadgen::ControllerProgress& p) {
  err << "\r\033[K" << format_number(rate) << " rps  " << p.phase << " round " << p.round
      << "  achieved " << format_number(p.throughput_rps) << " rps";
  if (p.phase == "measurement") {
    err << "  samples " << p.samples << " kept " << p.kept << "  CI width "
        << (p.ci_width_ns ? loadgen::format_latency_ns(*p.ci_width_ns) : std::string("-"));
  }
  err << std::flush;
}

// A point whose last round could not (re)connect is no measurement: the
// target went down or refuses connections (or never accepted one), so the
// run fails with the reason instead of being stored as complete.
void require_reachable(const loadgen::ControllerResult& r, const LoadTarget& target) {
  if (r.rounds.empty() || r.rounds.back().errors.connect == 0) return;
  const std::string where = target.host + ":" + std::to_string(target.port);
  const auto& last = r.rounds.back().errors;
  if (r.completed == 0 && r.errors.server == 0) {
    throw std::runtime_error("cannot connect to " + where + " (" +
                             std::to_string(r.errors.connect) + " connect errors)");
  }
  throw std::runtime_error(
      "lost the target " + where + ": round " + std::to_string(r.rounds.back().index) +
      " could not connect (" + std::to_string(last.connect) + " connect errors, " +
      std::to_string(last.read) + " read errors) after " + std::to_string(r.completed) +
      " requests answered; the server is down or refuses connections");
}

}  // namespace

int run_load(const LoadOptions& o, std::ostream& out, std::ostream& err) {
  const LoadPlan plan = parse_load_options(o);
  std::unique_ptr<LoadRunRecorder> recorder;
  if (!o.db.empty())
    recorder = std::make_unique<LoadRunRecorder>(o.db, config_json(o, plan), o.seed);
  std::vector<nlohmann::json> points;
  // Held until every point is measured; the kernel drops it if we die.
  std::optional<common::CpuLatencyRequest> cpu_latency;
  nlohmann::json cpu_latency_json;  // null unless --cpu-latency-us was given
  if (plan.cpu_latency_us) {
    cpu_latency.emplace(*plan.cpu_latency_us);
    cpu_latency_json = {{"limit_us", *plan.cpu_latency_us},
                        {"held", cpu_latency->held()},
                        {"error", cpu_latency->error()}};
    if (!cpu_latency->held()) {
      err << "nabla load: warning: --cpu-latency-us " << *plan.cpu_latency_us
          << " not held: " << cpu_latency->error() << "; measuring without it\n";
    }
  }
  InterruptSignals signals;
  try {
    // Held for the whole run: restores the NIC's setting if it was changed.
    const loadgen::TimestampPlan stamps = loadgen::plan_timestamps(plan.target.host);
    const bool live = ::isatty(STDERR_FILENO) != 0;
    for (double rate : plan.rates) {
      loadgen::ControllerConfig c = plan.controller;
      c.engine.schedule.rate_per_s = rate;
      c.engine.phc_index = stamps.phc_index;
      auto progress = [&](const loadgen::ControllerProgress& p) {
        if (live) print_progress(err, rate, p);
        if (const int sig = signals.take()) {
          throw std::runtime_error(std::string("interrupted by ") +
                                   (sig == SIGINT ? "SIGINT" : "SIGTERM") + " during round " +
                                   std::to_string(p.round) + " at " + format_number(rate) + " rps");
        }
      };
      const auto result = loadgen::run_controller(c, common::monotonic_ns, progress);
      if (live) err << "\r\033[K" << std::flush;
      require_reachable(result, plan.target);
      nlohmann::json point = load_result_json(result, c, stamps.note);
      point["cpu_latency"] = cpu_latency_json;
      if (recorder) {
        point["run_id"] = recorder->run_id();
        point["samples_stored"] = recorder->add_point(result, c);
      }
      if (live && plan.sweep) {
        err << "rate " << format_number(rate) << " rps: " << point["verdict"].get<std::string>()
            << '\n';
      }
      points.push_back(std::move(point));
    }
    if (recorder) recorder->complete();
  } catch (const std::exception& e) {
    if (recorder) recorder->fail(e.what());
    throw;
  }
  if (o.json) {
    if (plan.sweep) {
      out << nlohmann::json{{"sweep", points}}.dump(2) << '\n';
    } else {
      out << points.front().dump(2) << '\n';
    }
  } else {
    out << "nabla load " << o.target << '\n';
    if (plan.sweep) {
      print_load_sweep(out, points);
    } else {
      print_load_point(out, points.front());
    }
    if (recorder) out << "stored as run " << recorder->run_id() << " in " << o.db << '\n';
  }
  return 0;
}

void register_load_command(CLI::App& app) {
  auto o = std::make_shared<LoadOptions>();
  auto* cmd = app.add_subcommand(
      "load", "tail latency at one load (or a sweep), with CIs, or N/A with the reasons");
  // Numbers are taken as strings and parsed by parse_load_options, so every
  // bad value is one error line naming its flag and exit code 2.
  auto conns = std::make_shared<std::string>("1");
  auto threads = std::make_shared<std::string>("1");
  auto outstanding = std::make_shared<std::string>("1");
  auto confidence = std::make_shared<std::string>("0.95");
  auto seed = std::make_shared<std::string>("1");
  auto rt_priority = std::make_shared<std::string>("0");
  cmd->add_option("--target", o->target,
                  "http://H:P/path | memcache://H:P | redis://H:P | echo://H:P | "
                  "sockperf://H:P (a sockperf server)");
  cmd->add_option("--rate", o->rate, "target rate, requests per second (open loop, Poisson)");
  cmd->add_option("--connections", *conns, "connections, spread over the threads (default 1)");
  cmd->add_option("--threads", *threads, "load threads (default 1)");
  cmd->add_option("--outstanding", *outstanding, "max requests outstanding per connection (K)");
  cmd->add_option("--mix", o->mix, "request mix: /view=0.7,/bid=0.3 (http) or get=0.9,set=0.1");
  cmd->add_option("--percentile", o->percentiles,
                  "percentile(s) to report, repeatable or comma list; the first is the target "
                  "(default 99)");
  cmd->add_option("--ci-width", o->ci_width, "target CI width of the first percentile")
      ->default_val("50us");
  cmd->add_option("--confidence", *confidence, "CI confidence level (default 0.95)");
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
  cmd->add_option("--rt-priority", *rt_priority,
                  "SCHED_FIFO priority 1-99 of the load threads, so the server and other "
                  "tasks cannot delay sends (needs root; default 0 = normal scheduling)");
  cmd->add_option("--cpus", o->cpus,
                  "pin the load threads to these CPUs, e.g. 0 or 0,2-3 (thread i on the i-th; "
                  "keep them off the server's cores)");
  cmd->add_option("--cpu-latency-us", o->cpu_latency_us,
                  "hold this PM QoS CPU latency limit for the run (/dev/cpu_dma_latency, root; "
                  "0 = idle CPUs poll, so wake-ups are not delayed by halted CPUs); default off")
      ->default_val("off");
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
  cmd->add_option("--db", o->db,
                  "store the run, tail results and kept samples in this SQLite file");
  cmd->add_option("--seed", *seed, "seed of the arrival schedule and request mix (default 1)");
  cmd->add_flag("--json", o->json, "print the result as JSON");
  cmd->allow_extras();
  cmd->callback([o, cmd, conns, threads, outstanding, confidence, seed, rt_priority] {
    const auto extras = cmd->remaining();
    if (!extras.empty())
      throw std::invalid_argument("unknown option or argument '" + extras.front() + "'");
    auto integer = [](const char* flag, const std::string& text) {
      const double v = parse_number(flag, text);
      if (v != std::floor(v) || std::fabs(v) > 1e9)
        bad(flag, "expected an integer, got '" + text + "'");
      return static_cast<int>(v);
    };
    o->connections = integer("--connections", *conns);
    o->threads = integer("--threads", *threads);
    o->outstanding = integer("--outstanding", *outstanding);
    o->rt_priority = integer("--rt-priority", *rt_priority);
    o->confidence = parse_number("--confidence", *confidence);
    std::uint64_t s = 0;
    auto [ptr, ec] = std::from_chars(seed->data(), seed->data() + seed->size(), s);
    if (seed->empty() || ec != std::errc() || ptr != seed->data() + seed->size()) {
      bad("--seed", "expected a non-negative integer, got '" + *seed + "'");
    }
    o->seed = s;
    const int code = run_load(*o, std::cout, std::cerr);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
