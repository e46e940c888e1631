#include "nabla/loadgen/controller_checks.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "nabla/analysis/adf.hh"
#include "nabla/analysis/anderson_darling.hh"
#include "nabla/analysis/percentile.hh"
#include "nabla/analysis/spearman.hh"
#include "nabla/common/units.hh"

namespace nabla::loadgen {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

double round_throughput(const EngineResult& round) {
  if (round.samples.empty()) return round.completed > 0 ? round.achieved_rate() : 0.0;
  int64_t last_rx = INT64_MIN;
  for (const auto& s : round.samples) last_rx = std::max(last_rx, s.intended_ns + s.latency_ns);
  const int64_t span = last_rx - round.first_intended_ns;
  if (span <= 0) return 0.0;
  // Error replies were answered too: the load was carried, and the refusals
  // are judged by the error-fraction check, not as a missed rate.
  const auto answered = static_cast<double>(round.samples.size() + round.errors.server);
  return answered * 1e9 / static_cast<double>(span);
}

double round_offered_rate(const EngineResult& round) {
  const int64_t span = round.last_intended_ns - round.first_intended_ns;
  if (round.scheduled < 2 || span <= 0) return 0.0;
  return static_cast<double>(round.scheduled - 1) * 1e9 / static_cast<double>(span);
}

AndersonDarlingCheck check_inter_arrivals(const EngineResult& round, ScheduleKind kind,
                                          int64_t resolution_ns, const CalibrationLimits& limits) {
  AndersonDarlingCheck out;
  if (kind != ScheduleKind::kExponential) {
    out.note =
        "Anderson-Darling not applied: it is implemented for exponential (Poisson) "
        "inter-arrivals only";
    return out;
  }
  std::vector<int64_t> sends;
  sends.reserve(round.samples.size());
  for (const auto& s : round.samples) {
    sends.push_back(s.intended_ns + std::max<int64_t>(0, s.lateness_ns));
  }
  std::sort(sends.begin(), sends.end());
  std::vector<double> excess;
  if (sends.size() >= 2) {
    const double mean_gap =
        static_cast<double>(sends.back() - sends.front()) / static_cast<double>(sends.size() - 1);
    out.threshold_ns = std::min(static_cast<double>(std::max<int64_t>(resolution_ns, 0)), mean_gap);
    for (std::size_t i = 1; i < sends.size(); ++i) {
      const double g = static_cast<double>(sends[i] - sends[i - 1]);
      if (g > out.threshold_ns) excess.push_back(g - out.threshold_ns);
    }
  }
  if (excess.size() < analysis::kAndersonDarlingMinSamples) {
    out.note = "Anderson-Darling not applied: fewer than 5 gaps above the resolution";
    return out;
  }
  const std::size_t step =
      (excess.size() + limits.ad_max_gaps - 1) / std::max<std::size_t>(limits.ad_max_gaps, 1);
  std::vector<double> tested;
  for (std::size_t i = 0; i < excess.size(); i += std::max<std::size_t>(step, 1)) {
    tested.push_back(excess[i]);
  }
  const auto ad = analysis::anderson_darling_exponential(tested);
  std::size_t level = 0;
  for (std::size_t i = 0; i < ad.significance_levels.size(); ++i) {
    if (std::fabs(ad.significance_levels[i] - limits.ad_level_percent) < 1e-9) level = i;
  }
  out.applied = true;
  out.statistic = ad.statistic;
  out.critical = ad.critical_values[level];
  out.gaps = tested.size();
  out.passed = !ad.rejects_at(ad.significance_levels[level]);
  out.note = "excesses over " + common::format_latency_ns(out.threshold_ns) +
             " of the gaps between actual sends, exponential, " +
             fixed(ad.significance_levels[level], 1) + "% level";
  return out;
}

ClosedLoopCheck check_closed_loop(const EngineResult& round, double target_rps, int connections,
                                  int max_outstanding) {
  ClosedLoopCheck out;
  out.slots = connections * max_outstanding;
  if (round.samples.empty()) return out;
  // A slot is held from the actual send to the receive; Welford-free here
  // since only the mean of non-negative ns values (<~1e12) is needed.
  long double sum = 0;
  for (const auto& s : round.samples) {
    sum += static_cast<long double>(in_flight_ns(s));
  }
  out.mean_in_flight_ns =
      std::max(0.0, static_cast<double>(sum / static_cast<long double>(round.samples.size())));
  out.slots_needed = target_rps * out.mean_in_flight_ns / 1e9;
  out.capacity_rps = out.mean_in_flight_ns > 0 ? out.slots * 1e9 / out.mean_in_flight_ns : INFINITY;
  return out;
}

namespace {

// What the client was late by, how its threads were scheduled, and what is
// left to try: the tail of a late-sends reason.
std::string client_remedies(const EngineResult& round, const EngineConfig& config) {
  std::string out =
      " (its timer lateness p99 " +
      common::format_latency_ns(static_cast<double>(round.timer_lateness.percentile(0.99))) +
      ", max " + common::format_latency_ns(static_cast<double>(round.timer_lateness.max()));
  if (config.rt_priority > 0) {
    out += "; SCHED_FIFO " + std::to_string(config.rt_priority) + " was used";
  } else if (round.timer.slice_ns > 0) {
    out += "; a " + common::format_latency_ns(static_cast<double>(round.timer.slice_ns)) +
           " scheduler slice was " +
           (round.timer.slice_granted ? std::string("granted") : "not granted");
  }
  if (config.cpu_latency_held) out += "; idle CPUs were kept polling (--cpu-latency-us 0)";
  out += "; left to try: ";
  out += config.rt_priority > 0 ? "" : "--rt-priority 1 (root), ";
  out += config.cpu_latency_held ? "" : "--cpu-latency-us 0 (root), ";
  out += "or fewer other tasks on this machine)";
  return out;
}

// Whose is a violated inter-arrival distribution: the client's when its own
// timer lateness reaches the late threshold at p99 (its sends came in
// bursts after stalls), else what happened between noticing a send and the
// kernel's stamp of it.
std::string whose_gaps(const EngineResult& round, const EngineConfig& config) {
  if (round.timer_lateness.count() == 0) return "";
  if (round.timer_lateness.percentile(0.99) >= config.late_threshold_ns) {
    return ": the client's own sends were not Poisson" + client_remedies(round, config);
  }
  return ": the client kept its timer (lateness p99 " +
         common::format_latency_ns(static_cast<double>(round.timer_lateness.percentile(0.99))) +
         "); the gaps changed between its loop and the kernel's send stamp (slot waits, the "
         "send path)";
}

}  // namespace

CalibrationCheck check_calibration(const EngineResult& round, const EngineConfig& config,
                                   const CalibrationLimits& limits) {
  CalibrationCheck out;
  out.target_rps = config.schedule.rate_per_s;
  out.offered_rps = round_offered_rate(round);
  out.throughput_rps = round_throughput(round);
  out.rate_ok = out.offered_rps > 0 && std::fabs(out.throughput_rps - out.offered_rps) <=
                                           limits.rate_tolerance * out.offered_rps;
  out.ad = check_inter_arrivals(round, config.schedule.kind, config.late_threshold_ns, limits);
  out.sent = round.sent;
  out.late = round.late;
  out.late_fraction = round.sent > 0 ? static_cast<double>(round.late) / round.sent : 0.0;
  out.late_ok = out.late_fraction <= limits.late_fraction_limit;
  out.slot_late = round.slot_late;
  out.slot_late_fraction =
      round.sent > 0 ? static_cast<double>(round.slot_late) / static_cast<double>(round.sent) : 0.0;
  out.closed_loop =
      check_closed_loop(round, out.target_rps, config.connections, config.max_outstanding);
  auto& cl = out.closed_loop;
  // Closed loop: the slots cannot carry the rate at all (Little), or sends
  // queue for slots (slot waits over the threshold) while most slots are busy.
  const bool slots_queue = out.slot_late_fraction > limits.late_fraction_limit;
  cl.closed_loop = cl.slots_needed >= cl.slots ||
                   (slots_queue && cl.slots_needed > limits.slot_occupancy_limit * cl.slots);

  if (!out.rate_ok) {
    out.reasons.push_back("target load not reached (achieved " + fixed(out.throughput_rps, 0) +
                          " rps of " + fixed(out.target_rps, 0) + "; offered " +
                          fixed(out.offered_rps, 0) + ")");
  }
  const uint64_t failed = round.errors.total();
  if (failed >
      limits.error_fraction_limit * static_cast<double>(std::max<uint64_t>(round.scheduled, 1))) {
    out.reasons.push_back(
        "request errors: " + std::to_string(failed) + " of " + std::to_string(round.scheduled) +
        " requests failed (connect " + std::to_string(round.errors.connect) + ", read " +
        std::to_string(round.errors.read) + ", write " + std::to_string(round.errors.write) +
        ", timeout " + std::to_string(round.errors.timeout) + ", protocol " +
        std::to_string(round.errors.protocol) + ", server " + std::to_string(round.errors.server) +
        ")");
  }
  if (out.ad.applied && !out.ad.passed) {
    out.reasons.push_back("inter-arrival distribution violated (A²=" + fixed(out.ad.statistic, 3) +
                          " > " + fixed(out.ad.critical, 3) + " at " +
                          fixed(limits.ad_level_percent, 1) + "%, " + std::to_string(out.ad.gaps) +
                          " gaps)" + whose_gaps(round, config));
  }
  if (cl.closed_loop) {
    out.reasons.push_back("closed-loop: C×K=" + std::to_string(cl.slots) + " cannot carry " +
                          fixed(out.target_rps, 0) + " rps at " +
                          common::format_latency_ns(cl.mean_in_flight_ns) + " latency (needs " +
                          fixed(cl.slots_needed, 1) + " in flight; capacity ~" +
                          fixed(cl.capacity_rps, 0) + " rps)");
  } else if (!out.late_ok) {
    out.reasons.push_back(
        "late sends: the load generator itself got to " + fixed(100.0 * out.late_fraction, 1) +
        "% of requests more than " +
        common::format_latency_ns(static_cast<double>(config.late_threshold_ns)) +
        " after their intended time (limit " + fixed(100.0 * limits.late_fraction_limit, 1) +
        "%; waits for a free connection slot are not counted): the client cannot keep the "
        "schedule" +
        client_remedies(round, config));
  }
  return out;
}

ClientLatenessCheck check_client_lateness(const analysis::LatencyHistogram& timer_lateness,
                                          const TailPercentile& target, double max_share) {
  ClientLatenessCheck out;
  if (timer_lateness.count() == 0 || !(target.value_ns > 0)) return out;
  out.applied = true;
  out.at_target_ns = timer_lateness.percentile(target.p / 100.0);
  out.share = static_cast<double>(out.at_target_ns) / target.value_ns;
  out.ok = out.share <= max_share;
  if (out.ok) return out;
  const std::string p = "p" + fixed(target.p, target.p == std::floor(target.p) ? 0 : 2);
  out.reason = "the load generator's own send lateness at " + p + " (" +
               common::format_latency_ns(static_cast<double>(out.at_target_ns)) + ") is " +
               fixed(100.0 * out.share, 0) + "% of the " + p + " sojourn from the intended send (" +
               common::format_latency_ns(target.value_ns) + "), more than " +
               fixed(100.0 * max_share, 0) +
               "%: the response times leave it out, each timed from when the client was ready "
               "to send";
  return out;
}

std::vector<double> keep_every(std::span<const double> values, std::size_t stride) {
  std::vector<double> out;
  if (stride == 0) throw std::invalid_argument("keep_every: stride must be >= 1");
  out.reserve(values.size() / stride + 1);
  for (std::size_t i = 0; i < values.size(); i += stride) out.push_back(values[i]);
  return out;
}

StrideChoice choose_stride(std::span<const double> latencies, double alpha, std::size_t max_stride,
                           std::size_t min_kept) {
  StrideChoice out;
  min_kept = std::max<std::size_t>(min_kept, analysis::kSpearmanMinPairs + 1);
  std::size_t last = 0;
  for (std::size_t s = 1; s <= max_stride; s *= 2) {
    const auto kept = keep_every(latencies, s);
    if (kept.size() < min_kept) break;
    const auto r = analysis::spearman_autocorrelation(kept, 1);
    out.steps.push_back({s, kept.size(), r.rho, r.p_value});
    last = s;
    if (std::isnan(r.rho) || r.p_value >= alpha) {
      out.stride = s;
      return out;
    }
  }
  out.exhausted = last != 0 && last * 2 > max_stride;
  return out;
}

std::string whose_dependence(std::span<const Sample> series, std::size_t stride, double alpha) {
  if (stride == 0) throw std::invalid_argument("whose_dependence: stride must be >= 1");
  std::vector<double> in_flight;
  for (std::size_t i = 0; i < series.size(); i += stride) {
    const Sample& s = series[i];
    in_flight.push_back(static_cast<double>(in_flight_ns(s)));
  }
  const auto r = analysis::spearman_autocorrelation(in_flight, 1);
  if (std::isnan(r.rho) || r.p_value >= alpha) {
    return "; the in-flight times alone are independent there (p=" + fixed(r.p_value, 3) +
           "): the dependence is the client's, its sends stalled and then waited for slots in "
           "bursts";
  }
  return "; the in-flight times are dependent too (rho=" + fixed(r.rho, 3) +
         "): the service, or the machine it shares, changed over time";
}

std::size_t min_samples_for_ci(double p, double confidence) {
  // The ranks' reach grows with n; doubling then bisecting finds the first n.
  std::size_t hi = 1;
  while (!analysis::percentile_ci_ranks(hi, p / 100.0, confidence)) {
    if (hi > (std::size_t{1} << 40)) return hi;
    hi *= 2;
  }
  std::size_t lo = hi / 2;
  while (lo + 1 < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (analysis::percentile_ci_ranks(mid, p / 100.0, confidence) ? hi : lo) = mid;
  }
  return hi;
}

StationarityCheck check_stationarity(std::span<const double> kept, double alpha,
                                     std::size_t max_values) {
  StationarityCheck out;
  constexpr std::size_t kMinValues = 50;
  if (kept.size() < kMinValues) {
    out.note = "too few samples for ADF (" + std::to_string(kept.size()) + " < 50)";
    return out;
  }
  if (kept.size() > max_values) kept = kept.subspan(kept.size() - max_values);
  out.applied = true;
  try {
    const auto r = analysis::adf_test(kept);
    out.statistic = r.statistic;
    out.p_value = r.p_value;
    out.used_lag = r.used_lag;
    out.stationary = r.stationary_at(alpha);
  } catch (const std::invalid_argument& e) {
    // Degenerate regressions come from constant (or constantly stepping)
    // series; a constant latency series is stationary.
    const auto [lo, hi] = std::minmax_element(kept.begin(), kept.end());
    out.stationary = *lo == *hi;
    out.p_value = out.stationary ? 0.0 : 1.0;
    out.note = std::string("ADF degenerate: ") + e.what();
  }
  return out;
}

std::vector<TailPercentile> tail_percentiles(std::span<const double> values,
                                             std::span<const double> percents, double confidence) {
  std::vector<TailPercentile> out;
  if (values.empty()) return out;
  std::vector<double> fractions;
  for (double p : percents) fractions.push_back(p / 100.0);
  const auto estimates = analysis::percentiles(values, fractions, confidence);
  for (std::size_t i = 0; i < estimates.size(); ++i) {
    const auto& e = estimates[i];
    TailPercentile t;
    t.p = percents[i];
    t.value_ns = e.value;
    if (e.ci) {
      t.ci_low_ns = e.ci->low;
      t.ci_high_ns = e.ci->high;
    }
    out.push_back(t);
  }
  return out;
}

}  // namespace nabla::loadgen
