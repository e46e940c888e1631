// `nabla load` output (JSON, tables) and storage (runs, tail_results, samples).
#include "load_report.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>

#include "memlat_rows.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/load_command.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/loadgen/timestamping.hh"

#ifndef NABLA_VERSION
#define NABLA_VERSION "0.1.0"
#endif

namespace nabla::coordinator {
namespace {

using loadgen::ControllerResult;
using loadgen::TailPercentile;
using nlohmann::json;

using common::or_null;

// Whole nanoseconds, or null.
json rounded_ns(const std::optional<double>& v) {
  return or_null(v ? std::optional<long long>(std::llround(*v)) : std::nullopt);
}

json percentile_json(const std::vector<TailPercentile>& ps) {
  json a = json::array();
  for (const auto& p : ps) {
    a.push_back({{"p", p.p},
                 {"value_ns", std::llround(p.value_ns)},
                 {"ci_low_ns", rounded_ns(p.ci_low_ns)},
                 {"ci_high_ns", rounded_ns(p.ci_high_ns)}});
  }
  return a;
}

json errors_json(const loadgen::ErrorCounts& e) {
  return {{"connect", e.connect}, {"read", e.read},         {"write", e.write},
          {"timeout", e.timeout}, {"protocol", e.protocol}, {"server", e.server}};
}

// Quantiles of a lateness histogram (bucket midpoints), null before any send.
json quantiles_json(const analysis::LatencyHistogram& h) {
  if (h.count() == 0) return nullptr;
  return {{"p50", h.percentile(0.50)},
          {"p90", h.percentile(0.90)},
          {"p99", h.percentile(0.99)},
          {"p999", h.percentile(0.999)},
          {"max", h.max()}};
}

// How late sends left (total), split into the client's own timer lateness
// and the waits for a free connection slot (the service's).
json lateness_json(const loadgen::ControllerResult& r) {
  return {{"total", quantiles_json(r.lateness)},
          {"timer", quantiles_json(r.timer_lateness)},
          {"slot_wait", quantiles_json(r.slot_wait)},
          {"slot_waits_over_threshold", r.slot_late},
          {"timer_at_target_percentile",
           r.client_lateness_at_target_ns ? json(*r.client_lateness_at_target_ns) : json(nullptr)},
          {"timer_share_of_target_sojourn",
           r.client_lateness_share ? json(*r.client_lateness_share) : json(nullptr)}};
}

// gRPC calls answered with a non-OK grpc-status, by code ("14": 3).
json grpc_status_json(const loadgen::ErrorCounts& e) {
  json out = json::object();
  for (const auto& [code, n] : e.grpc_status) out[std::to_string(code)] = n;
  return out;
}

// The connections' setup, never inside a request's latency.
json setup_json(const loadgen::ConnectionSetup& s) {
  return {{"tls_handshakes", s.tls_handshakes},
          {"tls_offered", s.tls_offered},
          {"tls_resumed", s.tls_resumed},
          {"tls_handshake_ns", quantiles_json(s.tls_handshake)},
          {"start_shift_ns", s.start_shift_ns},
          {"first_error", s.first_error},
          {"busy_poll_refused", s.busy_poll_refused}};
}

json send_timer_json(const loadgen::SendTimer& t) {
  return {{"mode", t.self_calibrated ? "self-calibrated" : "fixed"},
          {"lead_ns", t.lead_ns},
          {"wakeup_lateness_ns", {{"p50", t.wakeup_p50_ns}, {"p99", t.wakeup_p99_ns}}},
          {"wakeups", t.wakeups},
          {"slice_ns", t.slice_ns},
          {"slice_granted", t.slice_granted},
          {"slice_note", t.slice_note},
          {"polled_fraction", t.polled_fraction()}};
}

json round_json(const loadgen::RoundRecord& r) {
  const auto& c = r.check;
  return {{"index", r.index},
          {"phase", r.calibration ? "calibration" : "measurement"},
          {"duration_ns", r.duration_ns},
          {"scheduled", r.scheduled},
          {"sent", r.sent},
          {"completed", r.completed},
          {"late", r.late},
          {"slot_late", c.slot_late},
          {"errors", errors_json(r.errors)},
          {"offered_rps", c.offered_rps},
          {"throughput_rps", c.throughput_rps},
          {"samples_used", r.samples_used},
          {"anderson_darling",
           {{"applied", c.ad.applied},
            {"passed", c.ad.passed},
            {"statistic", or_null(c.ad.statistic)},
            {"critical", c.ad.critical},
            {"gaps", c.ad.gaps},
            {"threshold_ns", c.ad.threshold_ns},
            {"note", c.ad.note}}},
          {"closed_loop",
           {{"slots", c.closed_loop.slots},
            {"mean_in_flight_ns", c.closed_loop.mean_in_flight_ns},
            {"slots_needed", c.closed_loop.slots_needed},
            {"capacity_rps", or_null(c.closed_loop.capacity_rps)},
            {"closed_loop", c.closed_loop.closed_loop}}},
          {"reasons", c.reasons}};
}

std::string ns_text(const json& v) {
  return v.is_number() ? common::format_latency_ns(v.get<double>()) : "-";
}

std::string ci_text(const json& p) {
  if (!p["ci_low_ns"].is_number()) return "no CI (too few samples)";
  return "[" + ns_text(p["ci_low_ns"]) + ", " + ns_text(p["ci_high_ns"]) + "]";
}

std::string p_name(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", p);
  return buf;
}

// The first `width` bytes of a reason, cut at a space, with "..." when cut
// (the full reasons are in --json and the database).
std::string shortened(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  auto cut = text.rfind(' ', width);
  if (cut == std::string::npos || cut < width / 2) cut = width;
  return text.substr(0, cut) + "...";
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

}  // namespace

namespace {

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

namespace {

json load_checks_json(const ControllerResult& r, const loadgen::ControllerConfig& c) {
  json out = json::array();
  for (const db::LoadCheck& l : load_checks(r, c)) {
    out.push_back({{"name", l.name},
                   {"outcome", l.outcome},
                   {"statistic", or_null(l.statistic)},
                   {"threshold", or_null(l.threshold)},
                   {"p_value", or_null(l.p_value)},
                   {"samples", or_null(l.samples)},
                   {"detail", l.detail}});
  }
  return out;
}

// Per agent, every round of the rate point (empty for one local engine).
json agents_json(const ControllerResult& r) {
  json out = json::array();
  for (const loadgen::AgentSummary& a : r.agents) {
    out.push_back({{"agent", a.agent},
                   {"kind", loadgen::to_string(a.kind)},
                   {"share_rps", a.rate_per_s},
                   {"rounds", a.rounds},
                   {"rounds_failed", a.rounds_failed},
                   {"sent", a.sent},
                   {"completed", a.completed},
                   {"late_sends", a.late},
                   {"errors", a.errors.total()},
                   {"samples", a.samples},
                   {"timer_lateness_p99_ns",
                    a.timer_lateness.count() > 0 ? json(a.timer_lateness.percentile(0.99))
                                                 : json()},
                   {"reasons", a.last_reasons}});
  }
  return out;
}

}  // namespace

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

json load_result_json(const ControllerResult& r, const loadgen::ControllerConfig& c,
                      const std::string& timestamp_note) {
  json stride_scan = json::array();
  for (const auto& s : r.stride_scan.steps) {
    stride_scan.push_back({{"stride", s.stride},
                           {"kept", s.kept},
                           {"rho", or_null(s.rho)},
                           {"p_value", or_null(s.p_value)}});
  }
  json rounds = json::array();
  for (const auto& round : r.rounds) rounds.push_back(round_json(round));
  json by_type = json::array();
  for (std::size_t t = 0; t < r.by_type.size() && t < r.type_names.size(); ++t) {
    by_type.push_back({{"type", r.type_names[t]},
                       {"completed", r.by_type[t].completed},
                       {"server_errors", r.by_type[t].server_errors}});
  }
  json per_type = json::array();
  for (const auto& t : r.per_type) {
    per_type.push_back({{"type", t.type},
                        {"samples", t.samples},
                        {"percentiles", percentile_json(t.percentiles)}});
  }
  return {{"verdict", r.ok ? "ok" : "n/a"},
          {"reasons", r.reasons},
          {"target_rps", r.target_rps},
          {"throughput_rps", r.throughput_rps},
          {"late_sends", r.late_sends},
          {"lateness_ns", lateness_json(r)},
          {"send_timer", send_timer_json(r.timer)},
          {"sent", r.sent},
          {"completed", r.completed},
          {"requests_by_type", by_type},
          {"errors", errors_json(r.errors)},
          {"grpc_status_errors", grpc_status_json(r.errors)},
          {"connection_setup", setup_json(r.setup)},
          {"timestamp_source", loadgen::to_string(r.timestamp_source)},
          {"timestamp_note", timestamp_note},
          {"target_percentile", c.percentiles.front()},
          {"ci_width_target_ns", c.ci_width_ns},
          {"confidence", c.confidence},
          {"percentiles", percentile_json(r.percentiles)},
          {"sojourn_percentiles", percentile_json(r.sojourn_percentiles)},
          {"service_percentiles", percentile_json(r.service_percentiles)},
          {"in_flight_percentiles", percentile_json(r.in_flight_percentiles)},
          {"per_type", per_type},
          {"samples", r.samples},
          {"kept", r.kept},
          {"stride", r.stride},
          {"stride_scan", stride_scan},
          {"stationarity",
           {{"applied", r.stationarity.applied},
            {"stationary", r.stationarity.stationary},
            {"adf_statistic", r.stationarity.statistic},
            {"p_value", r.stationarity.p_value},
            {"used_lag", r.stationarity.used_lag},
            {"note", r.stationarity.note}}},
          {"rounds", rounds},
          {"checks", load_checks_json(r, c)},
          {"agents", agents_json(r)},
          {"notes", r.notes},
          {"elapsed_s", static_cast<double>(r.elapsed_ns) / 1e9}};
}

// With --agent: one line per agent, what it sent against its share.
void print_agents(std::ostream& out, const json& p) {
  const auto it = p.find("agents");
  if (it == p.end() || it->empty()) return;
  TextTable t({"agent", "kind", "share rps", "sent", "answered", "late", "errors", "samples",
               "timer p99", "own checks"});
  for (const json& a : *it) {
    const std::string checks =
        a["rounds_failed"].get<int>() == 0
            ? "passed " + std::to_string(a["rounds"].get<int>()) + " rounds"
            : "failed " + std::to_string(a["rounds_failed"].get<int>()) + " of " +
                  std::to_string(a["rounds"].get<int>()) + " rounds";
    t.add_row({a["agent"].get<std::string>(), a["kind"].get<std::string>(),
               format_number(a["share_rps"].get<double>()), std::to_string(a["sent"].get<std::uint64_t>()),
               std::to_string(a["completed"].get<std::uint64_t>()),
               std::to_string(a["late_sends"].get<std::uint64_t>()),
               std::to_string(a["errors"].get<std::uint64_t>()),
               std::to_string(a["samples"].get<std::uint64_t>()),
               a["timer_lateness_p99_ns"].is_null()
                   ? std::string("-")
                   : common::format_latency_ns(a["timer_lateness_p99_ns"].get<double>()),
               checks});
  }
  out << "  agents (each checks its own sends; latency is compared only within one agent):\n";
  t.print(out);
}

void print_load_point(std::ostream& out, const json& p) {
  out << "rate " << format_number(p["target_rps"].get<double>()) << " rps: verdict "
      << p["verdict"].get<std::string>() << '\n';
  for (const auto& reason : p["reasons"]) out << "  reason: " << reason.get<std::string>() << '\n';
  const double sent = std::max(1.0, p["sent"].get<double>());
  out << "  throughput " << format_number(p["throughput_rps"].get<double>()) << " rps, late sends "
      << p["late_sends"] << " (" << format_number(100.0 * p["late_sends"].get<double>() / sent, 2)
      << "%)";
  if (const auto& timer = p["lateness_ns"]["timer"]; !timer.is_null()) {
    out << " [client timer lateness p99 " << common::format_latency_ns(timer["p99"].get<double>())
        << ", max " << common::format_latency_ns(timer["max"].get<double>()) << "]";
  }
  if (const auto& wait = p["lateness_ns"]["slot_wait"]; !wait.is_null()) {
    out << "; slot waits p99 " << common::format_latency_ns(wait["p99"].get<double>())
        << " (the service's, counted in its latency)";
  }
  out << ", errors "
      << p["errors"]["connect"].get<std::uint64_t>() + p["errors"]["read"].get<std::uint64_t>() +
             p["errors"]["write"].get<std::uint64_t>() +
             p["errors"]["timeout"].get<std::uint64_t>() +
             p["errors"]["protocol"].get<std::uint64_t>() +
             p["errors"]["server"].get<std::uint64_t>()
      << '\n';
  if (const auto& g = p.find("grpc_status_errors"); g != p.end() && !g->empty()) {
    out << "  gRPC status errors:";
    for (const auto& [code, n] : g->items()) out << " code " << code << " x" << n;
    out << '\n';
  }
  if (const auto& setup = p.find("connection_setup");
      setup != p.end() && (*setup)["tls_handshakes"].get<std::uint64_t>() > 0) {
    const json& h = (*setup)["tls_handshake_ns"];
    out << "  TLS handshakes " << (*setup)["tls_handshakes"] << " (" << (*setup)["tls_resumed"]
        << " resumed), p50 " << common::format_latency_ns(h["p50"].get<double>()) << ", max "
        << common::format_latency_ns(h["max"].get<double>())
        << " (each before any request on its connection)\n";
  }
  print_agents(out, p);
  out << "  timestamps " << p["timestamp_source"].get<std::string>() << " ("
      << p["timestamp_note"].get<std::string>() << ")\n";
  if (const auto& t = p["send_timer"]; !t.is_null()) {
    out << "  send timer " << t["mode"].get<std::string>() << ": lead "
        << common::format_latency_ns(t["lead_ns"].get<double>()) << " (wake-up lateness p50 "
        << common::format_latency_ns(t["wakeup_lateness_ns"]["p50"].get<double>()) << ", p99 "
        << common::format_latency_ns(t["wakeup_lateness_ns"]["p99"].get<double>()) << "), polling "
        << format_number(100.0 * t["polled_fraction"].get<double>(), 3)
        << "% of the load threads' time";
    if (const double slice = t.value("slice_ns", 0.0); slice > 0) {
      out << "; scheduler slice " << common::format_latency_ns(slice)
          << (t.value("slice_granted", false)
                  ? std::string(" (granted)")
                  : " (not granted: " + t.value("slice_note", std::string("?")) + ")");
    }
    out << '\n';
  }
  if (const auto it = p.find("cpu_latency"); it != p.end() && !it->is_null()) {
    out << "  CPU latency limit " << (*it)["limit_us"].get<int>() << " us "
        << ((*it)["held"].get<bool>() ? std::string("held")
                                      : "not held: " + (*it)["error"].get<std::string>())
        << '\n';
  }
  out << "  " << p["rounds"].size() << " rounds in "
      << format_number(p["elapsed_s"].get<double>(), 3) << " s; samples " << p["samples"]
      << ", kept " << p["kept"] << " (1:" << p["stride"]
      << "); ADF p=" << format_number(p["stationarity"]["p_value"].get<double>(), 3) << '\n';
  for (const auto& n : p["notes"]) out << "  note: " << n.get<std::string>() << '\n';
  TextTable t({"metric", "type", "percentile", "value", "CI"});
  auto rows = [&](const char* metric, const std::string& type, const json& ps) {
    for (const auto& x : ps) {
      t.add_row({metric, type, p_name(x["p"].get<double>()), ns_text(x["value_ns"]), ci_text(x)});
    }
  };
  rows("response", "all", p["percentiles"]);
  for (const auto& ty : p["per_type"])
    rows("response", ty["type"].get<std::string>(), ty["percentiles"]);
  rows("sojourn", "all", p["sojourn_percentiles"]);
  rows("service", "all", p["service_percentiles"]);
  rows("in flight", "all", p["in_flight_percentiles"]);
  out << '\n';
  t.print(out);
}

void print_load_sweep(std::ostream& out, const std::vector<json>& points) {
  TextTable t({"rate", "achieved", "p50", "p50 CI", "p99", "p99 CI", "verdict", "first reason"});
  for (const auto& p : points) {
    json p50 = nullptr, p99 = nullptr;
    for (const auto& x : p["percentiles"]) {
      if (x["p"].get<double>() == 50.0) p50 = x;
      if (x["p"].get<double>() == 99.0) p99 = x;
    }
    auto v = [&](const json& x) { return x.is_null() ? std::string("-") : ns_text(x["value_ns"]); };
    auto ci = [&](const json& x) { return x.is_null() ? std::string("-") : ci_text(x); };
    t.add_row({format_number(p["target_rps"].get<double>()),
               format_number(p["throughput_rps"].get<double>()), v(p50), ci(p50), v(p99), ci(p99),
               p["verdict"].get<std::string>(),
               p["reasons"].empty() ? "" : shortened(p["reasons"][0].get<std::string>(), 60)});
  }
  t.print(out);
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

void LoadRunRecorder::add_memlat(const std::vector<MemlatSampler::Interval>& intervals,
                                 const std::string& target,
                                 const memlat::EstimatorConstants& constants) {
  for (const MemlatSampler::Interval& i : intervals) {
    store_.add_memlat_sample(memlat_row(run_id_, i.t_ns, i.counters, constants, target));
  }
}

void LoadRunRecorder::complete() {
  store_.finish_run(run_id_, db::RunStatus::kComplete, common::realtime_ns());
  finished_ = true;
}

void LoadRunRecorder::fail(const std::string& error) {
  finished_ = true;
  store_.finish_run(run_id_, db::RunStatus::kFailed, common::realtime_ns(), error);
}

}  // namespace nabla::coordinator
