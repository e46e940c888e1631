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

bool has_path(const std::string& scheme) {
  return scheme == "http" || scheme == "https" || scheme == "h2" || scheme == "h2c";
}

bool is_grpc(const std::string& scheme) {
  return scheme == "grpc" || scheme == "grpcs";
}

// The gRPC methods' weights from the mix: every name a method given with
// --grpc-method, every method named.
void apply_grpc_mix(const std::vector<std::pair<std::string, double>>& mix,
                    ProtocolSpec& protocol) {
  for (const auto& [name, weight] : mix) {
    auto it = std::find_if(protocol.grpc_calls.begin(), protocol.grpc_calls.end(),
                           [&](const loadgen::GrpcCall& c) { return c.method == name; });
    if (it == protocol.grpc_calls.end()) {
      bad("--mix", "'" + name + "' is not one of the --grpc-method methods");
    }
    it->weight = weight;
  }
  if (mix.size() != protocol.grpc_calls.size()) {
    bad("--mix", "name every --grpc-method method once, with its weight");
  }
}

// "/view=0.7,/bid=0.3" for HTTP; "get=0.9,set=0.1" for memcache and redis;
// "/pkg.S/A=0.7,/pkg.S/B=0.3" for gRPC.
void apply_mix(const std::string& mix, const LoadTarget& target, ProtocolSpec& protocol) {
  if (mix.empty()) return;
  if (target.scheme == "echo" || target.scheme == "sockperf") {
    bad("--mix", target.scheme + " has a single request type");
  }
  std::vector<std::pair<std::string, double>> methods;
  std::vector<loadgen::WeightedUrl> urls;
  double get = -1, set = -1;
  for (const auto& item : split(mix, ',')) {
    const auto eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0)
      bad("--mix", "expected NAME=WEIGHT, got '" + item + "'");
    const std::string name = item.substr(0, eq);
    const double w = parse_number("--mix", item.substr(eq + 1));
    if (!(w > 0)) bad("--mix", "weight of '" + name + "' must be > 0");
    if (has_path(target.scheme)) {
      if (name.front() != '/') bad("--mix", "an HTTP path starts with '/', got '" + name + "'");
      urls.push_back({name, w});
    } else if (is_grpc(target.scheme)) {
      methods.emplace_back(name, w);
    } else if (name == "get") {
      get = w;
    } else if (name == "set") {
      set = w;
    } else {
      bad("--mix", target.scheme + " types are get and set, got '" + name + "'");
    }
  }
  if (has_path(target.scheme)) {
    protocol.urls = urls;
  } else if (is_grpc(target.scheme)) {
    apply_grpc_mix(methods, protocol);
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
        "required (http://H:P/path, https://H:P/path, h2://H:P/path, h2c://H:P/path, "
        "grpc://H:P, grpcs://H:P, memcache://H:P, redis://H:P, echo://H:P, sockperf://H:P)");
  if (sep == std::string::npos) bad("--target", "expected SCHEME://HOST:PORT, got '" + text + "'");
  t.scheme = text.substr(0, sep);
  if (!has_path(t.scheme) && !is_grpc(t.scheme) && t.scheme != "memcache" && t.scheme != "redis" &&
      t.scheme != "echo" && t.scheme != "sockperf") {
    bad("--target",
        "scheme must be http, https, h2, h2c, grpc, grpcs, memcache, redis, echo or sockperf, "
        "got '" +
            t.scheme + "'");
  }
  std::string rest = text.substr(sep + 3);
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    if (!has_path(t.scheme)) {
      bad("--target", is_grpc(t.scheme)
                          ? "a gRPC target takes no path (the method is --grpc-method)"
                          : "only http, https, h2 and h2c targets take a path");
    }
    t.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  } else if (has_path(t.scheme)) {
    t.path = "/";
  }
  // Port 0: none given, the scheme's default below. The message of a bad
  // authority shows the bracketed IPv6 form.
  const common::HostPort authority = common::parse_host_port(rest, 0, "--target");
  t.host = authority.host == "localhost" ? "127.0.0.1" : authority.host;
  t.port = authority.port;
  if (t.port == 0) {
    if (t.scheme == "http" || t.scheme == "h2c")
      t.port = 80;
    else if (t.scheme == "https" || t.scheme == "h2")
      t.port = 443;
    else if (t.scheme == "memcache")
      t.port = 11211;
    else if (t.scheme == "redis")
      t.port = 6379;
    else
      bad("--target", t.scheme + " needs a port (" + t.scheme + "://H:P)");
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

// Connections, threads and requests outstanding per connection (streams,
// for HTTP/2 and gRPC).
void apply_concurrency(const LoadOptions& o, const LoadTarget& target, loadgen::EngineConfig& e) {
  if (o.connections < 1) bad("--connections", "must be >= 1");
  if (o.threads < 1) bad("--threads", "must be >= 1");
  if (o.threads > o.connections) bad("--threads", "must be <= --connections");
  if (o.outstanding < 1) bad("--outstanding", "must be >= 1");
  e.connections = o.connections;
  e.threads = o.threads;
  e.max_outstanding = o.outstanding;
  if (o.streams_per_connection != 0) {
    if (target.scheme != "h2" && target.scheme != "h2c" && !is_grpc(target.scheme)) {
      bad("--streams-per-connection", "needs an h2://, h2c://, grpc:// or grpcs:// target");
    }
    if (o.streams_per_connection < 1 || o.streams_per_connection > 100'000) {
      bad("--streams-per-connection", "must be in 1..100000");
    }
    if (o.outstanding != 1 && o.outstanding != o.streams_per_connection) {
      bad("--streams-per-connection", "give either it or --outstanding (they are the same K)");
    }
    e.max_outstanding = o.streams_per_connection;
  }
}

bool has_http2(const std::string& scheme) {
  return scheme == "h2" || scheme == "h2c" || is_grpc(scheme);
}

bool uses_tls(const std::string& scheme) {
  return scheme == "https" || scheme == "h2" || scheme == "grpcs";
}

// A whole file's bytes; throws naming the flag.
std::string read_file_bytes(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(flag, "cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// gRPC methods and their request messages.
void apply_grpc(const LoadOptions& o, const LoadTarget& target, ProtocolSpec& protocol) {
  if (!is_grpc(target.scheme)) {
    if (!o.grpc_methods.empty() || !o.grpc_messages.empty()) {
      bad("--grpc-method", "--grpc-method and --grpc-message need a grpc:// or grpcs:// target");
    }
    return;
  }
  if (o.grpc_methods.empty()) bad("--grpc-method", "required for a gRPC target");
  if (o.grpc_messages.size() > 1 && o.grpc_messages.size() != o.grpc_methods.size()) {
    bad("--grpc-message", "give one file per --grpc-method (" +
                              std::to_string(o.grpc_methods.size()) + "), one for all, or none");
  }
  for (std::size_t i = 0; i < o.grpc_methods.size(); ++i) {
    const std::string& m = o.grpc_methods[i];
    const auto slash = m.find('/', 1);
    if (m.size() < 4 || m.front() != '/' || slash == std::string::npos || slash + 1 == m.size()) {
      bad("--grpc-method", "expected /package.Service/Method, got '" + m + "'");
    }
    for (const auto& c : protocol.grpc_calls) {
      if (c.method == m) bad("--grpc-method", "'" + m + "' is given twice");
    }
    std::string message;
    if (!o.grpc_messages.empty()) {
      const std::string& file = o.grpc_messages[o.grpc_messages.size() == 1 ? 0 : i];
      message = read_file_bytes("--grpc-message", file);
    }
    protocol.grpc_calls.push_back({m, std::move(message), 1.0});
  }
}

// TLS for https://, h2:// and grpcs://; the flags are refused elsewhere.
void apply_tls(const LoadOptions& o, const LoadTarget& target, loadgen::TlsSpec& tls) {
  if (!uses_tls(target.scheme)) {
    if (!o.ca_file.empty() || o.insecure || !o.server_name.empty()) {
      bad("--ca-file",
          "--ca-file, --insecure and --server-name need an https://, h2:// or "
          "grpcs:// target");
    }
    return;
  }
  if (o.insecure && !o.ca_file.empty()) bad("--insecure", "give either --insecure or --ca-file");
  tls.enabled = true;
  // Every round's connections may resume the sessions of the rounds before.
  tls.sessions = loadgen::make_tls_session_cache();
  tls.verify = !o.insecure;
  tls.ca_file = o.ca_file;
  if (!o.ca_file.empty()) {
    std::ifstream in(o.ca_file);
    if (!in) bad("--ca-file", "cannot read '" + o.ca_file + "'");
  }
  // The certificate names the host the user typed; an address literal is
  // checked against the certificate's IP addresses.
  tls.server_name = o.server_name;
  if (tls.server_name.empty() && !common::IpAddress::parse(target.host)) {
    tls.server_name = target.host;
  }
}

void apply_protocol_kind(const LoadTarget& target, ProtocolSpec& protocol) {
  if (target.scheme == "http" || target.scheme == "https") {
    protocol.kind = ProtocolSpec::Kind::kHttp;
    protocol.urls = {{target.path, 1.0}};
    protocol.host_header = loadgen::http_host_header(target.host);
  } else if (target.scheme == "h2" || target.scheme == "h2c") {
    protocol.kind = ProtocolSpec::Kind::kHttp2;
    protocol.urls = {{target.path, 1.0}};
    protocol.host_header = loadgen::http_host_header(target.host);
    protocol.scheme = target.scheme == "h2" ? "https" : "http";
  } else if (is_grpc(target.scheme)) {
    protocol.kind = ProtocolSpec::Kind::kGrpc;
    protocol.host_header = loadgen::http_host_header(target.host);
    protocol.scheme = target.scheme == "grpcs" ? "https" : "http";
  } else if (target.scheme == "memcache") {
    protocol.kind = ProtocolSpec::Kind::kMemcached;
  } else if (target.scheme == "redis") {
    protocol.kind = ProtocolSpec::Kind::kRedis;
  } else if (target.scheme == "sockperf") {
    // sockperf's TCP ping-pong frames against a `sockperf server`.
    protocol.kind = ProtocolSpec::Kind::kSockperf;
  } else {
    protocol.kind = ProtocolSpec::Kind::kEcho;
  }
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
  if (o.rt_priority != 0) bad("--rt-priority", "with --agent, the agents' threads are theirs");
  if (o.cpu_latency_us != "off") {
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

}  // namespace

LoadPlan parse_load_options(const LoadOptions& o) {
  LoadPlan plan;
  plan.target = parse_target(o.target);
  auto& c = plan.controller;
  auto& e = c.engine;
  e.host = plan.target.host;
  e.port = plan.target.port;
  apply_concurrency(o, plan.target, e);
  e.seed = o.seed;
  // Kernel software RX/TX stamps (timestamping.hh); hardware is planned and
  // reported at run time.
  // Not through TLS records or HTTP/2 frames (engine.hh).
  e.software_rx_timestamps = !uses_tls(plan.target.scheme) && !has_http2(plan.target.scheme);
  apply_protocol_kind(plan.target, e.protocol);
  apply_tls(o, plan.target, e.tls);
  apply_grpc(o, plan.target, e.protocol);
  apply_mix(o.mix, plan.target, e.protocol);
  apply_interarrival(o.interarrival, e.schedule);
  apply_keys(o, plan.target, e.protocol);
  c.percentiles = parse_percentiles(o.percentiles);
  const int64_t width = parse_duration("--ci-width", o.ci_width);
  if (width <= 0) bad("--ci-width", "must be > 0");
  c.ci_width_ns = static_cast<double>(width);
  if (!(o.confidence > 0 && o.confidence < 1)) bad("--confidence", "must be in (0, 1)");
  c.confidence = o.confidence;
  apply_send_timing(o, e);
  try {
    plan.cpu_latency_us = common::parse_cpu_latency_limit(o.cpu_latency_us);
  } catch (const std::invalid_argument& ex) {
    bad("--cpu-latency-us", ex.what());
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
