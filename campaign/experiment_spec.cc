// The [[experiment]] tables; see experiment_spec.hh.
#include "experiment_spec.hh"

#include <set>

namespace nabla::campaign {
namespace {

using nlohmann::json;

// The fault keys: `nabla inject`'s flags without the dashes, '-' as '_'.
constexpr std::string_view kFaultKeys[] = {
    "delay",     "wave",    "jitter",      "jitter_dist", "jitter_correlation",
    "loss",      "reorder", "reorder_gap", "corrupt",     "corrupt_fix_checksum",
    "duplicate", "rate",    "burst",       "partition"};

// "--jitter-dist: why" -> "experiment[0].jitter_dist: why".
[[noreturn]] void fail_as_key(const Section& s, const std::string& flag_error) {
  std::string message = flag_error;
  if (message.starts_with("--")) {
    const std::size_t colon = message.find(':');
    std::string key = message.substr(2, colon - 2);
    for (char& c : key) c = c == '-' ? '_' : c;
    message = s.key(key) + message.substr(colon);
  }
  throw std::invalid_argument(message);
}

common::FaultFlags fault_flags(const Section& s) {
  common::FaultFlags f;
  f.delay = s.string("delay");
  f.wave = s.string("wave");
  f.jitter = s.string("jitter");
  f.jitter_distribution = s.string("jitter_dist");
  f.jitter_correlation = s.string("jitter_correlation");
  f.loss = s.string("loss");
  f.reorder = s.string("reorder");
  f.reorder_gap = s.integer("reorder_gap", INT64_MIN, INT64_MAX);
  f.corrupt = s.string("corrupt");
  f.corrupt_fix_checksum = s.boolean("corrupt_fix_checksum").value_or(false);
  f.duplicate = s.string("duplicate");
  f.rate = s.string("rate");
  f.burst = s.string("burst");
  f.partition = s.boolean("partition").value_or(false);
  return f;
}

// "-5%" -> -0.05: a change no lower than this; the sign is required.
double throughput_change(const Section& slo) {
  const std::string text = *slo.string("throughput");
  if (!text.starts_with("-")) {
    fail(slo.key("throughput"), "a drop with its sign, e.g. \"-5%\", got \"" + text + "\"");
  }
  try {
    return -common::parse_percent(std::string_view(text).substr(1));
  } catch (const std::invalid_argument& e) {
    fail(slo.key("throughput"), e.what());
  }
}

SloSpec parse_slo(const Section& s) {
  const Section slo = s.table("slo");
  if (!slo.present()) fail(slo.path(), "required, e.g. slo = { p99 = \"20ms\" }");
  slo.allow_only({"p50", "p90", "p99", "p999", "errors", "throughput"});
  SloSpec out;
  const std::pair<const char*, double> terms[] = {
      {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
  for (const auto& [term, p] : terms) {
    const auto bound = slo.duration(term);
    if (!bound) continue;
    if (*bound <= 0) fail(slo.key(term), "must be > 0");
    out.percentiles.push_back({term, p, *bound});
  }
  if (const auto errors = slo.string("errors")) {
    try {
      out.max_error_rate = common::parse_percent(*errors);
    } catch (const std::invalid_argument& e) {
      fail(slo.key("errors"), e.what());
    }
  }
  if (slo.get("throughput") != nullptr) out.min_throughput_change = throughput_change(slo);
  if (out.percentiles.empty() && !out.max_error_rate && !out.min_throughput_change) {
    fail(slo.path(), "give at least one of p50, p90, p99, p999, errors, throughput");
  }
  return out;
}

std::int64_t window_ns(const Section& s, std::string_view key, std::int64_t fallback) {
  const std::int64_t ns = s.duration(key).value_or(fallback);
  if (ns < 100'000'000 || ns > 3'600'000'000'000) fail(s.key(key), "must be in [100ms, 1h]");
  return ns;
}

void check_targets(const Section& s, const CampaignSpec& spec, const ExperimentSpec& e) {
  if (e.links.empty() && e.nodes.empty()) fail(s.key("links"), "give links or nodes");
  for (const std::string& node : e.nodes) {
    const CampaignNode* n = spec.node_by_name(node);
    if (n == nullptr) fail(s.key("nodes"), "no node \"" + node + "\"");
    if (!n->injectd) fail(s.key("nodes"), "node \"" + node + "\" has no injectd");
  }
}

ExperimentSpec parse_experiment(const Section& s, const CampaignSpec& spec) {
  for (const auto& [k, v] : *s.raw()) {
    const std::string_view key = k.str();
    bool known = key == "name" || key == "links" || key == "nodes" || key == "baseline" ||
                 key == "fault" || key == "recovery" || key == "slo";
    for (std::string_view f : kFaultKeys) known = known || key == f;
    if (!known) throw std::invalid_argument("unknown key " + s.key(key));
  }
  ExperimentSpec e;
  e.name = s.string("name").value_or("");
  if (e.name.empty()) fail(s.key("name"), "required, a non-empty string");
  e.links = s.strings("links");
  e.nodes = s.strings("nodes");
  check_targets(s, spec, e);
  e.fault = fault_flags(s);
  try {
    e.request = common::build_fault_request(e.fault, common::read_trace_file);
  } catch (const std::invalid_argument& err) {
    fail_as_key(s, err.what());
  }
  if (!e.request.delay && e.request.faults.empty()) {
    fail(s.key("delay"), "give a delay or a fault (the keys of nabla inject's flags)");
  }
  e.baseline_ns = window_ns(s, "baseline", 5'000'000'000);
  e.fault_ns = window_ns(s, "fault", 10'000'000'000);
  e.recovery_ns = window_ns(s, "recovery", 5'000'000'000);
  e.slo = parse_slo(s);
  return e;
}

}  // namespace

std::vector<ExperimentSpec> parse_experiments(const toml::node* experiments,
                                              const CampaignSpec& spec) {
  std::vector<ExperimentSpec> out;
  if (experiments == nullptr) return out;
  if (!experiments->is_array_of_tables()) fail("experiment", "must be [[experiment]] tables");
  std::set<std::string> names;
  const toml::array& arr = *experiments->as_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const Section s(arr.get(i)->as_table(), "experiment[" + std::to_string(i) + "]");
    ExperimentSpec e = parse_experiment(s, spec);
    if (!names.insert(e.name).second) fail(s.key("name"), "\"" + e.name + "\" given twice");
    out.push_back(std::move(e));
  }
  return out;
}

json to_json(const ExperimentSpec& e) {
  json slo = json::object();
  for (const PercentileBound& b : e.slo.percentiles) slo[b.term + "_ns"] = b.bound_ns;
  if (e.slo.max_error_rate) slo["errors"] = *e.slo.max_error_rate;
  if (e.slo.min_throughput_change) slo["throughput"] = *e.slo.min_throughput_change;
  json out{{"name", e.name},
           {"links", e.links},
           {"nodes", e.nodes},
           {"faults", e.request.faults.to_json()},
           {"baseline_ns", e.baseline_ns},
           {"fault_ns", e.fault_ns},
           {"recovery_ns", e.recovery_ns},
           {"slo", slo}};
  if (e.request.delay) out["delay"] = e.request.delay->to_json();
  return out;
}

}  // namespace nabla::campaign
