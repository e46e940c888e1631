// `nabla load` output (JSON, tables); the rows it stores are load/record.hh's.
#include "load_report.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>

#include "nabla/common/clock.hh"
#include "nabla/common/json_null.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/load_command.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/loadgen/timestamping.hh"

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
          {"busy_poll_refused", s.busy_poll_refused},
          {"server_closes", s.server_closes},
          {"resent", s.resent}};
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

}  // namespace

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
    out.push_back(
        {{"agent", a.agent},
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
          a.timer_lateness.count() > 0 ? json(a.timer_lateness.percentile(0.99)) : json()},
         {"reasons", a.last_reasons}});
  }
  return out;
}

}  // namespace

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
    const std::string checks = a["rounds_failed"].get<int>() == 0
                                   ? "passed " + std::to_string(a["rounds"].get<int>()) + " rounds"
                                   : "failed " + std::to_string(a["rounds_failed"].get<int>()) +
                                         " of " + std::to_string(a["rounds"].get<int>()) +
                                         " rounds";
    t.add_row({a["agent"].get<std::string>(), a["kind"].get<std::string>(),
               format_number(a["share_rps"].get<double>()),
               std::to_string(a["sent"].get<std::uint64_t>()),
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
  if (const auto& setup = p.find("connection_setup");
      setup != p.end() && setup->value("server_closes", std::uint64_t{0}) > 0) {
    out << "  connections closed by the server " << (*setup)["server_closes"]
        << " (Connection: close, GOAWAY or an idle close; each reopened at once), "
        << (*setup)["resent"]
        << " requests it had not processed sent again, timed from their intended send\n";
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
        << (it->value("requested", std::string()) == "auto" ? "(default) " : "")
        << ((*it)["held"].get<bool>()
                ? std::string((*it)["limit_us"].get<int>() == 0
                                  ? "held: every idle CPU of this machine polled, a server on it "
                                    "too (--cpu-latency-us off to measure without)"
                                  : "held")
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

}  // namespace nabla::coordinator
