#pragma once
// `nabla load`: tail latency at one load, or a sweep over loads, measured by
// the self-correcting controller (loadgen/controller.hh) and optionally stored.
//
//   nabla load --target http://H:P/path | https://H:P/path | h2://H:P/path | h2c://H:P/path
//                       | grpc://H:P | grpcs://H:P | memcache://H:P | redis://H:P | echo://H:P
//                       | sockperf://H:P (sockperf's TCP ping-pong, against `sockperf server`)
//              [--ca-file PEM] [--insecure] [--server-name NAME]   (https, h2, grpcs)
//              [--streams-per-connection N]                       (h2, h2c, grpc, grpcs)
//              [--grpc-method /pkg.Service/Method ... --grpc-message FILE ...]
//              --rate R --connections C --threads T [--outstanding K]
//              [--mix /view=0.7,/bid=0.3 | get=0.9,set=0.1]
//              [--percentile 99 ...] [--ci-width 50us] [--confidence 0.95]
//              [--max-duration 120s] [--sweep LO:HI:STEPS] [--db nabla.db] [--json]
//              [--late-threshold 200us] [--spin auto] [--slice 100us|off]
//              [--rt-priority P] [--seed N]
//              [--cpus LIST] [--cpu-latency-us N|off]
//              [--agent HOST[:PORT][/KIND] ... [--key-file F] [--agent-lease 5s]]
//
// Flags are parsed by parse_load_options() without touching a socket, so
// unit tests can call it; every bad value throws std::invalid_argument naming
// the flag (exit 2). The verdict "n/a" is an answer, not a failure: exit 0 for
// ok and n/a alike, 1 only when the run itself fails (nothing could connect
// to the target at all, database error).
//
// With --agent the load is sent by load agents (nabla-loadd) on other
// machines, each its share of the rate, and measured by the same controller
// (loadgen/rounds.hh, loadd/agents.hh); the agents' own host settings
// (--cpus, --rt-priority, --cpu-latency-us) are their flags, refused here. An
// agent that fails or cannot be reached ends the run: every agent is stopped,
// the rate point is stored with what was measured and the run is marked
// failed with the reason (exit 1).
//
// Progress (phase, achieved rate, samples, current CI width) goes to stderr
// only when stderr is a terminal. With --db, the run (kind 'load') is created
// first, every rate point adds its tail_results rows (one per metric, type
// and percentile, with the verdict and reasons), its controller checks
// (load_checks) and its kept samples, and the run ends 'complete' — or 'failed' with the error when
// anything throws.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/resolve.hh"
#include "nabla/load/record.hh"
#include "nabla/load/workload.hh"
#include "nabla/loadd/agents.hh"
#include "nabla/loadgen/controller.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

// The flags as typed (strings where a unit or a list is parsed).
struct LoadOptions {
  std::string target;
  std::string rate;  // requests per second; required unless --sweep
  int connections = 1;
  int threads = 1;
  int outstanding = 1;
  std::string mix;
  std::vector<std::string> percentiles;  // each "99" or "99,50"; default 99
  std::string ci_width = "50us";
  double confidence = 0.95;
  std::string max_duration = "120s";
  // A send later than this after its intended time is late (and the AD test
  // looks at gaps above it). 200us suits a quiet host; a busy VM may need 1ms.
  std::string late_threshold = "200us";
  // Busy-poll this long before each intended send (precision for CPU; 0 =
  // sleep on the timer only). A VM's timer wake-ups are ~50 us late.
  std::string spin = "auto";
  // The scheduler slice each load thread asks for (common/sched_slice.hh):
  // a duration from 100us to 100ms, or "off". Shorter than the others' lets
  // a send timer's wake-up preempt them at once. Needs no privilege.
  std::string slice = "100us";
  // SCHED_FIFO priority of the load threads (1-99; 0 = normal scheduling).
  // Refused when every core would hold a spinning real-time thread.
  int rt_priority = 0;
  // CPUs of the load threads, e.g. "0" or "0,2-3": thread i runs on the i-th
  // listed CPU (round robin). Empty = unpinned.
  std::string cpus;
  // PM QoS CPU latency limit held for the whole run: "auto" (default), whole
  // µs, or "off". 0 keeps idle CPUs polling: timer and network wake-ups of
  // the load threads and of a server on this machine are not delayed by a
  // halted CPU's exit (common/cpu_latency.hh). "auto" holds 0 when this
  // process may (root) and measures without it otherwise; a number that
  // cannot be held warns. Either way "cpu_latency" in the JSON and the
  // stored config say what was held.
  std::string cpu_latency_us = "auto";
  // Inter-arrival distribution: exp (Poisson, default), fixed, uniform
  // (gaps uniform in [0, 2/rate]) or lognormal:SIGMA (sigma of log gap).
  std::string interarrival = "exp";
  // memcache:// and redis:// only: key space, key popularity, SET value size.
  std::uint64_t keys = 1000;
  std::string key_dist = "uniform";  // uniform | zipf[:S] (S default 0.99)
  std::size_t value_size = 32;
  std::string sweep;  // LO:HI:STEPS
  std::string db;
  bool json = false;
  std::uint64_t seed = 1;
  // TLS (https://, h2://, grpcs://): trust anchors (PEM; default the
  // system's), no certificate check at all, and the name the certificate
  // must carry (default the target's host name, or its address).
  std::string ca_file;
  bool insecure = false;
  std::string server_name;
  // HTTP/2 and gRPC: streams open at once per connection (the K of
  // --outstanding); 0 = as --outstanding says.
  int streams_per_connection = 0;
  // gRPC: the methods called (each a transaction type) and the files with
  // their request messages (protobuf wire bytes): one per method, or one
  // for all, or none (empty messages).
  std::vector<std::string> grpc_methods;
  std::vector<std::string> grpc_messages;
  // Sample memory latency beside the measurement (docs/memlat.md): on the
  // whole machine, or of one process (the server, when it runs here).
  bool memlat = false;
  int memlat_pid = 0;  // 0 = system-wide
  std::string memlat_interval = "1s";
  // Load agents (nabla-loadd) that send the load instead of this process:
  // each HOST[:PORT][/KIND] (loadd/agents.hh). The key of each is found as
  // for the other daemons (--key-file: a file, or a directory of HOST.key).
  std::vector<std::string> agents;
  std::string key_file;
  std::string agent_lease = "5s";
};

// http | https | h2 | h2c | grpc | grpcs | memcache | redis | echo | sockperf,
// host (a name until resolve_load_target()), port, path, resolved name.
using LoadTarget = load::Target;

struct LoadPlan {
  LoadTarget target;
  // The workload flags, typed by the workload's one parser (load/workload.hh).
  load::Workload workload;
  std::vector<double> rates;  // one, or the sweep's points
  bool sweep = false;
  // Everything but the rate (set per point).
  loadgen::ControllerConfig controller;
  std::optional<int32_t> cpu_latency_us;
  bool cpu_latency_auto = false;  // asked by default, not by the flag: no warning when refused
  // With --agent: who sends, and how long an agent keeps a round nobody
  // polls. Empty: this process sends.
  std::vector<loadd::AgentAddress> agents;
  std::chrono::seconds agent_lease{5};
};

// "scheme://H:P[/path]"; throws std::invalid_argument naming --target.
LoadTarget parse_target(const std::string& text);
// Throws std::invalid_argument naming the flag for any bad value.
LoadPlan parse_load_options(const LoadOptions& options);

// Resolves a --target name once to its first IPv4 address (the load engine
// speaks IPv4), sets the engine's host to it and writes "resolved NAME ->
// ADDRESS" to `log`; an HTTP Host header keeps the name. Throws
// common::ResolveError naming --target. A literal is left as is.
void resolve_load_target(LoadPlan& plan, const common::Resolver& resolver, std::ostream& log);

// The rows of one rate point in load_checks and load_agents (load/record.hh).
using load::load_agents;
using load::load_checks;

// One rate point as JSON (the documented keys plus diagnostics).
nlohmann::json load_result_json(const loadgen::ControllerResult& result,
                                const loadgen::ControllerConfig& config,
                                const std::string& timestamp_note);

// Runs the measurement(s); returns the exit code (0 for ok and n/a).
int run_load(const LoadOptions& options, std::ostream& out, std::ostream& err);

void register_load_command(CLI::App& app);

}  // namespace nabla::coordinator
