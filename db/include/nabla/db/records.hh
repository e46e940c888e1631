#pragma once
// Plain records written to and read from the run history (see docs/schema.md).
// Times are nanoseconds: `*_ns` instants are wall-clock Unix time, the rest
// durations. JSON columns are passed as already-serialised text.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nabla::db {

enum class RunKind { kRun, kLoad, kDemo, kAnalyze, kInject, kAccel, kMemlat };
enum class RunStatus { kRunning, kComplete, kFailed };
enum class PhaseKind { kTraining, kAdaptive, kActive, kBaseline, kSimultaneous, kStep };
enum class TimestampSource : std::uint8_t { kUser = 0, kSoftware = 1, kHardware = 2 };

// Names as stored in the database ("run", "complete", "training", ...).
std::string_view to_string(RunKind kind);
std::string_view to_string(RunStatus status);
std::string_view to_string(PhaseKind kind);
std::string_view to_string(TimestampSource source);
// Inverse of to_string; throws std::invalid_argument naming the bad value.
RunKind parse_run_kind(std::string_view text);
RunStatus parse_run_status(std::string_view text);
PhaseKind parse_phase_kind(std::string_view text);

struct Campaign {
  std::string name;
  std::string spec_json = "{}";
  std::int64_t created_ns = 0;
};

struct RunStart {
  std::optional<std::int64_t> campaign_id;
  RunKind kind = RunKind::kRun;
  std::string config_json = "{}";
  std::string host_info_json = "{}";
  std::string tool_version;
  std::optional<std::int64_t> seed;
  std::int64_t started_ns = 0;
};

struct RunInfo {
  std::int64_t id = 0;
  std::optional<std::int64_t> campaign_id;
  RunKind kind = RunKind::kRun;
  RunStatus status = RunStatus::kRunning;
  std::string config_json;
  std::string host_info_json;
  std::string tool_version;
  std::optional<std::int64_t> seed;
  std::int64_t started_ns = 0;
  std::optional<std::int64_t> ended_ns;
  std::optional<std::string> error;
  std::int64_t pid = 0;
};

struct Node {
  std::int64_t run_id = 0;
  std::string name;
  std::optional<std::string> address;
  std::optional<std::string> injectd_addr;
  std::optional<std::string> sniffd_addr;
};

// One-way logical link; ports 0 mean "ephemeral, folded".
struct Link {
  std::int64_t run_id = 0;
  std::string proto = "tcp";  // tcp | udp | any
  std::string src_host;
  std::optional<std::int64_t> src_pid;
  std::optional<std::string> src_comm;
  int src_port = 0;
  std::string dst_host;
  std::optional<std::int64_t> dst_pid;
  std::optional<std::string> dst_comm;
  int dst_port = 0;
};

struct Flow {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> node_id;
  std::optional<std::int64_t> link_id;
  std::string proto = "tcp";  // tcp | udp
  std::string local_addr;
  int local_port = 0;
  std::string remote_addr;
  int remote_port = 0;
  std::optional<std::int64_t> pid;
  std::optional<std::string> comm;
  std::string direction = "out";  // out | in
  std::int64_t segs_out = 0, segs_in = 0, bytes_out = 0, bytes_in = 0;
  std::int64_t first_seen_ns = 0;
  std::int64_t last_seen_ns = 0;
};

struct Phase {
  std::int64_t run_id = 0;
  PhaseKind kind = PhaseKind::kTraining;
  std::optional<std::int64_t> link_id;  // required for adaptive/active
  std::int64_t started_ns = 0;
  std::optional<std::int64_t> ended_ns;
  std::optional<std::int64_t> bin_width_ns;
  std::optional<std::int64_t> bins;    // N
  std::optional<std::int64_t> chunks;  // M
  std::optional<std::int64_t> k_d;
  std::optional<std::int64_t> amplitude_ns;
};

// Requested and actual delay of one injection (actual = release - arrival).
struct Injection {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> phase_id;
  std::optional<std::int64_t> link_id;
  std::optional<std::string> node;
  std::string waveform = "square";  // constant | square | off
  std::string spec_json = "{}";
  std::int64_t requested_delay_ns = 0;
  std::optional<std::int64_t> period_ns;
  std::optional<double> duty;
  std::optional<std::int64_t> seed;
  std::int64_t started_ns = 0;
  std::optional<std::int64_t> ended_ns;
  std::int64_t packets = 0, bytes = 0, delayed = 0, dropped = 0;
  std::optional<double> actual_mean_ns, actual_std_ns, actual_p50_ns, actual_p99_ns, actual_max_ns;
};

// One request. type_id comes from Store::transaction_type_id().
struct Sample {
  std::optional<std::int64_t> phase_id;
  std::int64_t send_ns = 0;
  std::int64_t latency_ns = 0;
  std::optional<std::int64_t> service_ns;
  std::int64_t type_id = 0;
  TimestampSource source = TimestampSource::kUser;
};

struct Gradient {
  std::int64_t run_id = 0;
  std::int64_t link_id = 0;
  std::int64_t type_id = 0;
  std::optional<std::int64_t> phase_id;
  double value = 0;
  std::optional<double> ci_low, ci_high;
  double confidence = 0.95;
  std::optional<double> time_domain;
  std::optional<double> actual_amplitude_ns;
  std::optional<double> perturbation_ns;
  std::optional<double> throughput_change;
  std::optional<std::int64_t> k_d, bins;
  std::optional<std::string> schedule;  // sequential | simultaneous
  std::optional<double> step_value, step_ci_low, step_ci_high;
  std::optional<double> messages_per_txn, messages_ci_low, messages_ci_high;
};

// One amplitude of a sweep: the link's gradient measured at that amplitude.
struct GradientAmplitude {
  std::int64_t run_id = 0;
  std::int64_t gradient_id = 0;
  std::optional<std::int64_t> phase_id;
  std::int64_t amplitude_ns = 0;  // requested
  std::optional<double> actual_amplitude_ns;
  double value = 0;
  std::optional<double> ci_low, ci_high;
};

struct TailResult {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> type_id;  // nullopt = all types
  std::string metric = "sojourn";       // response | sojourn | service
  double rate_rps = 0;
  std::optional<double> throughput_rps;
  double percentile = 99;
  std::optional<double> value_ns, ci_low_ns, ci_high_ns;
  double confidence = 0.95;
  bool ok = true;                   // verdict: ok | n/a
  std::string reasons_json = "[]";  // JSON array of strings
  std::optional<std::int64_t> samples, late_sends;
  std::optional<TimestampSource> source;
};

// One check of the self-correcting controller at one rate point of `nabla
// load` (the load_checks table): rate reached, Anderson–Darling on the send
// gaps, late sends, closed loop, iid (Spearman), stationarity (ADF), CI
// width.
struct LoadCheck {
  std::int64_t run_id = 0;
  double rate_rps = 0;        // the rate point's target rate
  std::int64_t position = 0;  // order within the rate point
  std::string name;
  std::string outcome = "pass";  // pass | fail | not applied
  std::optional<double> statistic, threshold, p_value;
  std::optional<std::int64_t> samples;
  std::string detail;
};

// One load agent at one rate point of `nabla load --agent` (the load_agents
// table): its share and what it did over every round.
struct LoadAgent {
  std::int64_t run_id = 0;
  double rate_rps = 0;             // the rate point's target rate
  std::string agent;               // host:port
  std::string kind = "symmetric";  // symmetric | throughput | latency
  double share_rps = 0;
  std::int64_t rounds = 0, rounds_failed = 0;
  std::int64_t sent = 0, completed = 0, late = 0, errors = 0, samples = 0;
  std::optional<std::int64_t> timer_lateness_p99_ns;
  std::string reasons_json = "[]";
};

// One interval of memory latency sampled beside a run (the memlat table).
struct MemlatSample {
  std::int64_t run_id = 0;
  std::int64_t t_ns = 0;  // wall clock at the interval's end
  std::int64_t interval_ns = 0;
  std::optional<double> latency_ns, frequency_ghz;  // nullopt: no LLC-miss reads
  double cycles = 0, ref_cycles = 0, outstanding = 0, requests = 0;
  std::string target = "system";
  // The memory controllers' counters (summed over the uncore iMC channels;
  // clockticks the mean per channel) and the latency from them; nullopt
  // where no uncore iMC PMU was read.
  std::optional<double> rpq_occupancy{}, rpq_inserts{}, imc_clockticks{}, imc_latency_ns{};
};

// One pointer-chase point of `nabla memlat --probe` (the memlat_probe table).
struct MemlatProbePoint {
  std::int64_t run_id = 0;
  std::int64_t buffer_bytes = 0;
  int load_threads = 0;
  double latency_ns = 0;  // per dependent load
  bool huge_pages = false;
};

// One design and strategy `nabla accel` evaluated (the accel_results
// table). Overheads are host cycles; see docs/accel.md for each parameter.
struct AccelResult {
  std::int64_t run_id = 0;
  std::optional<std::string> kernel;  // nullopt: from flags, not --config
  std::string strategy;               // on-chip | off-chip | remote
  std::string design;                 // sync | sync-os | async | async-distinct
  double cycles = 0;                  // C
  double alpha = 0;
  std::optional<double> accel_factor;  // A
  double offloads_per_s = 0;           // n
  double o0 = 0, l_cycles = 0, q_cycles = 0, o1 = 0;
  std::optional<double> cycles_per_byte, beta;  // C_b, β: set when sizes were asked
  double speedup = 0;                           // C / C_S
  std::optional<double> latency_reduction;      // C / C_L
  // With cycles_per_byte set, nullopt means no size pays off.
  std::optional<double> min_bytes_speedup, min_bytes_latency;
};

// The link-gradient projection of a remote offload for one transaction type
// (the accel_projections table). type_id comes from
// Store::transaction_type_id().
struct AccelProjection {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> gradient_run_id;
  std::string link;  // the --link selector
  std::int64_t type_id = 0;
  double added_delay_ns = 0;
  std::optional<double> baseline_ns, predicted_ns, ci_low_ns, ci_high_ns;
  double confidence = 0.95;
  std::optional<std::string> missing;  // why there is no prediction
};

// One fault experiment of a campaign (the experiments table).
struct Experiment {
  std::int64_t run_id = 0;
  std::string name;
  std::string spec_json = "{}";
  std::string links_json = "[]";  // JSON array of link labels
  std::int64_t started_ns = 0, fault_start_ns = 0, fault_end_ns = 0, ended_ns = 0;
  std::string verdict = "inconclusive";  // pass | fail | inconclusive
  std::optional<double> mean_delay_ns;
  std::optional<double> observed_change_ns, observed_ci_low_ns, observed_ci_high_ns;
  std::optional<double> predicted_change_ns, predicted_ci_low_ns, predicted_ci_high_ns;
};

// One SLO term over one window of an experiment (experiment_checks).
struct ExperimentCheck {
  std::int64_t experiment_id = 0;
  std::string window;  // baseline | fault | recovery
  std::string term;    // p99 | errors | throughput ...
  double bound = 0, value = 0;
  std::optional<double> ci_low, ci_high;
  std::string verdict = "inconclusive";
  std::optional<std::int64_t> extra_ns;
  std::optional<std::string> note;
  std::int64_t samples = 0, scheduled = 0;
};

}  // namespace nabla::db
