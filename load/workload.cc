// The workload's one rule set and its engine; see workload.hh.
#include "nabla/load/workload.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/loadgen/protocol.hh"

namespace nabla::load {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& what) {
  throw std::invalid_argument(key + ": " + what);
}

std::string quoted(const std::string& text) {
  return "\"" + text + "\"";
}

double parse_number(const std::string& key, std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    bad(key, "expected a number, got " + quoted(std::string(text)));
  }
  return v;
}

bool has_path(const std::string& scheme) {
  return scheme == "http" || scheme == "https" || scheme == "h2" || scheme == "h2c";
}

bool is_grpc(const std::string& scheme) {
  return scheme == "grpc" || scheme == "grpcs";
}

bool is_tls(const std::string& scheme) {
  return scheme == "https" || scheme == "h2" || scheme == "grpcs";
}

bool is_http2(const std::string& scheme) {
  return scheme == "h2" || scheme == "h2c" || is_grpc(scheme);
}

bool is_key_value(const std::string& scheme) {
  return scheme == "memcache" || scheme == "redis";
}

std::uint16_t default_port(const std::string& scheme) {
  if (scheme == "http" || scheme == "h2c") return 80;
  if (scheme == "https" || scheme == "h2") return 443;
  if (scheme == "memcache") return 11211;
  if (scheme == "redis") return 6379;
  return 0;
}

// "a, b or c"
std::string one_of(const std::vector<std::string>& words, const std::string& last = " or ") {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? last : ", ";
    out += words[i];
  }
  return out;
}

// "only for https, h2 and grpcs targets (https://, h2://, grpcs://)"
std::string only_for(const std::vector<std::string>& schemes) {
  std::string urls;
  for (const auto& s : schemes) urls += (urls.empty() ? "" : ", ") + s + "://";
  return "only for " + one_of(schemes, " and ") + " targets (" + urls + ")";
}

std::string read_bytes(const std::string& key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(key, "cannot read " + quoted(path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Connections, threads and requests outstanding per connection (streams,
// for HTTP/2 and gRPC).
void parse_concurrency(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  if (in.connections < 1 || in.connections > 65'536) {
    bad(k.key(k.connections), "must be in 1..65536");
  }
  if (in.threads < 1 || in.threads > 64) bad(k.key(k.threads), "must be in 1..64");
  if (in.threads > in.connections) bad(k.key(k.threads), "must be <= " + k.connections);
  if (in.outstanding < 1 || in.outstanding > 100'000) {
    bad(k.key(k.outstanding), "must be in 1..100000");
  }
  w.connections = static_cast<int>(in.connections);
  w.threads = static_cast<int>(in.threads);
  w.outstanding = static_cast<int>(in.outstanding);
  if (!in.streams_per_connection) return;
  const std::int64_t streams = *in.streams_per_connection;
  const std::string key = k.key(k.streams_per_connection);
  if (!is_http2(w.scheme)) bad(key, only_for({"h2", "h2c", "grpc", "grpcs"}));
  if (streams < 1 || streams > 100'000) bad(key, "must be in 1..100000");
  if (in.outstanding != 1 && in.outstanding != streams) {
    bad(key, "give either it or " + k.outstanding + " (they are the same K)");
  }
  w.streams_per_connection = static_cast<int>(streams);
}

void parse_interarrival(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  const std::string key = k.key(k.interarrival);
  const std::string& spec = in.interarrival;
  w.interarrival = spec;
  if (spec.rfind("lognormal:", 0) == 0) {
    w.lognormal_sigma = parse_number(key, spec.substr(10));
    if (!(w.lognormal_sigma > 0 && w.lognormal_sigma <= 10)) {
      bad(key, "lognormal:SIGMA needs SIGMA in (0, 10], got " + quoted(spec));
    }
  } else if (spec != "exp" && spec != "fixed" && spec != "uniform") {
    bad(key, "must be exp, fixed, uniform or lognormal:SIGMA, got " + quoted(spec));
  }
}

// TLS for https, h2 and grpcs; the settings are refused elsewhere.
void parse_tls(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  if (!w.tls()) {
    const std::pair<bool, const std::string*> given[] = {{!in.ca_file.empty(), &k.ca_file},
                                                         {in.insecure, &k.insecure},
                                                         {!in.server_name.empty(), &k.server_name}};
    for (const auto& [set, name] : given) {
      if (!set) continue;
      bad(k.tls_group.empty() ? k.key(*name) : k.tls_group, only_for({"https", "h2", "grpcs"}));
    }
    return;
  }
  if (in.insecure && !in.ca_file.empty()) {
    bad(k.key(k.insecure), "give either " + k.insecure + " or " + k.ca_file);
  }
  if (!in.ca_file.empty() && !std::ifstream(in.ca_file)) {
    bad(k.key(k.ca_file), "cannot read " + quoted(in.ca_file));
  }
  w.ca_file = in.ca_file;
  w.insecure = in.insecure;
  w.server_name = in.server_name;
}

// gRPC methods and their request messages.
void parse_grpc(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  if (!w.grpc()) {
    const std::pair<bool, const std::string*> given[] = {
        {!in.grpc_methods.empty(), &k.grpc_methods}, {!in.grpc_messages.empty(), &k.grpc_messages}};
    for (const auto& [set, name] : given) {
      if (!set) continue;
      bad(k.grpc_group.empty() ? k.key(*name) : k.grpc_group, only_for({"grpc", "grpcs"}));
    }
    return;
  }
  const std::string methods_key = k.key(k.grpc_methods);
  const std::string messages_key = k.key(k.grpc_messages);
  if (in.grpc_methods.empty()) bad(methods_key, "required for a gRPC target");
  const std::size_t files = in.grpc_messages.size();
  if (files > 1 && files != in.grpc_methods.size()) {
    bad(messages_key, "one file per " + k.grpc_methods + " method (" +
                          std::to_string(in.grpc_methods.size()) + "), one for all, or none");
  }
  for (std::size_t i = 0; i < in.grpc_methods.size(); ++i) {
    const std::string& m = in.grpc_methods[i];
    const auto slash = m.find('/', 1);
    if (m.size() < 4 || m.front() != '/' || slash == std::string::npos || slash + 1 == m.size()) {
      bad(methods_key, "expected /package.Service/Method, got " + quoted(m));
    }
    for (const auto& c : w.grpc_methods) {
      if (c.method == m) bad(methods_key, quoted(m) + " is given twice");
    }
    WorkloadMethod method{m, files == 0 ? "" : in.grpc_messages[files == 1 ? 0 : i], ""};
    if (!method.message_file.empty())
      method.message = read_bytes(messages_key, method.message_file);
    w.grpc_methods.push_back(std::move(method));
  }
}

// The mix's names and weights against the target: URLs (HTTP), the gRPC
// methods (every one, once), get and set (memcache, redis); echo and
// sockperf have one type.
void parse_mix(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  const std::string key = k.key(k.mix);
  if (!in.mix) {
    if (has_path(w.scheme)) w.mix = {{w.path, 1.0}};
    if (w.grpc()) {
      for (const auto& m : w.grpc_methods) w.mix.emplace_back(m.method, 1.0);
    }
    if (w.scheme == "echo" || w.scheme == "sockperf") w.mix = {{w.scheme, 1.0}};
    return;
  }
  if (w.scheme == "echo" || w.scheme == "sockperf")
    bad(key, w.scheme + " has a single request type");
  if (in.mix->empty()) bad(key, "give at least one NAME=WEIGHT");
  for (const auto& [name, weight] : *in.mix) {
    if (!(weight > 0 && std::isfinite(weight))) {
      bad(key, "weight of " + quoted(name) + " must be > 0");
    }
    if (has_path(w.scheme)) {
      if (name.empty() || name.front() != '/') {
        bad(key, "an HTTP path starts with '/', got " + quoted(name));
      }
    } else if (w.grpc()) {
      const bool known = std::any_of(w.grpc_methods.begin(), w.grpc_methods.end(),
                                     [&](const WorkloadMethod& m) { return m.method == name; });
      if (!known) bad(key, quoted(name) + " is not one of " + k.grpc_methods);
    } else if (name != "get" && name != "set") {
      bad(key, w.scheme + " types are get and set, got " + quoted(name));
    }
  }
  if (w.grpc() && in.mix->size() != w.grpc_methods.size()) {
    bad(key, "name every " + k.grpc_methods + " method once, with its weight");
  }
  w.mix = *in.mix;
}

void parse_keys(const WorkloadInput& in, const WorkloadKeys& k, Workload& w) {
  if (!is_key_value(w.scheme) &&
      (in.keys != 1000 || in.key_dist != "uniform" || in.value_size != 32)) {
    bad(k.key(k.keys), k.keys + ", " + k.key_dist + " and " + k.value_size +
                           " apply to memcache:// and redis:// only");
  }
  if (in.keys < 1 || in.keys > 1'000'000'000) bad(k.key(k.keys), "must be in 1..1e9");
  w.keys = in.keys;
  w.key_dist = in.key_dist;
  const std::string key = k.key(k.key_dist);
  if (in.key_dist == "zipf" || in.key_dist.rfind("zipf:", 0) == 0) {
    if (in.key_dist.size() > 5) w.zipf_s = parse_number(key, in.key_dist.substr(5));
    if (!(w.zipf_s > 0 && w.zipf_s <= 10)) {
      bad(key, "zipf:S needs S in (0, 10], got " + quoted(in.key_dist));
    }
  } else if (in.key_dist != "uniform") {
    bad(key, "must be uniform or zipf[:S], got " + quoted(in.key_dist));
  }
  if (in.value_size < 1 || in.value_size > 1'000'000) {
    bad(k.key(k.value_size), "must be in 1..1000000");
  }
  w.value_size = in.value_size;
}

}  // namespace

WorkloadKeys flag_keys() {
  WorkloadKeys k;
  k.target = "--target";
  k.connections = "--connections";
  k.threads = "--threads";
  k.outstanding = "--outstanding";
  k.streams_per_connection = "--streams-per-connection";
  k.interarrival = "--interarrival";
  k.mix = "--mix";
  k.keys = "--keys";
  k.key_dist = "--key-dist";
  k.value_size = "--value-size";
  k.ca_file = "--ca-file";
  k.insecure = "--insecure";
  k.server_name = "--server-name";
  k.grpc_methods = "--grpc-method";
  k.grpc_messages = "--grpc-message";
  k.timeout = "--timeout";
  // TLS settings on a target without TLS: one message for the three flags.
  k.tls_group = "--ca-file";
  k.grpc_group = "--grpc-method";
  return k;
}

WorkloadKeys table_keys(const std::string& table) {
  WorkloadKeys k;
  k.prefix = table + ".";
  return k;
}

TargetRules load_target_rules() {
  return {{"http", "https", "h2", "h2c", "grpc", "grpcs", "memcache", "redis", "echo", "sockperf"},
          true,
          true};
}

Target parse_target(const std::string& text, const std::string& key, const TargetRules& rules) {
  Target t;
  const std::string schemes = one_of(rules.schemes);
  if (text.empty()) {
    std::vector<std::string> forms;
    for (const auto& s : rules.schemes)
      forms.push_back(s + "://H:P" + (has_path(s) ? "/path" : ""));
    bad(key, "required (" + one_of(forms, ", ") + ")");
  }
  const auto sep = text.find("://");
  if (sep == std::string::npos) {
    bad(key, "must be SCHEME://HOST:PORT (" + schemes + "), got " + quoted(text));
  }
  t.scheme = text.substr(0, sep);
  if (std::find(rules.schemes.begin(), rules.schemes.end(), t.scheme) == rules.schemes.end()) {
    bad(key, "scheme must be " + schemes + ", got " + quoted(text));
  }
  std::string rest = text.substr(sep + 3);
  const auto slash = rest.find('/');
  if (slash != std::string::npos && rest.substr(slash) != "/") {
    if (!rules.paths) bad(key, "takes no path (the mix names the URLs), got " + quoted(text));
    if (!has_path(t.scheme)) {
      bad(key, is_grpc(t.scheme) ? "a gRPC target takes no path (the method is a gRPC method)"
                                 : "only http, https, h2 and h2c targets take a path");
    }
    t.path = rest.substr(slash);
  }
  if (slash != std::string::npos) rest = rest.substr(0, slash);
  if (has_path(t.scheme) && t.path.empty()) t.path = "/";
  common::HostPort authority;
  try {
    authority = common::parse_host_port(rest, 0, key);
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    if (why.rfind(key + ": ", 0) == 0) why.erase(0, key.size() + 2);
    bad(key, "bad HOST:PORT in " + quoted(text) +
                 " (an IPv6 address goes in brackets: http://[fd00::2]:8080): " + why);
  }
  const auto address = common::IpAddress::parse(authority.host);
  t.host = authority.host == "localhost" ? "127.0.0.1"
           : address                     ? address->to_string()
                                         : authority.host;
  t.port = authority.port;
  if (t.port == 0 && rules.default_ports) t.port = default_port(t.scheme);
  if (t.port == 0) bad(key, "needs a port (" + t.scheme + "://H:P), got " + quoted(text));
  return t;
}

std::optional<Mix> parse_mix_list(const std::string& text, const std::string& key) {
  if (text.empty()) return std::nullopt;
  Mix mix;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      bad(key, "expected NAME=WEIGHT, got " + quoted(item));
    }
    mix.emplace_back(item.substr(0, eq), parse_number(key, item.substr(eq + 1)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return mix;
}

bool Workload::tls() const {
  return is_tls(scheme);
}

bool Workload::grpc() const {
  return is_grpc(scheme);
}

bool Workload::http2() const {
  return is_http2(scheme);
}

Target Workload::target_parts() const {
  return {scheme, host, port, path, host_name};
}

Workload parse_workload(const WorkloadInput& in, const WorkloadKeys& k) {
  Workload w;
  const Target t = parse_target(in.target, k.key(k.target), in.rules);
  w.target = in.target;
  w.scheme = t.scheme;
  w.host = t.host;
  w.port = t.port;
  w.path = t.path;
  parse_concurrency(in, k, w);
  parse_interarrival(in, k, w);
  parse_tls(in, k, w);
  parse_grpc(in, k, w);
  parse_mix(in, k, w);
  parse_keys(in, k, w);
  if (in.timeout_ns <= 0) bad(k.key(k.timeout), "must be > 0");
  w.timeout_ns = in.timeout_ns;
  w.seed = in.seed;
  return w;
}

loadgen::EngineConfig engine_config(const Workload& w,
                                    std::shared_ptr<loadgen::TlsSessionCache> sessions) {
  using Kind = loadgen::ProtocolSpec::Kind;
  loadgen::EngineConfig c;
  c.host = w.host;
  c.port = w.port;
  c.connections = w.connections;
  c.threads = w.threads;
  c.max_outstanding = w.streams_per_connection > 0 ? w.streams_per_connection : w.outstanding;
  if (w.interarrival == "fixed") {
    c.schedule.kind = loadgen::ScheduleKind::kFixed;
  } else if (w.interarrival == "uniform") {
    c.schedule.kind = loadgen::ScheduleKind::kUniform;
  } else if (w.interarrival.rfind("lognormal:", 0) == 0) {
    c.schedule.kind = loadgen::ScheduleKind::kLognormal;
    c.schedule.lognormal_sigma = w.lognormal_sigma;
  } else {
    c.schedule.kind = loadgen::ScheduleKind::kExponential;
  }
  loadgen::ProtocolSpec& p = c.protocol;
  // The Host header and the TLS name: the name the target was given by.
  const std::string& name = w.host_name.empty() ? w.host : w.host_name;
  if (has_path(w.scheme)) {
    p.kind = w.http2() ? Kind::kHttp2 : Kind::kHttp;
    p.urls.clear();
    for (const auto& [url, weight] : w.mix) p.urls.push_back({url, weight});
  } else if (w.grpc()) {
    p.kind = Kind::kGrpc;
    for (const WorkloadMethod& m : w.grpc_methods) {
      double weight = 1.0;
      for (const auto& [method, wt] : w.mix) {
        if (method == m.method) weight = wt;
      }
      p.grpc_calls.push_back({m.method, m.message, weight});
    }
  } else if (w.scheme == "memcache" || w.scheme == "redis") {
    p.kind = w.scheme == "memcache" ? Kind::kMemcached : Kind::kRedis;
    if (!w.mix.empty()) {
      double get = 0, set = 0;
      for (const auto& [type, weight] : w.mix) (type == "get" ? get : set) = weight;
      p.get_ratio = get / (get + set);
    }
  } else if (w.scheme == "sockperf") {
    // sockperf's TCP ping-pong frames against a `sockperf server`.
    p.kind = Kind::kSockperf;
  } else {
    p.kind = Kind::kEcho;
  }
  if (has_path(w.scheme) || w.grpc()) {
    p.host_header = loadgen::http_host_header(name);
    p.scheme = w.tls() ? "https" : "http";
  }
  p.keys = w.keys;
  p.key_distribution = w.key_dist == "uniform" ? loadgen::KeyDistribution::kUniform
                                               : loadgen::KeyDistribution::kZipf;
  p.zipf_s = w.zipf_s;
  p.value_bytes = w.value_size;
  if (w.tls()) {
    c.tls.enabled = true;
    c.tls.verify = !w.insecure;
    c.tls.ca_file = w.ca_file;
    // The certificate names the host the user typed; an address literal is
    // checked against the certificate's IP addresses.
    c.tls.server_name = w.server_name;
    if (c.tls.server_name.empty() && !common::IpAddress::parse(name)) c.tls.server_name = name;
    c.tls.sessions = std::move(sessions);
  }
  c.request_timeout_ns = w.timeout_ns;
  c.seed = w.seed;
  return c;
}

}  // namespace nabla::load
