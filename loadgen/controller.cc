#include "nabla/loadgen/controller.hh"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "nabla/common/units.hh"

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
  for (const auto& s : series) latency.push_back(static_cast<double>(response_ns(s)));
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

// The client's own lateness beside the sojourn from the intended send
// (controller_checks.hh): a note, never a reason, because the answer leaves
// it out (response_ns).
void note_client_lateness(const ControllerConfig& c, const analysis::LatencyHistogram& lateness,
                          ControllerResult& out) {
  if (out.sojourn_percentiles.empty()) return;
  const ClientLatenessCheck check = check_client_lateness(lateness, out.sojourn_percentiles.front(),
                                                          c.client_lateness_note_share);
  if (!check.applied) return;
  out.client_lateness_at_target_ns = check.at_target_ns;
  out.client_lateness_share = check.share;
  if (!check.ok) out.notes.push_back(check.reason);
}

TimestampSource dominant_source(const std::vector<Sample>& samples) {
  std::array<std::size_t, 3> n{};
  for (const auto& s : samples) ++n[static_cast<std::size_t>(s.source)];
  if (n[0] >= n[1] && n[0] >= n[2] && n[0] > 0) return TimestampSource::kHardware;
  if (n[1] >= n[2] && n[1] > 0) return TimestampSource::kSoftware;
  return TimestampSource::kUser;
}

// Service-time, sojourn, in-flight and per-type percentiles of the kept samples.
void describe_kept(const ControllerConfig& c, ControllerResult& out) {
  std::vector<double> sojourn;
  for (const auto& s : out.kept_samples) sojourn.push_back(static_cast<double>(s.latency_ns));
  out.sojourn_percentiles = tail_percentiles(sojourn, c.percentiles, c.confidence);
  std::vector<double> service;
  for (const auto& s : out.kept_samples) {
    if (s.service_time_ns >= 0) service.push_back(static_cast<double>(s.service_time_ns));
  }
  out.service_percentiles = tail_percentiles(service, c.percentiles, c.confidence);
  std::vector<double> in_flight;
  for (const auto& s : out.kept_samples) {
    in_flight.push_back(static_cast<double>(in_flight_ns(s)));
  }
  out.in_flight_percentiles = tail_percentiles(in_flight, c.percentiles, c.confidence);
  if (out.type_names.size() > 1) {
    for (std::size_t t = 0; t < out.type_names.size(); ++t) {
      std::vector<double> lat;
      for (const auto& s : out.kept_samples) {
        if (s.type == t) lat.push_back(static_cast<double>(response_ns(s)));
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

namespace {

// "about 12 s more at this rate", for `more` samples at `rate_rps`.
std::string time_for(std::size_t more, double rate_rps) {
  const double seconds = static_cast<double>(more) / rate_rps;
  return "about " + fixed(std::ceil(seconds), 0) + " s more at this rate";
}

// Why an evaluation did not converge: not iid, not stationary, CI too wide
// (each that applies), over `series`, the samples the evaluation saw.
void add_convergence_reasons(const ControllerConfig& c, const Evaluation& ev,
                             const std::vector<Sample>& series, std::vector<std::string>& reasons) {
  const std::size_t series_size = series.size();
  const double rate = c.engine.schedule.rate_per_s;
  if (!ev.iid && ev.scan.steps.empty()) {
    reasons.push_back("not iid: too few samples to test independence (" +
                      std::to_string(series_size) + " < " + std::to_string(c.min_kept) + ")");
  } else if (!ev.iid) {
    const auto& last = ev.scan.steps.back();
    std::string why =
        "not iid at the lowest sampling rate tried (1:" + std::to_string(last.stride) +
        ", Spearman rho=" + fixed(last.rho, 3) + ", p=" + fixed(last.p_value, 4) + ")" +
        whose_dependence(series, last.stride, c.alpha);
    if (!ev.scan.exhausted && last.stride * 2 <= c.max_stride) {
      const std::size_t need = c.min_kept * last.stride * 2;
      why += "; testing 1:" + std::to_string(last.stride * 2) + " needs " + std::to_string(need) +
             " samples, " + time_for(need > series_size ? need - series_size : 0, rate);
    }
    reasons.push_back(why);
  }
  if (ev.stationarity.applied && !ev.stationarity.stationary) {
    reasons.push_back("not stationary (ADF statistic " + fixed(ev.stationarity.statistic, 2) +
                      ", p=" + fixed(ev.stationarity.p_value, 3) + ")");
  } else if (!ev.stationarity.applied) {
    reasons.push_back("not stationary: " + ev.stationarity.note);
  }
  const std::string target =
      "p" + fixed(c.percentiles.front(),
                  c.percentiles.front() == std::floor(c.percentiles.front()) ? 0 : 2);
  if (!ev.target_width_ns) {
    const std::size_t need = min_samples_for_ci(c.percentiles.front(), c.confidence);
    const std::size_t kept = ev.kept_index.size();
    reasons.push_back("CI too wide: too few samples (" + std::to_string(kept) + ") for a " +
                      fixed(100 * c.confidence, 0) + "% CI of " + target + " (" +
                      std::to_string(need) + " needed at 1:" + std::to_string(ev.stride) + ", " +
                      time_for((need > kept ? need - kept : 0) * ev.stride, rate) + ")");
  } else if (*ev.target_width_ns > c.ci_width_ns) {
    reasons.push_back("CI too wide (" + target + " CI width " +
                      common::format_latency_ns(*ev.target_width_ns) + " reached, " +
                      common::format_latency_ns(c.ci_width_ns) + " asked)");
  }
}

// One run of the controller: 1. calibration rounds until one passes its
// checks, 2. measurement rounds, 3. an evaluation of the series after each,
// until it converges or cannot, or the budget is spent.
class ControllerRun {
 public:
  ControllerRun(const ControllerConfig& c, const MonotonicClock& clock,
                const ProgressCallback& progress)
      : c_(c),
        clock_(clock),
        progress_(progress),
        t0_(clock()),
        deadline_(t0_ + c.max_duration_ns),
        seed_(c.engine.seed) {
    out_.target_rps = c.engine.schedule.rate_per_s;
  }

  ControllerResult run() {
    if (!calibrate()) return uncalibrated();
    while (measured_ < c_.max_rounds) {
      if (!measure_round()) break;
    }
    if (measured_ >= c_.max_rounds && !ev_.converged) stop_.push_back("max rounds reached");
    return conclude();
  }

 private:
  // Runs one round of `duration_ns` sending time; records its counts.
  EngineResult run_round(int64_t duration_ns, bool calibration) {
    EngineConfig e = c_.engine;
    e.max_requests = 0;
    e.duration_ns = duration_ns;
    e.record_samples = true;
    e.seed = seed_++;  // a fresh, reproducible schedule per round
    const int64_t start = clock_() + c_.round_lead_ns;
    EngineResult r = run_engine(e, start);
    if (out_.type_names.empty()) out_.type_names = r.type_names;
    RoundRecord rec;
    rec.index = static_cast<int>(out_.rounds.size());
    rec.calibration = calibration;
    rec.duration_ns = duration_ns;
    rec.scheduled = r.scheduled;
    rec.sent = r.sent;
    rec.completed = r.completed;
    rec.late = r.late;
    rec.errors = r.errors;
    rec.check = check_calibration(r, c_.engine, c_.limits);
    out_.sent += r.sent;
    out_.completed += r.completed;
    add(out_.by_type, r.by_type);
    out_.late_sends += r.late;
    out_.lateness.merge(r.lateness);
    out_.timer_lateness.merge(r.timer_lateness);
    out_.slot_wait.merge(r.slot_wait);
    out_.slot_late += r.slot_late;
    out_.timer.add(r.timer);
    out_.setup.add(r.setup);
    out_.errors.add(r.errors);
    // Drop the warm-up: queues fill from empty on fresh connections.
    // (A schedule that waited for its connections' setup starts later.)
    const int64_t first = start + r.setup.start_shift_ns;
    std::erase_if(r.samples,
                  [&](const Sample& s) { return s.intended_ns < first + c_.round_warmup_ns; });
    out_.rounds.push_back(std::move(rec));
    return r;
  }

  // Sending time still available, leaving room for the lead and the drain.
  int64_t remaining() const { return deadline_ - clock_() - c_.round_lead_ns - c_.round_lead_ns; }

  // True once a calibration round passed its checks.
  bool calibrate() {
    // Calibration may take at most a fifth of the budget per attempt (but
    // 200 ms at least), so that a short max_duration still leaves room to measure.
    const int64_t calibration_ns =
        std::min(c_.calibration_ns, std::max<int64_t>(200'000'000, c_.max_duration_ns / 5));
    for (int a = 0; a < c_.calibration_attempts; ++a) {
      const int64_t d = std::min(calibration_ns, remaining());
      if (d < std::min<int64_t>(calibration_ns, 100'000'000)) break;
      EngineResult r = run_round(d, true);
      const auto& check = out_.rounds.back().check;
      out_.throughput_rps = check.throughput_rps;
      last_calibration_samples_ = std::move(r.samples);
      if (progress_)
        progress_({"calibration", out_.rounds.back().index, check.throughput_rps, 0, 0, {}});
      if (check.passed()) return true;
      if (check.closed_loop.closed_loop) break;  // structural: retrying cannot help
    }
    return false;
  }

  ControllerResult uncalibrated() {
    if (out_.rounds.empty()) {
      out_.reasons.push_back("max-duration too short for a calibration round");
    } else {
      out_.reasons = out_.rounds.back().check.reasons;
      out_.notes.push_back(
          "calibration failed: no measurement; percentiles are from the last "
          "calibration round, every sample, not conclusive");
    }
    show_calibration_samples();
    out_.timestamp_source = dominant_source(out_.kept_samples);
    describe_kept(c_, out_);
    out_.elapsed_ns = clock_() - t0_;
    return std::move(out_);
  }

  // The last calibration round's samples, every one, as the result's.
  void show_calibration_samples() {
    std::vector<double> lat;
    for (const auto& s : last_calibration_samples_) {
      lat.push_back(static_cast<double>(response_ns(s)));
    }
    out_.percentiles = tail_percentiles(lat, c_.percentiles, c_.confidence);
    out_.samples = out_.kept = lat.size();
    out_.kept_samples = std::move(last_calibration_samples_);
  }

  // One measurement round and the evaluation of the series after it; false
  // when measuring ends.
  bool measure_round() {
    const double want = static_cast<double>(c_.samples_per_round) *
                        static_cast<double>(evaluated_ ? ev_.stride : 1) / out_.target_rps * 1e9;
    int64_t d = std::clamp<int64_t>(static_cast<int64_t>(want), c_.min_round_ns, c_.max_round_ns);
    d = std::min(d, remaining());
    if (d < c_.min_round_ns / 2) {
      stop_.push_back("max-duration reached");
      return false;
    }
    EngineResult r = run_round(d, false);
    ++measured_;
    auto& rec = out_.rounds.back();
    if (!rec.check.passed()) return drop_round(rec);
    failed_in_a_row_ = 0;
    used_timer_lateness_.merge(r.timer_lateness);
    rec.samples_used = r.samples.size();
    used_completed_ += r.samples.size();
    // The round's samples exclude its warm-up, so its span does too.
    used_span_ns_ += std::max<int64_t>(d - c_.round_warmup_ns, 1);
    series_.insert(series_.end(), r.samples.begin(), r.samples.end());
    ev_ = evaluate(c_, series_);
    evaluated_ = true;
    if (progress_) {
      progress_({"measurement", rec.index, rec.check.throughput_rps, series_.size(),
                 ev_.kept_index.size(), ev_.target_width_ns});
    }
    if (ev_.converged) return false;
    return ev_.iid || !ev_.scan.exhausted;  // more samples only strengthen the test
  }

  // A round that failed its checks adds nothing to the series; the second
  // in a row ends measuring with its reasons.
  bool drop_round(const RoundRecord& rec) {
    out_.notes.push_back("round " + std::to_string(rec.index) +
                         " dropped: " + rec.check.reasons.front());
    if (progress_) {  // every round reports, dropped or not
      progress_({"measurement", rec.index, rec.check.throughput_rps, series_.size(),
                 evaluated_ ? ev_.kept_index.size() : 0,
                 evaluated_ ? ev_.target_width_ns : std::nullopt});
    }
    if (++failed_in_a_row_ >= 2) {
      out_.reasons = rec.check.reasons;
      return false;
    }
    return true;
  }

  ControllerResult conclude() {
    out_.samples = series_.size();
    if (used_span_ns_ > 0)
      out_.throughput_rps = static_cast<double>(used_completed_) * 1e9 / used_span_ns_;
    if (evaluated_) {
      out_.stride_scan = ev_.scan;
      out_.stride = ev_.stride;
      out_.stationarity = ev_.stationarity;
      out_.percentiles = ev_.percentiles;
      for (std::size_t i : ev_.kept_index) out_.kept_samples.push_back(series_[i]);
      out_.kept = out_.kept_samples.size();
    }
    if (!evaluated_) {
      // No measurement round was used (budget gone, or rounds dropped): show
      // what calibration measured, flagged as such.
      if (out_.reasons.empty()) {
        out_.reasons.push_back("no measurement round completed (" +
                               (stop_.empty() ? std::string("stopped") : stop_.front()) + ")");
      }
      out_.notes.push_back(
          "percentiles are from the last calibration round, every sample, not conclusive");
      show_calibration_samples();
    } else if (out_.reasons.empty() && !ev_.converged) {
      add_convergence_reasons(c_, ev_, series_, out_.reasons);
      for (const auto& s : stop_) out_.notes.push_back(s);
    }
    out_.ok = out_.reasons.empty() && evaluated_ && ev_.converged;
    describe_kept(c_, out_);
    if (evaluated_) note_client_lateness(c_, used_timer_lateness_, out_);
    out_.timestamp_source = dominant_source(out_.kept_samples);
    out_.elapsed_ns = clock_() - t0_;
    return std::move(out_);
  }

  const ControllerConfig& c_;
  const MonotonicClock& clock_;
  const ProgressCallback& progress_;
  const int64_t t0_;
  const int64_t deadline_;
  uint64_t seed_;
  ControllerResult out_;
  std::vector<Sample> last_calibration_samples_;
  // The measurement so far: the rounds used, joined into one series.
  std::vector<Sample> series_;
  Evaluation ev_;
  bool evaluated_ = false;
  int failed_in_a_row_ = 0;
  int measured_ = 0;
  uint64_t used_completed_ = 0;
  analysis::LatencyHistogram used_timer_lateness_;
  int64_t used_span_ns_ = 0;
  std::vector<std::string> stop_;  // why measuring stopped before converging
};

}  // namespace

ControllerResult run_controller(const ControllerConfig& c, const MonotonicClock& clock,
                                const ProgressCallback& progress) {
  validate(c);
  return ControllerRun(c, clock, progress).run();
}

}  // namespace nabla::loadgen
