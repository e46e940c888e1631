#pragma once
// The statistical checks of the self-correcting controller (lancet §4.3), as
// pure functions over one engine round or over the collected latency series.
// controller.hh strings them together; each check returns everything it
// decided on (statistics, p-values, thresholds) so the result can show it.
//
//   check_calibration  — achieved throughput within ±tolerance of the target,
//                        inter-transmission gaps exponential (Anderson–Darling),
//                        late sends and the closed-loop pitfall (lancet fig. 1)
//   choose_stride      — keep every s-th sample, s = 1, 2, 4, …: the first s
//                        whose kept series has no significant lag-1 Spearman
//                        autocorrelation (iid for the CI formulas)
//   check_stationarity — ADF on the kept series
//   tail_percentiles   — order-statistic CIs (analysis/percentile.hh)
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nabla/loadgen/engine.hh"
#include "nabla/loadgen/schedule.hh"

namespace nabla::loadgen {

// ---------------------------------------------------------------- calibration

struct CalibrationLimits {
  double rate_tolerance = 0.02;  // lancet: the target load within ±2%
  // Significance level (percent) of the Anderson–Darling test; one of 15, 10,
  // 5, 2.5, 1. 1%: a false alarm costs a whole measurement, a missed
  // violation is caught again by the late-send and closed-loop checks.
  double ad_level_percent = 1.0;
  // AD's power grows with n: over 10^5 gaps it rejects clock and timer
  // granularity of a few µs that does not matter for the latencies measured.
  // Up to this many gaps, taken evenly over the round, are tested: enough to
  // see clumped (batched) or closed-loop sending, which is the failure lancet
  // guards against. Gaps of an exponential process are iid, so any subset is
  // a valid sample.
  std::size_t ad_max_gaps = 2000;
  // More late sends than this fraction of sends is a violation ("a few %").
  // Late means the client's own timer lateness (engine.hh); slot waits are
  // the service's and only feed the closed-loop check.
  double late_fraction_limit = 0.02;
  // More failed requests (connect, read, write, timeout, protocol, server
  // error replies) than this fraction of the scheduled ones is a violation:
  // the survivors are a biased sample.
  double error_fraction_limit = 0.01;
  // Little's law: rate × (time a request holds a connection slot) is the mean
  // number of slots in use. Above this fraction of C×K the slots queue
  // requests (closed-loop behaviour) — with slot waits as the symptom.
  double slot_occupancy_limit = 0.7;
};

struct AndersonDarlingCheck {
  bool applied = false;  // false: not applicable to this schedule (see note)
  bool passed = true;
  double statistic = 0;     // A²
  double critical = 0;      // at limits.ad_level_percent
  std::size_t gaps = 0;     // tested
  double threshold_ns = 0;  // u: only the excesses g − u of gaps g > u are tested
  std::string note;         // why it was skipped, or what was tested
};

struct ClosedLoopCheck {
  int slots = 0;                 // C × K
  double mean_in_flight_ns = 0;  // mean (receive − actual send) per request
  double slots_needed = 0;       // Little: target rate × mean_in_flight
  double capacity_rps = 0;       // slots / mean_in_flight
  bool closed_loop = false;
};

struct CalibrationCheck {
  double target_rps = 0;
  // What the schedule actually offered in this round: (scheduled − 1) over
  // the intended span. A Poisson count in a 1 s round at 2000 rps varies by
  // ±2.2% (1σ), so the ±2% check compares the throughput with the offered
  // rate, not with the nominal target; the schedule itself is exact by
  // construction (schedule.hh) and its shape is checked by AD.
  double offered_rps = 0;
  // Answered (completed or an error reply) / (last receive − first intended).
  double throughput_rps = 0;
  bool rate_ok = false;  // |throughput − offered| <= tolerance × offered
  AndersonDarlingCheck ad;
  std::uint64_t sent = 0;
  std::uint64_t late = 0;  // the client's own timer lateness over the threshold
  double late_fraction = 0;
  bool late_ok = true;
  std::uint64_t slot_late = 0;  // waits for a free slot over the threshold (not a failure)
  double slot_late_fraction = 0;
  ClosedLoopCheck closed_loop;
  std::vector<std::string> reasons;  // empty when the round passes
  bool passed() const { return reasons.empty(); }
};

// Answered requests (completed or error replies) per second from the first
// intended send to the last sampled receive: a server (or a C×K limit) that
// cannot keep up finishes late and lowers it, unlike completed / intended
// span.
double round_throughput(const EngineResult& round);
// (scheduled − 1) per second over [first, last] intended time; 0 when < 2.
double round_offered_rate(const EngineResult& round);

// Anderson–Darling on the gaps between actual sends (intended + lateness,
// kernel TX stamps when the engine had them), for kExponential schedules.
//
// Resolution: a send may leave up to the late threshold after its intended
// time and still be on time, and the wake-up latency of a VM (~60 µs median
// here) batches sends whose intended gap is shorter than that. Gaps below
// that resolution say nothing about the arrival process, so the test uses the
// exponential's memorylessness: for g ~ Exp(λ), the excesses g − u of the
// gaps g > u are again Exp(λ). u = min(resolution_ns, mean gap) keeps at
// least ~37% of the gaps; clumping or closed-loop sending still distorts the
// long gaps and is rejected.
// Other kinds are not tested (applied = false, note says why): the AD code
// here is the exponential case, and fixed/uniform/lognormal/trace gaps would
// need their own critical values.
AndersonDarlingCheck check_inter_arrivals(const EngineResult& round, ScheduleKind kind,
                                          int64_t resolution_ns, const CalibrationLimits& limits);

// Little's law over the round: slots needed = target rate × mean in-flight
// time (actual send → receive). Sets everything but `closed_loop`, which
// check_calibration decides (it also needs the late sends).
ClosedLoopCheck check_closed_loop(const EngineResult& round, double target_rps, int connections,
                                  int max_outstanding);

// All of the above for one round at `target_rps`. Reasons use the wording of
// the N/A verdicts ("target load not reached (achieved X rps of Y)", …).
CalibrationCheck check_calibration(const EngineResult& round, const EngineConfig& config,
                                   const CalibrationLimits& limits);

// ------------------------------------------------------------------ iid, ADF

struct StrideStep {
  std::size_t stride = 0;
  std::size_t kept = 0;
  double rho = 0;
  double p_value = 0;
};

struct StrideChoice {
  std::optional<std::size_t> stride;  // nullopt: no stride up to max passed
  std::vector<StrideStep> steps;      // every stride tried
  // True when the largest stride tried still had >= min_kept samples: a
  // failure then is final (more samples only make the test stronger).
  bool exhausted = false;
};

// Strides 1, 2, 4, … up to max_stride while the kept series has at least
// min_kept values; the first whose lag-1 Spearman autocorrelation has
// p >= alpha wins. A constant kept series counts as independent.
StrideChoice choose_stride(std::span<const double> latencies, double alpha, std::size_t max_stride,
                           std::size_t min_kept);

// Whose is a dependence the stride scan found at `stride`: the in-flight
// times (kernel TX to RX stamp, without the client's lateness and its slot
// waits) are tested alone at that stride. Independent there (p >= alpha),
// the dependence came from the client's sends, a stall and then a burst
// waiting for slots; dependent too, from the service or the machine it
// runs on. Returns the clause a not-iid reason ends with ("; the ...").
std::string whose_dependence(std::span<const Sample> series, std::size_t stride, double alpha);

// The fewest samples that give an order-statistic CI of the p-th
// percentile (p in percent) at `confidence` (analysis/percentile.hh).
std::size_t min_samples_for_ci(double p, double confidence);

// Every stride-th value, starting at the first.
std::vector<double> keep_every(std::span<const double> values, std::size_t stride);

struct StationarityCheck {
  bool applied = false;  // false: too few values
  bool stationary = false;
  double statistic = 0;
  double p_value = 1;
  int used_lag = 0;
  std::string note;
};

// ADF (constant, AIC lag) on the kept series; stationary when p < alpha. A
// constant series (ADF degenerate) is stationary by definition. At most
// max_values (the most recent ones) are tested, to bound the cost.
StationarityCheck check_stationarity(std::span<const double> kept, double alpha,
                                     std::size_t max_values);

// ---------------------------------------------------------------- percentiles

struct TailPercentile {
  double p = 0;  // in percent, e.g. 99
  double value_ns = 0;
  std::optional<double> ci_low_ns;
  std::optional<double> ci_high_ns;
  std::optional<double> ci_width_ns() const {
    if (!ci_low_ns || !ci_high_ns) return std::nullopt;
    return *ci_high_ns - *ci_low_ns;
  }
};

// The client's own timer lateness at the target percentile against the
// sojourn from the intended send measured there (engine.hh, docs/timing.md).
// Above max_share it is worth a note: the answer, response_ns, leaves that
// lateness out, while the sojourn would mostly show the instrument's delay.
struct ClientLatenessCheck {
  bool applied = false;  // false: no sends, or no positive sojourn to compare with
  int64_t at_target_ns = 0;
  double share = 0;    // at_target_ns / sojourn at the target percentile
  bool ok = true;      // share <= max_share
  std::string reason;  // when not ok: the note's text
};
ClientLatenessCheck check_client_lateness(const analysis::LatencyHistogram& timer_lateness,
                                          const TailPercentile& target, double max_share);

// Percentiles (in percent) with order-statistic CIs at `confidence`; empty
// when `values` is empty.
std::vector<TailPercentile> tail_percentiles(std::span<const double> values,
                                             std::span<const double> percents, double confidence);

}  // namespace nabla::loadgen
