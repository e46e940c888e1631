// The rows of a load run and their SQLite store; see record.hh.
#include "nabla/load/record.hh"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "nabla/common/clock.hh"
#include "nabla/common/units.hh"
#include "nabla/loadgen/timestamping.hh"

#ifndef NABLA_VERSION
#define NABLA_VERSION "0.1.0"
#endif

namespace nabla::load {
namespace {

using common::format_number;
using loadgen::ControllerResult;
using loadgen::TailPercentile;
using nlohmann::json;

std::string p_name(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", p);
  return buf;
}

db::TimestampSource db_source(loadgen::TimestampSource s) {
  switch (s) {
    case loadgen::TimestampSource::kHardware:
      return db::TimestampSource::kHardware;
    case loadgen::TimestampSource::kSoftware:
      return db::TimestampSource::kSoftware;
    case loadgen::TimestampSource::kUser:
      return db::TimestampSource::kUser;
  }
  return db::TimestampSource::kUser;
}

db::LoadCheck check_row(const std::string& name, std::optional<bool> passed) {
  db::LoadCheck l;
  l.name = name;
  l.outcome = !passed ? "not applied" : *passed ? "pass" : "fail";
  return l;
}

// The four conditions every round is held to, from the last round (the one
// the rate point ended with), and in how many rounds each failed.
void round_checks(const ControllerResult& r, const loadgen::ControllerConfig& c,
                  std::vector<db::LoadCheck>& out) {
  if (r.rounds.empty()) return;
  const loadgen::RoundRecord& last = r.rounds.back();
  const loadgen::CalibrationCheck& k = last.check;
  const std::string round = std::string(last.calibration ? "calibration" : "measurement") +
                            " round " + std::to_string(last.index);
  auto failed_in = [&](auto failed) {
    std::size_t n = 0;
    for (const auto& x : r.rounds) n += failed(x.check) ? 1 : 0;
    return "; failed in " + std::to_string(n) + " of " + std::to_string(r.rounds.size()) +
           " rounds";
  };
  const auto sent = static_cast<std::int64_t>(k.sent);

  db::LoadCheck rate = check_row("rate reached", k.rate_ok);
  if (k.offered_rps > 0) rate.statistic = (k.throughput_rps - k.offered_rps) / k.offered_rps;
  rate.threshold = c.limits.rate_tolerance;
  rate.samples = sent;
  rate.detail = "relative deviation of the achieved " + format_number(k.throughput_rps) +
                " rps from the offered " + format_number(k.offered_rps) + " rps, " + round +
                failed_in([](const auto& x) { return !x.rate_ok; });
  out.push_back(rate);

  db::LoadCheck ad = check_row("Anderson-Darling (send gaps exponential)",
                               k.ad.applied ? std::optional<bool>(k.ad.passed) : std::nullopt);
  if (k.ad.applied) {
    ad.statistic = k.ad.statistic;
    ad.threshold = k.ad.critical;
    ad.samples = static_cast<std::int64_t>(k.ad.gaps);
  }
  ad.detail = "A² against its critical value at " + format_number(c.limits.ad_level_percent) + "%" +
              (k.ad.note.empty() ? "" : "; " + k.ad.note) + ", " + round +
              failed_in([](const auto& x) { return x.ad.applied && !x.ad.passed; });
  out.push_back(ad);

  db::LoadCheck late = check_row("late sends", k.late_ok);
  late.statistic = k.late_fraction;
  late.threshold = c.limits.late_fraction_limit;
  late.samples = sent;
  late.detail = "fraction of sends late by the client's own timer (" + std::to_string(k.late) +
                "), " + round + failed_in([](const auto& x) { return !x.late_ok; });
  out.push_back(late);

  const loadgen::ClosedLoopCheck& cl = k.closed_loop;
  db::LoadCheck closed = check_row("not closed-loop (Little's law)", !cl.closed_loop);
  closed.statistic = cl.slots_needed;
  closed.threshold = c.limits.slot_occupancy_limit * cl.slots;
  closed.samples = static_cast<std::int64_t>(last.completed);
  closed.detail = "connection slots in use (rate × mean in-flight " +
                  common::format_latency_ns(cl.mean_in_flight_ns) + ") against " +
                  format_number(100 * c.limits.slot_occupancy_limit) +
                  "% of C×K = " + std::to_string(cl.slots) + ", " + round +
                  failed_in([](const auto& x) { return x.closed_loop.closed_loop; });
  out.push_back(closed);
}

// The checks of the measured series: iid, stationarity, CI width; not
// applied when no measurement round was used.
void series_checks(const ControllerResult& r, const loadgen::ControllerConfig& c,
                   std::vector<db::LoadCheck>& out) {
  const bool measured = r.samples > 0;
  const std::string none = "no measurement round was used";

  db::LoadCheck iid =
      check_row("iid (lag-1 Spearman)", measured && !r.stride_scan.steps.empty()
                                            ? std::optional<bool>(r.stride_scan.stride.has_value())
                                            : std::nullopt);
  iid.threshold = c.alpha;
  for (const auto& step : r.stride_scan.steps) {
    if (!measured || step.stride != r.stride) continue;
    iid.statistic = step.rho;
    iid.p_value = step.p_value;
    iid.samples = static_cast<std::int64_t>(step.kept);
  }
  iid.detail = !measured ? none
               : r.stride_scan.steps.empty()
                   ? "too few samples to test a stride"
                   : "rho at stride 1:" + std::to_string(r.stride) + " of " +
                         std::to_string(r.stride_scan.steps.size()) +
                         " strides tried; independent when p >= alpha";
  out.push_back(iid);

  const auto& st = r.stationarity;
  db::LoadCheck adf =
      check_row("stationary (ADF)",
                measured && st.applied ? std::optional<bool>(st.stationary) : std::nullopt);
  adf.threshold = c.alpha;
  if (measured && st.applied) {
    adf.statistic = st.statistic;
    adf.p_value = std::clamp(st.p_value, 0.0, 1.0);
    adf.samples = static_cast<std::int64_t>(std::min(r.kept, c.adf_max_values));
  }
  adf.detail = !measured
                   ? none
                   : "ADF statistic, lag " + std::to_string(st.used_lag) +
                         "; stationary when p < alpha" + (st.note.empty() ? "" : "; " + st.note);
  out.push_back(adf);

  const std::string target = p_name(c.percentiles.front());
  std::optional<double> width;
  if (measured && !r.percentiles.empty()) width = r.percentiles.front().ci_width_ns();
  db::LoadCheck ci =
      check_row("CI width (" + target + ")",
                measured ? std::optional<bool>(width && *width <= c.ci_width_ns) : std::nullopt);
  ci.statistic = width;
  ci.threshold = c.ci_width_ns;
  if (measured) ci.samples = static_cast<std::int64_t>(r.kept);
  ci.detail = !measured ? none
              : width   ? "order-statistic CI width (ns) at " + format_number(100 * c.confidence) +
                            "% confidence"
                      : "too few kept samples for a CI of " + target;
  out.push_back(ci);
}

}  // namespace

std::vector<db::LoadCheck> load_checks(const ControllerResult& r,
                                       const loadgen::ControllerConfig& c) {
  std::vector<db::LoadCheck> out;
  round_checks(r, c, out);
  series_checks(r, c, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].rate_rps = r.target_rps;
    out[i].position = static_cast<std::int64_t>(i);
  }
  return out;
}

std::vector<db::LoadAgent> load_agents(const ControllerResult& r) {
  std::vector<db::LoadAgent> rows;
  for (const loadgen::AgentSummary& a : r.agents) {
    db::LoadAgent row;
    row.rate_rps = r.target_rps;
    row.agent = a.agent;
    row.kind = loadgen::to_string(a.kind);
    row.share_rps = a.rate_per_s;
    row.rounds = a.rounds;
    row.rounds_failed = a.rounds_failed;
    row.sent = static_cast<std::int64_t>(a.sent);
    row.completed = static_cast<std::int64_t>(a.completed);
    row.late = static_cast<std::int64_t>(a.late);
    row.errors = static_cast<std::int64_t>(a.errors.total());
    row.samples = static_cast<std::int64_t>(a.samples);
    if (a.timer_lateness.count() > 0) row.timer_lateness_p99_ns = a.timer_lateness.percentile(0.99);
    row.reasons_json = json(a.last_reasons).dump();
    rows.push_back(std::move(row));
  }
  return rows;
}

LoadRunRecorder::LoadRunRecorder(const std::string& path, const json& config, std::uint64_t seed)
    : store_(db::Store::open(path, common::realtime_ns())) {
  db::RunStart start;
  start.kind = db::RunKind::kLoad;
  start.config_json = config.dump();
  start.tool_version = NABLA_VERSION;
  start.seed = static_cast<std::int64_t>(seed);
  start.started_ns = common::realtime_ns();
  run_id_ = store_.begin_run(start);
}

LoadRunRecorder::~LoadRunRecorder() {
  if (finished_) return;
  try {
    fail("interrupted before the measurement finished");
  } catch (const std::exception& e) {
    std::cerr << "nabla: could not mark load run " << run_id_ << " failed: " << e.what() << '\n';
  }
}

std::int64_t LoadRunRecorder::add_point(const ControllerResult& r,
                                        const loadgen::ControllerConfig& c) {
  const json reasons = r.reasons;
  auto add = [&](std::optional<std::int64_t> type_id, const char* metric,
                 const std::vector<TailPercentile>& ps, std::size_t samples) {
    for (const auto& p : ps) {
      db::TailResult t;
      t.run_id = run_id_;
      t.type_id = type_id;
      t.metric = metric;
      t.rate_rps = r.target_rps;
      t.throughput_rps = r.throughput_rps;
      t.percentile = p.p;
      if (samples > 0) t.value_ns = p.value_ns;
      t.ci_low_ns = p.ci_low_ns;
      t.ci_high_ns = p.ci_high_ns;
      t.confidence = c.confidence;
      t.ok = r.ok;
      t.reasons_json = reasons.dump();
      t.samples = static_cast<std::int64_t>(samples);
      t.late_sends = static_cast<std::int64_t>(r.late_sends);
      t.source = db_source(r.timestamp_source);
      store_.add_tail_result(t);
    }
  };
  std::size_t service_samples = 0;
  for (const auto& s : r.kept_samples) service_samples += s.service_time_ns >= 0;
  add(std::nullopt, "response", r.percentiles, r.kept);
  add(std::nullopt, "sojourn", r.sojourn_percentiles, r.kept);
  add(std::nullopt, "service", r.service_percentiles, service_samples);
  for (const auto& t : r.per_type) {
    add(store_.transaction_type_id(t.type), "response", t.percentiles, t.samples);
  }
  if (r.percentiles.empty()) {
    // Nothing measured (e.g. calibration never ran): still one row saying why.
    add(std::nullopt, "response", {TailPercentile{c.percentiles.front(), 0, {}, {}}}, 0);
  }
  // Samples: wall-clock send times (intended), as the schema asks. Each rate
  // point's samples hang off one 'baseline' phase (an unperturbed
  // measurement, no link) spanning its first to last intended send, so the
  // points of a sweep stay apart in the samples table.
  const std::int64_t offset = loadgen::clock_offset_ns();
  std::optional<std::int64_t> phase_id;
  if (!r.kept_samples.empty()) {
    db::Phase phase;
    phase.run_id = run_id_;
    phase.kind = db::PhaseKind::kBaseline;
    phase.started_ns = r.kept_samples.front().intended_ns + offset;
    phase.ended_ns = r.kept_samples.back().intended_ns + offset;
    phase_id = store_.add_phase(phase);
  }
  std::vector<std::int64_t> type_ids;
  for (const auto& name : r.type_names) type_ids.push_back(store_.transaction_type_id(name));
  auto writer = store_.sample_writer(run_id_);
  for (const auto& s : r.kept_samples) {
    db::Sample row;
    row.phase_id = phase_id;
    row.send_ns = s.intended_ns + offset;
    row.latency_ns = std::max<std::int64_t>(loadgen::response_ns(s), 0);  // the answer's series
    if (s.service_time_ns >= 0) row.service_ns = s.service_time_ns;
    row.type_id = s.type < type_ids.size() ? type_ids[s.type] : store_.transaction_type_id("?");
    row.source = db_source(s.source);
    writer.add(row);
  }
  writer.flush();
  for (db::LoadCheck check : load_checks(r, c)) {
    check.run_id = run_id_;
    store_.add_load_check(check);
  }
  for (db::LoadAgent agent : load_agents(r)) {
    agent.run_id = run_id_;
    store_.add_load_agent(agent);
  }
  return writer.rows_written();
}

void LoadRunRecorder::add_memlat_sample(const db::MemlatSample& row) {
  store_.add_memlat_sample(row);
}

void LoadRunRecorder::complete() {
  store_.finish_run(run_id_, db::RunStatus::kComplete, common::realtime_ns());
  finished_ = true;
}

void LoadRunRecorder::fail(const std::string& error) {
  finished_ = true;
  store_.finish_run(run_id_, db::RunStatus::kFailed, common::realtime_ns(), error);
}

}  // namespace nabla::load
