#pragma once
// The campaign file of `nabla run CAMPAIGN.toml` (the contract shared with
// `nabla demo`; docs/cli.md, "nabla run"). Parsing validates every rule up front so
// a campaign never fails half-way on a typo:
//   - unknown keys anywhere are errors naming the full key path
//     ("unknown key gradient.binz", "unknown key node[1].injectdd");
//   - a bad value names the key and the value ("gradient.bins: must be a power
//     of two >= 8, got 100");
//   - durations are strings with units, parsed by common::parse_duration_ns.
// Errors are std::invalid_argument (exit code 2 in `nabla run`).
//
// Link labels. Results are keyed by a label built from node names, not
// addresses: "PROTO SRC[:SPORT] -> DST[:DPORT]" with a port written only when
// it is fixed (non-ephemeral), e.g. "tcp web -> app:9002" (the request
// direction) and "tcp app:9002 -> web" (the response direction). An endpoint
// no node owns keeps its address. [truth] keys use these labels.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/fault_words.hh"
#include "nabla/common/host_port.hh"
#include "nabla/load/workload.hh"
#include "nabla/loadd/agents.hh"

namespace nabla::campaign {

struct CampaignNode {
  std::string name;                    // [a-z0-9_-]+, unique
  std::vector<std::string> addresses;  // address literals or names, at least one
  std::optional<common::HostPort> injectd;
  std::optional<common::HostPort> sniffd;
  std::optional<std::string> key_file;  // overrides CampaignSpec::key_file
  // The node is a network namespace on a machine (a container): `netns` is
  // passed in inject.start (NAME, /path or pid:N; the injectd must run
  // there), and with a NAME or a `container` (short id, 12+ hex digits)
  // discovery keeps only the sniffd's flows of that namespace, so several
  // nodes can share one sniffd. At most one of the two.
  std::optional<std::string> netns = std::nullopt;
  std::optional<std::string> container = std::nullopt;
};

using WorkloadMethod = load::WorkloadMethod;

// The campaign's workload: the load library's (nabla/load/workload.hh, one
// parser with `nabla load`) with the campaign's own defaults (16
// connections, the mix {"/": 1}) and its rate and warm-up. The target is
// SCHEME://HOST:PORT with scheme http, https, h2, h2c, grpc, grpcs or echo;
// the URLs are the mix's keys.
struct WorkloadSpec : load::Workload {
  WorkloadSpec() {
    connections = 16;
    mix = {{"/", 1.0}};
  }
  bool http = true;  // false: echo
  double rate_rps = 0;
  std::int64_t warmup_ns = 1'000'000'000;
  // `agents = ["HOST[:PORT][/KIND]", ...]`: the load is sent by these load
  // agents (nabla-loadd, loadd/agents.hh), the rate split among them, instead
  // of by an engine in this process. Empty: sent from here.
  std::vector<loadd::AgentAddress> agents;
};

struct LinksSpec {
  bool discover = true;
  std::int64_t discover_for_ns = 3'000'000'000;
  std::vector<std::string> include;  // link specs (common/link_spec.hh syntax)
  std::vector<std::string> exclude;
  std::uint64_t min_messages = 1;
};

// How the links are measured: one after another, or all in the same phases
// at distinct frequencies (analysis/frequency_plan.hh).
enum class Schedule { kSequential, kSimultaneous };

// Training chunks (M) when [gradient] chunks is not given.
inline constexpr std::size_t kSequentialChunks = 9;
inline constexpr std::size_t kSimultaneousChunks = 2;

struct GradientSpec {
  // false: no training and no gradient phases (a campaign of experiments
  // only; discovery still runs to find the links and the types).
  bool enabled = true;
  // Default sequential: one link's small perturbation at a time keeps the
  // service at its own operating point (docs/method.md, "Choosing the
  // schedule"). Simultaneous is opt-in.
  Schedule schedule = Schedule::kSequential;
  // Simultaneous schedule: the sum of the links' amplitudes is at most this
  // (0: 4 x max_amplitude).
  std::int64_t perturbation_budget_ns = 0;
  std::size_t bins = 128;  // N, a power of two >= 8
  // M >= 2. Default 9 for the sequential schedule, which picks its one
  // frequency and subtracts the training's mean spectrum; 2 for the
  // simultaneous one, which uses the training only to rank frequencies and
  // size the first amplitudes (docs/method.md, "Simultaneous schedule").
  std::size_t chunks = kSequentialChunks;
  std::size_t requests_per_bin = 5;     // k >= 1
  double delay_scale = 30;              // d > 0
  std::size_t min_bins_per_period = 8;  // >= 4, <= N
  std::int64_t max_amplitude_ns = 5'000'000;
  std::int64_t min_amplitude_ns = 200'000;  // <= max
  double confidence = 0.95;                 // (0, 1)
  std::int64_t lease_ns = 5'000'000'000;    // >= 1 s
  // An active phase whose noise (at any type) exceeds the training's by this
  // ratio is measured again, up to `repeats` more times; the phases are then
  // combined by inverse variance (a noisy spell on a shared machine costs a
  // repeat instead of a wrong gradient). A ratio of 0 repeats every phase
  // `repeats` times (fixed extra measurement time).
  std::size_t repeats = 1;          // [0, 5]
  double repeat_noise_ratio = 2.0;  // [0, 100]
  // A precision asked of every gradient: the active phase is also measured
  // again (within `repeats`) while any type's combined CI half-width exceeds
  // precision x max(|gradient|, 1). 0: off. A busy machine then spends time
  // instead of giving an interval wider than the question allows.
  double precision = 0;  // [0, 1]
  // An amplitude sweep: each link's active phase at every one of these
  // (ascending, distinct, each in (0, 10s], at most kMaxSweepAmplitudes)
  // instead of at the adaptive amplitude alone. Empty: one amplitude.
  std::vector<std::int64_t> amplitudes_ns;
  // After a link's active phase(s), a step phase holds the measured
  // amplitude on, off, on, off (docs/method.md, "Step verification").
  bool verify = false;
};

// One bound of an experiment's steady-state hypothesis (`slo = { p99 =
// "20ms", errors = "1%", throughput = "-5%" }`): a percentile of the response
// time at most bound_ns, the share of failed requests at most max_error_rate,
// the throughput at the offered rate at most this much below the baseline
// window's (min_throughput_change -0.05 for "-5%").
struct PercentileBound {
  std::string term;  // "p99"
  double p = 0;      // 0.99
  std::int64_t bound_ns = 0;
};
struct SloSpec {
  std::vector<PercentileBound> percentiles;  // p50, p90, p99, p999 in that order
  std::optional<double> max_error_rate;
  std::optional<double> min_throughput_change;
};

// One [[experiment]]: a fault (the vocabulary of `nabla inject`,
// common/fault_words.hh) on some links while the workload runs through a
// baseline, a fault and a recovery window, judged against its SLO.
struct ExperimentSpec {
  std::string name;
  std::vector<std::string> links;  // campaign link labels ("tcp app -> db:5432")
  std::vector<std::string> nodes;  // every measurable link leaving these nodes
  common::FaultFlags fault;        // as written (keys = flags without dashes)
  common::FaultRequest request;    // the delay wave and faults inject.start sends
  std::int64_t baseline_ns = 0;
  std::int64_t fault_ns = 0;
  std::int64_t recovery_ns = 0;
  SloSpec slo;
};

inline constexpr std::size_t kMaxSweepAmplitudes = 8;

// A name in the campaign file and the address it was resolved to once at
// start (campaign/hosts.hh); `key` is where it was written ("node[0].sniffd").
struct ResolvedName {
  std::string key;
  std::string name;
  std::string address;
};

struct CampaignSpec {
  std::string name;
  std::optional<std::uint64_t> seed;  // < 2^63 (stored as SQLite INTEGER)
  std::optional<std::string> db;
  std::optional<std::string> key_file;
  std::vector<CampaignNode> nodes;
  WorkloadSpec workload;
  LinksSpec links;
  GradientSpec gradient;
  std::vector<ExperimentSpec> experiments;  // in file order
  // link label -> type -> true gradient
  std::map<std::string, std::map<std::string, double>> truth;
  // Filled by resolve_campaign_hosts(), in file order; empty when every host
  // is an address literal.
  std::vector<ResolvedName> resolved;

  // The node owning an address, or nullptr.
  const CampaignNode* node_by_address(std::string_view address) const;
  const CampaignNode* node_by_name(std::string_view name) const;
  // The key file for a node: its own, else the campaign's, else none.
  std::optional<std::string> key_file_for(const CampaignNode& node) const;
};

// Throws std::invalid_argument (see the header comment); TOML syntax errors
// name the line.
CampaignSpec parse_campaign_spec(std::string_view toml_text);
CampaignSpec load_campaign_spec(const std::string& path);

// The parsed spec as JSON (stored in campaigns.spec and runs.config):
// durations in ns, every default filled in; "resolved" lists the names and
// their addresses when the file used names.
nlohmann::json to_json(const CampaignSpec& spec);
// One experiment as the run history stores it (experiments.spec).
nlohmann::json to_json(const ExperimentSpec& experiment);

}  // namespace nabla::campaign
