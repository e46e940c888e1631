#include "nabla/loadgen/controller.hh"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace nabla::loadgen {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The statistics of one evaluation of the series collected so far.
struct Evaluation {
  StrideChoice scan;
  std::size_t stride = 1;
  std::vector<std::size_t> kept_index;  // into the series
  StationarityCheck stationarity;
  std::vector<TailPercentile> percentiles;
  std::optional<double> target_width_ns;
  bool iid = false;
  bool converged = false;
};

Evaluation evaluate(const ControllerConfig& c, const std::vector<Sample>& series) {
  Evaluation e;
  std::vector<double> latency;
  latency.reserve(series.size());
  for (const auto& s : series) latency.push_back(static_cast<double>(s.latency_ns));
  e.scan = choose_stride(latency, c.alpha, c.max_stride, c.min_kept);
  e.iid = e.scan.stride.has_value();
  // Without a passing stride the numbers shown use the largest stride tried:
  // the least dependent series available.
  e.stride =
      e.scan.stride ? *e.scan.stride : (e.scan.steps.empty() ? 1 : e.scan.steps.back().stride);
  const auto kept = keep_every(latency, e.stride);
  for (std::size_t i = 0; i < series.size(); i += e.stride) e.kept_index.push_back(i);
  e.stationarity = check_stationarity(kept, c.alpha, c.adf_max_values);
  e.percentiles = tail_percentiles(kept, c.percentiles, c.confidence);
  if (!e.percentiles.empty()) e.target_width_ns = e.percentiles.front().ci_width_ns();
  e.converged = e.iid && e.stationarity.applied && e.stationarity.stationary && e.target_width_ns &&
                *e.target_width_ns <= c.ci_width_ns;
  return e;
}

// The verdict's view of the client's own lateness (controller_checks.hh).
void judge_client_lateness(const ControllerConfig& c, const analysis::LatencyHistogram& lateness,
                           ControllerResult& out) {
  const ClientLatenessCheck check =
      check_client_lateness(lateness, out.percentiles.front(), c.max_client_lateness_share);
  if (!check.applied) return;
  out.client_lateness_at_target_ns = check.at_target_ns;
  out.client_lateness_share = check.share;
  if (!check.ok) out.reasons.push_back(check.reason);
}

TimestampSource dominant_source(const std::vector<Sample>& samples) {
  std::array<std::size_t, 3> n{};
  for (const auto& s : samples) ++n[static_cast<std::size_t>(s.source)];
  if (n[0] >= n[1] && n[0] >= n[2] && n[0] > 0) return TimestampSource::kHardware;
  if (n[1] >= n[2] && n[1] > 0) return TimestampSource::kSoftware;
  return TimestampSource::kUser;
}

// Service-time, in-flight and per-type percentiles of the kept samples.
void describe_kept(const ControllerConfig& c, ControllerResult& out) {
  std::vector<double> service;
  for (const auto& s : out.kept_samples) {
    if (s.service_time_ns >= 0) service.push_back(static_cast<double>(s.service_time_ns));
  }
  out.service_percentiles = tail_percentiles(service, c.percentiles, c.confidence);
  std::vector<double> in_flight;
  for (const auto& s : out.kept_samples) {
    in_flight.push_back(static_cast<double>(s.latency_ns - std::max<int64_t>(0, s.lateness_ns)));
  }
  out.in_flight_percentiles = tail_percentiles(in_flight, c.percentiles, c.confidence);
  if (out.type_names.size() > 1) {
    for (std::size_t t = 0; t < out.type_names.size(); ++t) {
      std::vector<double> lat;
      for (const auto& s : out.kept_samples) {
        if (s.type == t) lat.push_back(static_cast<double>(s.latency_ns));
      }
      out.per_type.push_back(
          {out.type_names[t], lat.size(), tail_percentiles(lat, c.percentiles, c.confidence)});
    }
  }
}

}  // namespace

void validate(const ControllerConfig& c) {
  if (c.percentiles.empty()) throw std::invalid_argument("controller: no percentile given");
  for (double p : c.percentiles) {
    if (!(p > 0 && p < 100)) {
      throw std::invalid_argument("percentile must be in (0, 100), got " + fixed(p, 3));
    }
  }
  if (!(c.confidence > 0 && c.confidence < 1)) {
    throw std::invalid_argument("confidence must be in (0, 1)");
  }
  if (!(c.ci_width_ns > 0)) throw std::invalid_argument("ci-width must be > 0");
  if (c.max_duration_ns <= 0) throw std::invalid_argument("max-duration must be > 0");
  if (c.max_rounds < 1) throw std::invalid_argument("max rounds must be >= 1");
  if (c.calibration_attempts < 1) throw std::invalid_argument("calibration attempts must be >= 1");
  if (c.max_stride < 1) throw std::invalid_argument("max stride must be >= 1");
  if (!(c.engine.schedule.rate_per_s > 0)) throw std::invalid_argument("rate must be > 0");
  validate(c.engine.schedule);
  if (c.engine.threads < 1 || c.engine.connections < c.engine.threads) {
    throw std::invalid_argument("connections must be >= threads >= 1");
  }
  if (c.engine.max_outstanding < 1) throw std::invalid_argument("outstanding must be >= 1");
}

ControllerResult run_controller(const ControllerConfig& c, const MonotonicClock& clock,
                                const ProgressCallback& progress) {
  validate(c);
  ControllerResult out;
  out.target_rps = c.engine.schedule.rate_per_s;
  const int64_t t0 = clock();
  const int64_t deadline = t0 + c.max_duration_ns;
  uint64_t seed = c.engine.seed;

  // Runs one round of `duration_ns` sending time; records its counts.
  auto run_round = [&](int64_t duration_ns, bool calibration) {
    EngineConfig e = c.engine;
    e.max_requests = 0;
    e.duration_ns = duration_ns;
    e.record_samples = true;
    e.seed = seed++;  // a fresh, reproducible schedule per round
    const int64_t start = clock() + c.round_lead_ns;
    EngineResult r = run_engine(e, start);
    if (out.type_names.empty()) out.type_names = r.type_names;
    RoundRecord rec;
    rec.index = static_cast<int>(out.rounds.size());
    rec.calibration = calibration;
    rec.duration_ns = duration_ns;
    rec.scheduled = r.scheduled;
    rec.sent = r.sent;
    rec.completed = r.completed;
    rec.late = r.late;
    rec.errors = r.errors;
    rec.check = check_calibration(r, c.engine, c.limits);
    out.sent += r.sent;
    out.completed += r.completed;
    add(out.by_type, r.by_type);
    out.late_sends += r.late;
    out.lateness.merge(r.lateness);
    out.timer_lateness.merge(r.timer_lateness);
    out.slot_wait.merge(r.slot_wait);
    out.slot_late += r.slot_late;
    out.timer.add(r.timer);
    out.errors.add(r.errors);
    // Drop the warm-up: queues fill from empty on fresh connections.
    std::erase_if(r.samples,
                  [&](const Sample& s) { return s.intended_ns < start + c.round_warmup_ns; });
    out.rounds.push_back(std::move(rec));
    return r;
  };
  // Sending time still available, leaving room for the lead and the drain.
  auto remaining = [&] { return deadline - clock() - c.round_lead_ns - c.round_lead_ns; };

  // ---- 1. calibration
  bool calibrated = false;
  std::vector<Sample> last_calibration_samples;
  // Calibration may take at most a fifth of the budget per attempt (but
  // 200 ms at least), so that a short max_duration still leaves room to measure.
  const int64_t calibration_ns =
      std::min(c.calibration_ns, std::max<int64_t>(200'000'000, c.max_duration_ns / 5));
  for (int a = 0; a < c.calibration_attempts; ++a) {
    const int64_t d = std::min(calibration_ns, remaining());
    if (d < std::min<int64_t>(calibration_ns, 100'000'000)) break;
    EngineResult r = run_round(d, true);
    const auto& check = out.rounds.back().check;
    out.throughput_rps = check.throughput_rps;
    last_calibration_samples = std::move(r.samples);
    if (progress)
      progress({"calibration", out.rounds.back().index, check.throughput_rps, 0, 0, {}});
    if (check.passed()) {
      calibrated = true;
      break;
    }
    if (check.closed_loop.closed_loop) break;  // structural: retrying cannot help
  }
  if (!calibrated) {
    if (out.rounds.empty()) {
      out.reasons.push_back("max-duration too short for a calibration round");
    } else {
      out.reasons = out.rounds.back().check.reasons;
      out.notes.push_back(
          "calibration failed: no measurement; percentiles are from the last "
          "calibration round, every sample, not conclusive");
    }
    std::vector<double> lat;
    for (const auto& s : last_calibration_samples) lat.push_back(static_cast<double>(s.latency_ns));
    out.percentiles = tail_percentiles(lat, c.percentiles, c.confidence);
    out.samples = out.kept = lat.size();
    out.timestamp_source = dominant_source(last_calibration_samples);
    out.kept_samples = std::move(last_calibration_samples);
    describe_kept(c, out);
    out.elapsed_ns = clock() - t0;
    return out;
  }

  // ---- 2./3. measurement rounds and evaluation
  std::vector<Sample> series;
  Evaluation ev;
  bool evaluated = false;
  int failed_in_a_row = 0;
  int measured = 0;
  uint64_t used_completed = 0;
  analysis::LatencyHistogram used_timer_lateness;
  int64_t used_span_ns = 0;
  std::vector<std::string> stop;
  while (measured < c.max_rounds) {
    const double want = static_cast<double>(c.samples_per_round) *
                        static_cast<double>(evaluated ? ev.stride : 1) / out.target_rps * 1e9;
    int64_t d = std::clamp<int64_t>(static_cast<int64_t>(want), c.min_round_ns, c.max_round_ns);
    d = std::min(d, remaining());
    if (d < c.min_round_ns / 2) {
      stop.push_back("max-duration reached");
      break;
    }
    EngineResult r = run_round(d, false);
    ++measured;
    auto& rec = out.rounds.back();
    if (!rec.check.passed()) {
      out.notes.push_back("round " + std::to_string(rec.index) +
                          " dropped: " + rec.check.reasons.front());
      if (progress) {  // every round reports, dropped or not
        progress({"measurement", rec.index, rec.check.throughput_rps, series.size(),
                  evaluated ? ev.kept_index.size() : 0,
                  evaluated ? ev.target_width_ns : std::nullopt});
      }
      if (++failed_in_a_row >= 2) {
        out.reasons = rec.check.reasons;
        break;
      }
      continue;
    }
    failed_in_a_row = 0;
    used_timer_lateness.merge(r.timer_lateness);
    rec.samples_used = r.samples.size();
    used_completed += r.samples.size();
    // The round's samples exclude its warm-up, so its span does too.
    used_span_ns += std::max<int64_t>(d - c.round_warmup_ns, 1);
    series.insert(series.end(), r.samples.begin(), r.samples.end());
    ev = evaluate(c, series);
    evaluated = true;
    if (progress) {
      progress({"measurement", rec.index, rec.check.throughput_rps, series.size(),
                ev.kept_index.size(), ev.target_width_ns});
    }
    if (ev.converged) break;
    if (!ev.iid && ev.scan.exhausted) break;  // more samples only strengthen the test
  }
  if (measured >= c.max_rounds && !ev.converged) stop.push_back("max rounds reached");

  out.samples = series.size();
  if (used_span_ns > 0)
    out.throughput_rps = static_cast<double>(used_completed) * 1e9 / used_span_ns;
  if (evaluated) {
    out.stride_scan = ev.scan;
    out.stride = ev.stride;
    out.stationarity = ev.stationarity;
    out.percentiles = ev.percentiles;
    for (std::size_t i : ev.kept_index) out.kept_samples.push_back(series[i]);
    out.kept = out.kept_samples.size();
  }
  if (!evaluated) {
    // No measurement round was used (budget gone, or rounds dropped): show
    // what calibration measured, flagged as such.
    if (out.reasons.empty()) {
      out.reasons.push_back("no measurement round completed (" +
                            (stop.empty() ? std::string("stopped") : stop.front()) + ")");
    }
    out.notes.push_back(
        "percentiles are from the last calibration round, every sample, not conclusive");
    std::vector<double> lat;
    for (const auto& s : last_calibration_samples) lat.push_back(static_cast<double>(s.latency_ns));
    out.percentiles = tail_percentiles(lat, c.percentiles, c.confidence);
    out.samples = out.kept = lat.size();
    out.kept_samples = std::move(last_calibration_samples);
  } else if (out.reasons.empty()) {
    if (!ev.converged) {
      if (!ev.iid && ev.scan.steps.empty()) {
        out.reasons.push_back("not iid: too few samples to test independence (" +
                              std::to_string(series.size()) + " < " + std::to_string(c.min_kept) +
                              ")");
      } else if (!ev.iid) {
        const auto& last = ev.scan.steps.back();
        out.reasons.push_back(
            "not iid at the lowest sampling rate tried (1:" + std::to_string(last.stride) +
            ", Spearman rho=" + fixed(last.rho, 3) + ", p=" + fixed(last.p_value, 4) + ")");
      }
      if (ev.stationarity.applied && !ev.stationarity.stationary) {
        out.reasons.push_back("not stationary (ADF statistic " +
                              fixed(ev.stationarity.statistic, 2) +
                              ", p=" + fixed(ev.stationarity.p_value, 3) + ")");
      } else if (!ev.stationarity.applied) {
        out.reasons.push_back("not stationary: " + ev.stationarity.note);
      }
      const std::string target =
          "p" + fixed(c.percentiles.front(),
                      c.percentiles.front() == std::floor(c.percentiles.front()) ? 0 : 2);
      if (!ev.target_width_ns) {
        out.reasons.push_back("CI too wide: too few samples (" +
                              std::to_string(ev.kept_index.size()) + ") for a " +
                              fixed(100 * c.confidence, 0) + "% CI of " + target);
      } else if (*ev.target_width_ns > c.ci_width_ns) {
        out.reasons.push_back("CI too wide (" + target + " CI width " +
                              format_latency_ns(*ev.target_width_ns) + " reached, " +
                              format_latency_ns(c.ci_width_ns) + " asked)");
      }
      for (const auto& s : stop) out.notes.push_back(s);
    }
  }
  if (evaluated && !out.percentiles.empty()) {
    judge_client_lateness(c, used_timer_lateness, out);
  }
  out.ok = out.reasons.empty() && evaluated && ev.converged;

  describe_kept(c, out);
  out.timestamp_source = dominant_source(out.kept_samples);
  out.elapsed_ns = clock() - t0;
  return out;
}

}  // namespace nabla::loadgen
