// Campaign file parsing; see spec.hh.
#include "nabla/campaign/spec.hh"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "experiment_spec.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/link_spec.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/units.hh"
#include "toml_section.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;

bool valid_node_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_host(const std::string& text) {
  return common::IpAddress::parse(text).has_value() || common::is_host_name(text);
}

// An address literal as inet_ntop prints it ("fd00:0::2" -> "fd00::2"), the
// form the sniffers report, so the two compare as strings; names as given.
std::string canonical_host(const std::string& text) {
  const auto address = common::IpAddress::parse(text);
  return address ? address->to_string() : text;
}

common::HostPort daemon_address(const Section& s, std::string_view k, std::uint16_t port) {
  const std::string text = *s.string(k);
  try {
    return common::parse_host_port(text, port, s.key(k));
  } catch (const std::invalid_argument& e) {
    fail(s.key(k), e.what());
  }
}

// netns = "NAME" | "/path" | "pid:N", or container = "<hex id>", not both.
void parse_node_namespace(const Section& s, CampaignNode& n) {
  n.netns = s.string("netns");
  n.container = s.string("container");
  if (n.netns && n.container) fail(s.key("container"), "give netns or container, not both");
  if (n.netns) {
    try {
      common::netns_path(*n.netns);
    } catch (const std::invalid_argument& e) {
      fail(s.key("netns"), e.what());
    }
  }
  if (n.container) {
    const std::string& id = *n.container;
    const bool hex = id.size() >= 12 && id.size() <= 64 &&
                     id.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex) fail(s.key("container"), "must be 12-64 lowercase hex digits, got \"" + id + "\"");
  }
}

CampaignNode parse_node(const Section& s) {
  s.allow_only(
      {"name", "address", "addresses", "injectd", "sniffd", "key_file", "netns", "container"});
  CampaignNode n;
  const auto name = s.string("name");
  if (!name) fail(s.key("name"), "required");
  if (!valid_node_name(*name)) {
    fail(s.key("name"), "must be 1-64 characters of a-z 0-9 _ -, got \"" + *name + "\"");
  }
  n.name = *name;
  if (const auto a = s.string("address")) n.addresses.push_back(*a);
  for (const std::string& a : s.strings("addresses")) n.addresses.push_back(a);
  if (n.addresses.empty()) fail(s.key("address"), "required (address or addresses)");
  for (std::string& a : n.addresses) {
    if (!is_host(a)) fail(s.key("address"), "not an IP address or host name: \"" + a + "\"");
    a = canonical_host(a);
  }
  if (s.get("injectd") != nullptr) n.injectd = daemon_address(s, "injectd", 7311);
  if (s.get("sniffd") != nullptr) n.sniffd = daemon_address(s, "sniffd", 7312);
  n.key_file = s.string("key_file");
  parse_node_namespace(s, n);
  return n;
}

// An integer of the workload as written; its range is the workload's rule
// (load/workload.hh).
std::optional<std::int64_t> workload_integer(const Section& s, std::string_view k) {
  return s.integer(k, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
}

// The [workload] table as the load library's raw input: the TOML table of
// the mix becomes its NAME -> WEIGHT list (the command line's
// "/a=0.7,/b=0.3"), every value is then checked by load::parse_workload.
load::WorkloadInput workload_input(const Section& s, const std::string& target) {
  load::WorkloadInput in;
  in.target = target;
  // The campaign's targets: request/response types it can bin and join to
  // links, with the port written out and the URLs in the mix.
  in.rules = {{"http", "https", "h2", "h2c", "grpc", "grpcs", "echo"}, false, false};
  in.connections = workload_integer(s, "connections").value_or(16);
  in.threads = workload_integer(s, "threads").value_or(1);
  in.outstanding = workload_integer(s, "outstanding").value_or(1);
  in.streams_per_connection = workload_integer(s, "streams_per_connection");
  in.interarrival = s.string("interarrival").value_or("exp");
  in.timeout_ns = s.duration("timeout").value_or(in.timeout_ns);
  const Section mix = s.table("mix");
  if (mix.present()) {
    in.mix.emplace();
    for (const auto& [name, weight] : *mix.raw()) {
      in.mix->emplace_back(std::string(name.str()), *mix.number(name.str()));
    }
  }
  in.ca_file = s.string("ca_file").value_or("");
  in.insecure = s.boolean("insecure").value_or(false);
  in.server_name = s.string("server_name").value_or("");
  in.grpc_methods = s.strings("grpc_methods");
  in.grpc_messages = s.strings("grpc_messages");
  return in;
}

// workload.agents: each "HOST[:PORT][/KIND]" as `nabla load --agent` takes
// it, at least one recording latencies (a throughput agent returns none,
// and the gradient is measured from them).
std::vector<loadd::AgentAddress> parse_agents(const Section& s) {
  std::vector<loadd::AgentAddress> agents;
  const std::vector<std::string> texts = s.strings("agents");
  std::set<std::string> names;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string key = s.key("agents") + "[" + std::to_string(i) + "]";
    try {
      agents.push_back(loadd::parse_agent(texts[i]));
    } catch (const std::invalid_argument& e) {
      fail(key, e.what());
    }
    if (!names.insert(agents.back().name()).second) {
      fail(key, "\"" + texts[i] + "\": agent " + agents.back().name() + " given twice");
    }
  }
  if (s.raw() && s.raw()->contains("agents") && agents.empty()) {
    fail(s.key("agents"), "empty (leave it out to send the load from here)");
  }
  if (!agents.empty() &&
      std::all_of(agents.begin(), agents.end(), [](const loadd::AgentAddress& a) {
        return a.kind == loadgen::AgentKind::kThroughput;
      })) {
    fail(s.key("agents"),
         "every agent is a throughput agent, which records no latency; make at least one "
         "symmetric or latency");
  }
  return agents;
}

WorkloadSpec parse_workload(const Section& s) {
  s.allow_only({"target", "rate", "connections", "threads", "outstanding", "interarrival",
                "timeout", "mix", "warmup", "ca_file", "insecure", "server_name",
                "streams_per_connection", "grpc_methods", "grpc_messages", "agents"});
  if (!s.present()) fail("workload", "required ([workload] with target and rate)");
  const auto target = s.string("target");
  if (!target) fail(s.key("target"), "required");
  const auto rate = s.number("rate");
  if (!rate) fail(s.key("rate"), "required");
  if (!(*rate > 0 && *rate <= 1e7))
    fail(s.key("rate"), "must be in (0, 1e7], got " + std::to_string(*rate));
  WorkloadSpec w;
  static_cast<load::Workload&>(w) =
      load::parse_workload(workload_input(s, *target), load::table_keys("workload"));
  w.http = w.scheme != "echo";
  w.rate_rps = *rate;
  w.warmup_ns = s.duration("warmup").value_or(w.warmup_ns);
  w.agents = parse_agents(s);
  return w;
}

LinksSpec parse_links(const Section& s) {
  s.allow_only({"discover", "discover_for", "include", "exclude", "min_messages"});
  LinksSpec l;
  l.discover = s.boolean("discover").value_or(l.discover);
  l.discover_for_ns = s.duration("discover_for").value_or(l.discover_for_ns);
  if (l.discover && l.discover_for_ns < 100'000'000) {
    fail(s.key("discover_for"), "must be >= 100ms");
  }
  l.include = s.strings("include");
  l.exclude = s.strings("exclude");
  for (const char* k : {"include", "exclude"}) {
    for (const std::string& spec : k[0] == 'i' ? l.include : l.exclude) {
      common::LinkSpec parsed;
      try {
        parsed = common::parse_link_spec(spec);
      } catch (const common::LinkSpecError& e) {
        fail(s.key(k), "bad link spec \"" + spec + "\": " + e.reason());
      }
      if (k[0] == 'i' && parsed.protocol == common::Protocol::kAny) {
        fail(s.key(k), "\"" + spec + "\": give tcp or udp (a link has one protocol)");
      }
    }
  }
  l.min_messages =
      static_cast<std::uint64_t>(s.integer("min_messages", 0, std::int64_t{1} << 40).value_or(1));
  if (!l.discover && l.include.empty()) {
    fail(s.key("include"), "with discover = false, give at least one link");
  }
  return l;
}

// [gradient] amplitudes and verify: a sweep's amplitudes, ascending and
// distinct, and the step verification; both measure links one at a time.
void parse_sweep(const Section& s, GradientSpec& g) {
  for (const std::string& text : s.strings("amplitudes")) {
    std::int64_t a = 0;
    try {
      a = common::parse_duration_ns(text);
    } catch (const std::invalid_argument& e) {
      fail(s.key("amplitudes"), e.what());
    }
    if (a <= 0 || a > 10'000'000'000) {
      fail(s.key("amplitudes"), "each must be in (0, 10s], got \"" + text + "\"");
    }
    g.amplitudes_ns.push_back(a);
  }
  std::sort(g.amplitudes_ns.begin(), g.amplitudes_ns.end());
  if (std::adjacent_find(g.amplitudes_ns.begin(), g.amplitudes_ns.end()) != g.amplitudes_ns.end()) {
    fail(s.key("amplitudes"), "lists an amplitude twice");
  }
  if (g.amplitudes_ns.size() > kMaxSweepAmplitudes) {
    fail(s.key("amplitudes"), "at most " + std::to_string(kMaxSweepAmplitudes) +
                                  " amplitudes, got " + std::to_string(g.amplitudes_ns.size()));
  }
  g.verify = s.boolean("verify").value_or(false);
  if (g.schedule != Schedule::kSimultaneous) return;
  if (!g.amplitudes_ns.empty()) {
    fail(s.key("amplitudes"),
         "needs schedule = \"sequential\" (a sweep measures one link at a time)");
  }
  if (g.verify) {
    fail(s.key("verify"), "needs schedule = \"sequential\" (a step holds one link's delay)");
  }
}

GradientSpec parse_gradient(const Section& s) {
  s.allow_only({"enabled", "bins", "chunks", "requests_per_bin", "delay_scale",
                "min_bins_per_period", "max_amplitude", "min_amplitude", "confidence", "lease",
                "repeats", "repeat_noise_ratio", "precision", "schedule", "perturbation_budget",
                "amplitudes", "verify"});
  GradientSpec g;
  g.enabled = s.boolean("enabled").value_or(true);
  const std::string schedule = s.string("schedule").value_or("sequential");
  if (schedule == "simultaneous") {
    g.schedule = Schedule::kSimultaneous;
  } else if (schedule == "sequential") {
    g.schedule = Schedule::kSequential;
  } else {
    fail(s.key("schedule"), "must be \"sequential\" or \"simultaneous\", got \"" + schedule + "\"");
  }
  g.bins = static_cast<std::size_t>(s.integer("bins", 8, 1 << 20).value_or(128));
  if ((g.bins & (g.bins - 1)) != 0) {
    fail(s.key("bins"), "must be a power of two >= 8, got " + std::to_string(g.bins));
  }
  g.chunks = static_cast<std::size_t>(s.integer("chunks", 2, 1000)
                                          .value_or(g.schedule == Schedule::kSimultaneous
                                                        ? kSimultaneousChunks
                                                        : kSequentialChunks));
  g.requests_per_bin =
      static_cast<std::size_t>(s.integer("requests_per_bin", 1, 100000).value_or(5));
  g.delay_scale = s.number("delay_scale").value_or(30.0);
  if (!(g.delay_scale > 0 && g.delay_scale <= 1000)) {
    fail(s.key("delay_scale"), "must be in (0, 1000], got " + std::to_string(g.delay_scale));
  }
  g.min_bins_per_period = static_cast<std::size_t>(
      s.integer("min_bins_per_period", 4, static_cast<std::int64_t>(g.bins)).value_or(8));
  if (g.min_bins_per_period > g.bins) {
    fail(s.key("min_bins_per_period"), "must be <= bins (" + std::to_string(g.bins) + ")");
  }
  g.max_amplitude_ns = s.duration("max_amplitude").value_or(g.max_amplitude_ns);
  g.min_amplitude_ns = s.duration("min_amplitude").value_or(g.min_amplitude_ns);
  if (g.max_amplitude_ns <= 0 || g.max_amplitude_ns > 10'000'000'000) {
    fail(s.key("max_amplitude"), "must be in (0, 10s]");
  }
  if (g.min_amplitude_ns <= 0 || g.min_amplitude_ns > g.max_amplitude_ns) {
    fail(s.key("min_amplitude"), "must be > 0 and <= max_amplitude");
  }
  g.confidence = s.number("confidence").value_or(0.95);
  if (!(g.confidence > 0 && g.confidence < 1)) {
    fail(s.key("confidence"), "must be in (0, 1), got " + std::to_string(g.confidence));
  }
  g.lease_ns = s.duration("lease").value_or(g.lease_ns);
  if (g.lease_ns < 1'000'000'000 || g.lease_ns > 3'600'000'000'000) {
    fail(s.key("lease"), "must be in [1s, 1h]");
  }
  g.perturbation_budget_ns = s.duration("perturbation_budget").value_or(4 * g.max_amplitude_ns);
  if (g.perturbation_budget_ns < g.min_amplitude_ns || g.perturbation_budget_ns > 60'000'000'000) {
    fail(s.key("perturbation_budget"), "must be in [min_amplitude, 60s]");
  }
  g.repeats = static_cast<std::size_t>(s.integer("repeats", 0, 5).value_or(1));
  g.repeat_noise_ratio = s.number("repeat_noise_ratio").value_or(g.repeat_noise_ratio);
  if (!(g.repeat_noise_ratio >= 0 && g.repeat_noise_ratio <= 100)) {
    fail(s.key("repeat_noise_ratio"),
         "must be in [0, 100], got " + std::to_string(g.repeat_noise_ratio));
  }
  g.precision = s.number("precision").value_or(0.0);
  if (!(g.precision >= 0 && g.precision <= 1)) {
    fail(s.key("precision"), "must be in [0, 1], got " + std::to_string(g.precision));
  }
  parse_sweep(s, g);
  return g;
}

std::map<std::string, std::map<std::string, double>> parse_truth(const Section& s) {
  std::map<std::string, std::map<std::string, double>> out;
  if (!s.present()) return out;
  for (const auto& [label, types] : *s.raw()) {
    const Section t = s.table(label.str());
    for (const auto& [type, value] : *t.raw()) {
      const auto v = t.number(type.str());
      if (!std::isfinite(*v)) fail(t.key(type.str()), "must be a finite number");
      out[std::string(label.str())][std::string(type.str())] = *v;
    }
  }
  return out;
}

}  // namespace

const CampaignNode* CampaignSpec::node_by_address(std::string_view address) const {
  for (const CampaignNode& n : nodes) {
    for (const std::string& a : n.addresses) {
      if (a == address) return &n;
    }
  }
  return nullptr;
}

const CampaignNode* CampaignSpec::node_by_name(std::string_view wanted) const {
  for (const CampaignNode& n : nodes) {
    if (n.name == wanted) return &n;
  }
  return nullptr;
}

std::optional<std::string> CampaignSpec::key_file_for(const CampaignNode& node) const {
  return node.key_file ? node.key_file : key_file;
}

CampaignSpec parse_campaign_spec(std::string_view toml_text) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "campaign: " << e.description() << " at line " << e.source().begin.line;
    throw std::invalid_argument(msg.str());
  }
  const Section top(&root, "");
  top.allow_only({"name", "seed", "db", "key_file", "node", "workload", "links", "gradient",
                  "truth", "experiment"});
  CampaignSpec spec;
  const auto name = top.string("name");
  if (!name || name->empty()) fail("name", "required, a non-empty string");
  spec.name = *name;
  if (const auto seed = top.integer("seed", 0, INT64_MAX)) {
    spec.seed = static_cast<std::uint64_t>(*seed);
  }
  spec.db = top.string("db");
  spec.key_file = top.string("key_file");

  const toml::node* nodes = root.get("node");
  if (nodes == nullptr || !nodes->is_array_of_tables() || nodes->as_array()->empty()) {
    fail("node", "give at least one [[node]]");
  }
  std::set<std::string> names;
  std::set<std::string> addresses;
  const toml::array& arr = *nodes->as_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const Section s(arr.get(i)->as_table(), "node[" + std::to_string(i) + "]");
    CampaignNode n = parse_node(s);
    if (!names.insert(n.name).second) fail(s.key("name"), "\"" + n.name + "\" given twice");
    for (const std::string& a : n.addresses) {
      if (!addresses.insert(a).second) fail(s.key("address"), "\"" + a + "\" belongs to two nodes");
    }
    spec.nodes.push_back(std::move(n));
  }
  spec.workload = parse_workload(top.table("workload"));
  spec.links = parse_links(top.table("links"));
  spec.gradient = parse_gradient(top.table("gradient"));
  spec.truth = parse_truth(top.table("truth"));
  spec.experiments = parse_experiments(root.get("experiment"), spec);
  if (!spec.workload.agents.empty() && !spec.experiments.empty()) {
    // An experiment counts the failed requests of each window from every
    // scheduled send's intended time (EngineConfig::record_intended), which
    // an agent keeps to itself.
    fail("workload.agents",
         "not with [[experiment]]: experiments count each window's failed requests from every "
         "scheduled send's intended time, which load agents do not return; run experiments "
         "without agents");
  }
  if (!spec.gradient.enabled && spec.experiments.empty()) {
    fail("gradient.enabled", "false needs at least one [[experiment]] (nothing to run)");
  }
  if (spec.links.discover) {
    bool any = false;
    for (const CampaignNode& n : spec.nodes) any = any || n.sniffd.has_value();
    if (!any) fail("links.discover", "needs at least one node with a sniffd");
  }
  return spec;
}

CampaignSpec load_campaign_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read campaign file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_campaign_spec(text.str());
}

namespace {

json grpc_methods_json(const WorkloadSpec& w) {
  json out = json::array();
  for (const auto& m : w.grpc_methods) {
    out.push_back({{"method", m.method}, {"message_file", m.message_file}});
  }
  return out;
}

// Each agent as "host:port/kind" (parse_agent reads it back).
json agents_json(const WorkloadSpec& w) {
  json out = json::array();
  for (const loadd::AgentAddress& a : w.agents) {
    out.push_back(a.name() + "/" + loadgen::to_string(a.kind));
  }
  return out;
}

}  // namespace

json to_json(const CampaignSpec& s) {
  json nodes = json::array();
  for (const CampaignNode& n : s.nodes) {
    json j{{"name", n.name}, {"addresses", n.addresses}};
    if (n.injectd) j["injectd"] = n.injectd->to_string();
    if (n.sniffd) j["sniffd"] = n.sniffd->to_string();
    if (n.key_file) j["key_file"] = *n.key_file;
    if (n.netns) j["netns"] = *n.netns;
    if (n.container) j["container"] = *n.container;
    nodes.push_back(std::move(j));
  }
  json mix = json::object();
  for (const auto& [url, w] : s.workload.mix) mix[url] = w;
  const WorkloadSpec& w = s.workload;
  const GradientSpec& g = s.gradient;
  json out{{"name", s.name},
           {"nodes", nodes},
           {"workload",
            {{"target", w.target},
             {"rate", w.rate_rps},
             {"connections", w.connections},
             {"threads", w.threads},
             {"outstanding", w.outstanding},
             {"interarrival", w.interarrival},
             {"timeout_ns", w.timeout_ns},
             {"mix", mix},
             {"warmup_ns", w.warmup_ns},
             {"ca_file", w.ca_file},
             {"insecure", w.insecure},
             {"server_name", w.server_name},
             {"streams_per_connection", w.streams_per_connection},
             {"grpc_methods", grpc_methods_json(w)},
             {"agents", agents_json(w)}}},
           {"links",
            {{"discover", s.links.discover},
             {"discover_for_ns", s.links.discover_for_ns},
             {"include", s.links.include},
             {"exclude", s.links.exclude},
             {"min_messages", s.links.min_messages}}},
           {"gradient",
            {{"enabled", g.enabled},
             {"schedule", g.schedule == Schedule::kSimultaneous ? "simultaneous" : "sequential"},
             {"perturbation_budget_ns", g.perturbation_budget_ns},
             {"bins", g.bins},
             {"chunks", g.chunks},
             {"requests_per_bin", g.requests_per_bin},
             {"delay_scale", g.delay_scale},
             {"min_bins_per_period", g.min_bins_per_period},
             {"max_amplitude_ns", g.max_amplitude_ns},
             {"min_amplitude_ns", g.min_amplitude_ns},
             {"confidence", g.confidence},
             {"lease_ns", g.lease_ns},
             {"repeats", g.repeats},
             {"repeat_noise_ratio", g.repeat_noise_ratio},
             {"precision", g.precision},
             {"amplitudes_ns", g.amplitudes_ns},
             {"verify", g.verify}}},
           {"truth", s.truth}};
  if (!s.experiments.empty()) {
    json experiments = json::array();
    for (const ExperimentSpec& e : s.experiments) experiments.push_back(to_json(e));
    out["experiments"] = std::move(experiments);
  }
  if (s.seed) out["seed"] = *s.seed;
  if (s.db) out["db"] = *s.db;
  if (s.key_file) out["key_file"] = *s.key_file;
  if (!s.resolved.empty()) {
    json resolved = json::array();
    for (const ResolvedName& r : s.resolved) {
      resolved.push_back({{"key", r.key}, {"name", r.name}, {"address", r.address}});
    }
    out["resolved"] = std::move(resolved);
  }
  return out;
}

}  // namespace nabla::campaign
