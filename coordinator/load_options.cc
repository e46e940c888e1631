// `nabla load`'s flags: LoadOptions as typed into a LoadPlan, every bad value
// one std::invalid_argument naming its flag.
#include "load_options.hh"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "nabla/common/cpu_latency.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/units.hh"
#include "nabla/loadgen/protocol.hh"

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

}  // namespace

LoadTarget parse_target(const std::string& text) {
  return load::parse_target(text, "--target", load::load_target_rules());
}

namespace {

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

// The --percentile values in order, 99 when none is given; p50 is always
// reported (the sweep table shows it); the first stays the target.
std::vector<double> parse_percentiles(const std::vector<std::string>& items) {
  std::vector<double> percentiles;
  for (const auto& item : items) {
    for (const auto& p : split(item, ',')) {
      const double v = parse_number("--percentile", p);
      if (!(v > 0 && v < 100)) bad("--percentile", "must be in (0, 100), got '" + p + "'");
      percentiles.push_back(v);
    }
  }
  if (percentiles.empty()) percentiles.push_back(99.0);
  if (std::find(percentiles.begin(), percentiles.end(), 50.0) == percentiles.end()) {
    percentiles.push_back(50.0);
  }
  return percentiles;
}

// When a send counts as late, how the load threads wait for it, and where
// and at which priority they run.
void apply_send_timing(const LoadOptions& o, loadgen::EngineConfig& e) {
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
  if (o.slice == "off") {
    e.slice_ns = 0;
  } else {
    e.slice_ns = parse_duration("--slice", o.slice);
    if (e.slice_ns < 100'000 || e.slice_ns > 100'000'000) {
      bad("--slice", "must be from 100us to 100ms, or off, got '" + o.slice + "'");
    }
  }
  if (!o.cpus.empty()) e.cpus = parse_cpu_list(o.cpus);
}

// The rate points: --sweep LO:HI:STEPS evenly spaced, or the one --rate.
void apply_rates(const LoadOptions& o, LoadPlan& plan) {
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
}

// --agent: who sends instead of this process. The agents' host settings are
// their own flags, so this process's are refused with them.
void apply_agents(const LoadOptions& o, LoadPlan& plan) {
  if (o.agents.empty()) return;
  for (const std::string& text : o.agents) {
    loadd::AgentAddress a;
    try {
      a = loadd::parse_agent(text);
    } catch (const std::invalid_argument& e) {
      bad("--agent", e.what());
    }
    for (const auto& other : plan.agents) {
      if (other.host == a.host && other.port == a.port) bad("--agent", a.name() + " given twice");
    }
    plan.agents.push_back(std::move(a));
  }
  // A loopback target is each agent's own loopback: only agents on this
  // machine reach the server that is meant.
  auto loopback = [](const std::string& host) {
    const auto ip = common::IpAddress::parse(host);
    return host == "localhost" || (ip && ip->is_loopback());
  };
  if (loopback(plan.target.host)) {
    for (const auto& a : plan.agents) {
      if (!loopback(a.host)) {
        bad("--target", "a loopback target is each agent's own loopback, and agent " + a.name() +
                            " is on another machine: give an address the agents reach");
      }
    }
  }
  if (!o.cpus.empty()) bad("--cpus", "with --agent, set it on each agent (nabla-loadd --cpus)");
  // How a load thread waits for its sends is the agent's own: it
  // calibrates its send timer to its own machine.
  if (o.spin != "auto") bad("--spin", "with --agent, each agent times its own sends");
  if (o.slice != "100us") bad("--slice", "with --agent, each agent asks for its own slice");
  if (o.rt_priority != 0) bad("--rt-priority", "with --agent, the agents' threads are theirs");
  if (o.cpu_latency_us != "off" && o.cpu_latency_us != "auto") {
    bad("--cpu-latency-us", "with --agent, hold it on the agents' machines");
  }
  const int64_t lease = parse_duration("--agent-lease", o.agent_lease);
  if (lease < 1'000'000'000 || lease > 600'000'000'000 || lease % 1'000'000'000 != 0) {
    bad("--agent-lease", "must be whole seconds from 1s to 600s, got '" + o.agent_lease + "'");
  }
  plan.agent_lease = std::chrono::seconds(lease / 1'000'000'000);
}

int parse_integer(const char* flag, const std::string& text) {
  const double v = parse_number(flag, text);
  if (v != std::floor(v) || std::fabs(v) > 1e9)
    bad(flag, "expected an integer, got '" + text + "'");
  return static_cast<int>(v);
}

// The workload flags as the workload's raw input (load/workload.hh): its
// rules and its engine are the campaign's too.
load::WorkloadInput workload_input(const LoadOptions& o) {
  load::WorkloadInput in;
  in.target = o.target;
  in.connections = o.connections;
  in.threads = o.threads;
  in.outstanding = o.outstanding;
  if (o.streams_per_connection != 0) in.streams_per_connection = o.streams_per_connection;
  in.interarrival = o.interarrival;
  in.mix = load::parse_mix_list(o.mix, "--mix");
  in.keys = o.keys;
  in.key_dist = o.key_dist;
  in.value_size = o.value_size;
  in.ca_file = o.ca_file;
  in.insecure = o.insecure;
  in.server_name = o.server_name;
  in.grpc_methods = o.grpc_methods;
  in.grpc_messages = o.grpc_messages;
  in.seed = o.seed;
  return in;
}

}  // namespace

LoadPlan parse_load_options(const LoadOptions& o) {
  LoadPlan plan;
  plan.workload = load::parse_workload(workload_input(o), load::flag_keys());
  plan.target = plan.workload.target_parts();
  auto& c = plan.controller;
  // Every round's connections may resume the sessions of the rounds before.
  c.engine = load::engine_config(plan.workload, loadgen::make_tls_session_cache());
  auto& e = c.engine;
  // Kernel software RX/TX stamps (timestamping.hh); hardware is planned and
  // reported at run time. Not through TLS records (engine.hh); h2c has them.
  e.software_rx_timestamps = !plan.workload.tls();
  c.percentiles = parse_percentiles(o.percentiles);
  const int64_t width = parse_duration("--ci-width", o.ci_width);
  if (width <= 0) bad("--ci-width", "must be > 0");
  c.ci_width_ns = static_cast<double>(width);
  if (!(o.confidence > 0 && o.confidence < 1)) bad("--confidence", "must be in (0, 1)");
  c.confidence = o.confidence;
  apply_send_timing(o, e);
  plan.cpu_latency_auto = o.cpu_latency_us == "auto";
  try {
    // auto: idle CPUs poll while this machine measures (docs/method.md,
    // "Client defaults"); agents measure on their own machines.
    plan.cpu_latency_us = plan.cpu_latency_auto
                              ? (o.agents.empty() ? std::optional<int32_t>(0) : std::nullopt)
                              : common::parse_cpu_latency_limit(o.cpu_latency_us);
  } catch (const std::invalid_argument&) {
    bad("--cpu-latency-us",
        "expected auto, off or 0..2000000000 (whole us), got '" + o.cpu_latency_us + "'");
  }
  c.max_duration_ns = parse_duration("--max-duration", o.max_duration);
  if (c.max_duration_ns < 500'000'000) bad("--max-duration", "must be at least 500ms");
  apply_rates(o, plan);
  apply_agents(o, plan);
  c.engine.schedule.rate_per_s = plan.rates.front();
  loadgen::validate(c);
  return plan;
}

void resolve_load_target(LoadPlan& plan, const common::Resolver& resolver, std::ostream& log) {
  const common::ResolvedHost r = common::resolve_host(plan.target.host, resolver, "--target");
  if (r.name.empty()) return;
  plan.target.host_name = r.name;
  plan.target.host = r.address;
  plan.workload.host_name = r.name;
  plan.workload.host = r.address;
  plan.controller.engine.host = r.address;
  log << common::resolved_line(r) << '\n';
}

void apply_number_flags(const LoadNumberFlags& flags, LoadOptions& o) {
  o.connections = parse_integer("--connections", flags.connections);
  o.threads = parse_integer("--threads", flags.threads);
  o.outstanding = parse_integer("--outstanding", flags.outstanding);
  o.rt_priority = parse_integer("--rt-priority", flags.rt_priority);
  o.streams_per_connection =
      parse_integer("--streams-per-connection", flags.streams_per_connection);
  o.confidence = parse_number("--confidence", flags.confidence);
  std::uint64_t s = 0;
  const std::string& seed = flags.seed;
  auto [ptr, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), s);
  if (seed.empty() || ec != std::errc() || ptr != seed.data() + seed.size()) {
    bad("--seed", "expected a non-negative integer, got '" + seed + "'");
  }
  o.seed = s;
}

}  // namespace nabla::coordinator
