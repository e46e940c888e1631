#pragma once
// The self-correcting tail-latency controller: lancet §4.3 with every check
// switched on, as a bounded loop over open-loop engine rounds (engine.hh).
//
//   1. Calibration (system stability): up to `calibration_attempts` rounds of
//      `calibration_ns`. A round passes when the achieved throughput is within
//      ±2% of the target, the gaps between actual sends pass Anderson–Darling
//      (exponential schedule; other schedules are not tested and say so), no
//      more than 2% of the sends are late, and C×K can carry the rate
//      (Little's law with the measured in-flight time; lancet fig. 1). A
//      closed-loop failure is structural and is not retried. Never passing →
//      N/A with the reasons of the last attempt; no measurement.
//   2. Measurement rounds, each long enough for `samples_per_round` kept
//      samples at the current stride (lancet adds 10,000 per round), clamped
//      to [min_round_ns, max_round_ns] and to what is left of max_duration.
//      Samples of the first round_warmup_ns of a round (queues filling from
//      empty on fresh connections) are dropped. A round that loses the
//      calibration conditions is dropped too, and two in a row end the run
//      with their reasons.
//   3. After each round, over all samples so far in send order:
//      (a) iid: keep every s-th sample, s = 1, 2, 4, …, max_stride; the first
//          s whose kept series has no significant lag-1 Spearman
//          autocorrelation (p >= alpha) is the stride. None up to max_stride
//          with enough samples → N/A "not iid at the lowest sampling rate".
//      (b) stationarity: ADF on the kept series, p < alpha.
//      (c) order-statistic CIs for every percentile at `confidence`.
//      Done (verdict ok) when (a) and (b) pass and the first (target)
//      percentile's CI is at most ci_width_ns wide. Otherwise another round,
//      until max_rounds or max_duration: then N/A with what is still failing
//      ("not iid …", "not stationary …", "CI too wide (… reached, … asked)").
//   The result carries every decision: each round's counts and checks, the
//   stride scan, the ADF statistic and p-value, and the percentiles reached
//   (also for N/A: the numbers collected so far, flagged as not conclusive).
//
// Time is an input: `clock` gives monotonic ns (tests may pass their own),
// and each round starts `round_lead_ns` after the clock reading so the
// engine's connections are up before the first intended send.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nabla/loadgen/controller_checks.hh"
#include "nabla/loadgen/engine.hh"
#include "nabla/loadgen/rounds.hh"

namespace nabla::loadgen {

struct ControllerConfig {
  // The workload: target, protocol, C, T, K, schedule (rate_per_s is the
  // target rate), seed. Its bounds (max_requests, duration_ns) are set per
  // round by the controller.
  EngineConfig engine;
  std::vector<double> percentiles{99.0, 50.0};  // in percent; the FIRST is the target
  double ci_width_ns = 50'000;                  // target CI width of the first percentile
  double confidence = 0.95;
  int64_t max_duration_ns = 120'000'000'000;  // whole measurement, calibration included
  int max_rounds = 60;                        // measurement rounds
  int calibration_attempts = 3;
  int64_t calibration_ns = 1'000'000'000;
  std::size_t samples_per_round = 10'000;  // lancet's increment
  int64_t min_round_ns = 500'000'000;
  // Rounds stay short so that a round lost to a burst of late sends (it is
  // dropped whole) costs little; at low rates a round then holds fewer than
  // samples_per_round samples and the checks simply run more often.
  int64_t max_round_ns = 2'000'000'000;
  int64_t round_warmup_ns = 10'000'000;
  int64_t round_lead_ns = 20'000'000;
  double alpha = 0.05;  // Spearman and ADF significance
  // Lowest sampling rate 1:4096. A stride is tested only once the series
  // keeps min_kept samples at it, so a dependent series makes the run go
  // on, within max_duration, until a larger stride can be tested.
  std::size_t max_stride = 4096;
  std::size_t min_kept = 200;  // fewest kept samples a stride is tested on
  std::size_t adf_max_values = 100'000;
  CalibrationLimits limits;
  // A note (never a reason: the answer leaves the client's lateness out,
  // response_ns) when the client's own timer lateness at the target
  // percentile exceeds this share of the sojourn from the intended send.
  double client_lateness_note_share = 0.1;
  // Who runs each round (rounds.hh): empty, one local engine on `clock`;
  // else, e.g., load agents on other machines.
  RoundRunner runner;
};

struct RoundRecord {
  int index = 0;
  bool calibration = false;
  int64_t duration_ns = 0;  // requested sending time
  uint64_t scheduled = 0, sent = 0, completed = 0, late = 0;
  ErrorCounts errors;
  std::size_t samples_used = 0;  // added to the series (0 for calibration or dropped rounds)
  CalibrationCheck check;
};

struct TypePercentiles {
  std::string type;
  std::size_t samples = 0;  // kept samples of this type
  std::vector<TailPercentile> percentiles;
};

struct ControllerProgress {
  std::string phase;  // "calibration" | "measurement"
  int round = 0;
  double throughput_rps = 0;
  std::size_t samples = 0;  // collected (measurement)
  std::size_t kept = 0;
  std::optional<double> ci_width_ns;  // of the target percentile, when known
};

struct ControllerResult {
  bool ok = false;                   // verdict: ok | n/a
  std::vector<std::string> reasons;  // why n/a (empty when ok)
  std::vector<std::string> notes;    // decisions worth knowing that are not failures
  double target_rps = 0;
  double throughput_rps = 0;  // over the measurement rounds used (else the last calibration)
  uint64_t sent = 0;          // every round
  uint64_t completed = 0;     // every round: answered without an error
  uint64_t late_sends = 0;    // every round
  // How late every send of every round left its intended time (0 when on
  // time): the size of the late sends, not only their number.
  analysis::LatencyHistogram lateness;
  // Its two parts (engine.hh), every round: the client's own timer lateness
  // and the waits for a free connection slot.
  analysis::LatencyHistogram timer_lateness;
  analysis::LatencyHistogram slot_wait;
  uint64_t slot_late = 0;  // slot waits over the late threshold, every round
  SendTimer timer;         // how the sends were timed, every round
  ConnectionSetup setup;   // TLS handshakes and start shifts, every round
  // The client's timer lateness at the target percentile over the
  // measurement rounds used, and its share of the sojourn from the intended
  // send there (a note above ControllerConfig::client_lateness_note_share).
  std::optional<int64_t> client_lateness_at_target_ns;
  std::optional<double> client_lateness_share;
  ErrorCounts errors;  // every round
  // Every round, per transaction type (indexed like type_names): what the
  // server answered, to compare with the server's own counters.
  std::vector<TypeCounts> by_type;
  TimestampSource timestamp_source = TimestampSource::kUser;  // of most kept samples
  std::vector<RoundRecord> rounds;
  std::size_t samples = 0;  // in the series (after warm-up drops)
  std::size_t kept = 0;     // after striding
  std::size_t stride = 1;   // chosen (or the largest tried when none passed)
  StrideChoice stride_scan;
  StationarityCheck stationarity;
  // The answer: response time (response_ns), all types, kept samples.
  std::vector<TailPercentile> percentiles;
  // Diagnostic: from the intended send, the client's own lateness included.
  std::vector<TailPercentile> sojourn_percentiles;
  std::vector<TailPercentile> service_percentiles;  // X-Service-Time-Ns / echo, when reported
  // Diagnostic: actual send → receive (sojourn minus the client's lateness),
  // i.e. network + server without the client's own delay. The verdict and
  // `percentiles` always time from the intended send.
  std::vector<TailPercentile> in_flight_percentiles;
  std::vector<TypePercentiles> per_type;  // response time, when more than one type
  std::vector<std::string> type_names;
  // In send order. When no measurement round was used, the last calibration
  // round's samples (every one), with percentiles flagged as not conclusive.
  std::vector<Sample> kept_samples;
  // Per agent, every round (empty for one local engine).
  std::vector<AgentSummary> agents;
  int64_t elapsed_ns = 0;
};

using MonotonicClock = std::function<int64_t()>;
// Called after every round (calibration, measurement, dropped or not). It may
// throw to abort the run (nabla load does on SIGINT/SIGTERM); the exception
// leaves run_controller unchanged.
using ProgressCallback = std::function<void(const ControllerProgress&)>;

// Throws std::invalid_argument for a bad configuration (no percentile, a
// percentile outside (0, 100), confidence outside (0, 1), non-positive
// ci_width/max_duration/max_rounds, or a bad engine configuration) and
// std::system_error from engine setup. Data-path failures are counted.
ControllerResult run_controller(const ControllerConfig& config, const MonotonicClock& clock,
                                const ProgressCallback& progress = {});

void validate(const ControllerConfig& config);

}  // namespace nabla::loadgen
