#include "runs_accel_memlat.hh"

#include <optional>
#include <string>
#include <vector>

#include "nabla/coordinator/text_table.hh"
#include "nabla/db/reads.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

// A NULL column as JSON null.
template <typename T>
json nullable(const std::optional<T>& column) {
  if (!column) return nullptr;
  return *column;
}

std::string shown(const json& v, int digits = 4) {
  return v.is_number() ? format_number(v.get<double>(), digits) : std::string("-");
}

json accel_result_json(const db::AccelResult& r) {
  return {{"kernel", nullable(r.kernel)},
          {"strategy", r.strategy},
          {"design", r.design},
          {"cycles", r.cycles},
          {"alpha", r.alpha},
          {"accel_factor", nullable(r.accel_factor)},
          {"offloads_per_s", r.offloads_per_s},
          {"o0", r.o0},
          {"L", r.l_cycles},
          {"Q", r.q_cycles},
          {"o1", r.o1},
          {"cycles_per_byte", nullable(r.cycles_per_byte)},
          {"beta", nullable(r.beta)},
          {"speedup", r.speedup},
          {"latency_reduction", nullable(r.latency_reduction)},
          {"min_bytes_speedup", nullable(r.min_bytes_speedup)},
          {"min_bytes_latency", nullable(r.min_bytes_latency)}};
}

json accel_projection_json(const db::AccelProjectionRow& row) {
  const db::AccelProjection& p = row.projection;
  return {{"link", p.link},
          {"type", row.type},
          {"gradient_run", nullable(p.gradient_run_id)},
          {"added_delay_ns", p.added_delay_ns},
          {"baseline_ns", nullable(p.baseline_ns)},
          {"predicted_ns", nullable(p.predicted_ns)},
          {"ci_low_ns", nullable(p.ci_low_ns)},
          {"ci_high_ns", nullable(p.ci_high_ns)},
          {"confidence", p.confidence},
          {"missing", nullable(p.missing)}};
}

json memlat_interval_json(const db::MemlatSample& m) {
  return {{"t_ns", m.t_ns},
          {"interval_ns", m.interval_ns},
          {"target", m.target},
          {"latency_ns", nullable(m.latency_ns)},
          {"frequency_ghz", nullable(m.frequency_ghz)},
          {"requests", m.requests},
          {"imc_latency_ns", nullable(m.imc_latency_ns)}};
}

// The mean of the values present; null when none is.
json mean_of(const json& rows, const char* key) {
  double sum = 0;
  int n = 0;
  for (const json& row : rows) {
    if (row[key].is_number()) {
      sum += row[key].get<double>();
      ++n;
    }
  }
  return n > 0 ? json(sum / n) : json(nullptr);
}

}  // namespace

json accel_section_json(db::Database& db, std::int64_t run_id) {
  json results = json::array(), projections = json::array();
  for (const db::AccelResult& r : db::run_accel_results(db, run_id)) {
    results.push_back(accel_result_json(r));
  }
  for (const db::AccelProjectionRow& p : db::run_accel_projections(db, run_id)) {
    projections.push_back(accel_projection_json(p));
  }
  if (results.empty() && projections.empty()) return nullptr;
  return {{"results", std::move(results)}, {"projections", std::move(projections)}};
}

json memlat_section_json(db::Database& db, std::int64_t run_id) {
  json intervals = json::array(), probe = json::array();
  for (const db::MemlatSample& m : db::run_memlat(db, run_id)) {
    intervals.push_back(memlat_interval_json(m));
  }
  for (const db::MemlatProbePoint& p : db::run_memlat_probe(db, run_id)) {
    probe.push_back({{"buffer_bytes", p.buffer_bytes},
                     {"load_threads", p.load_threads},
                     {"latency_ns", p.latency_ns},
                     {"huge_pages", p.huge_pages}});
  }
  if (intervals.empty() && probe.empty()) return nullptr;
  return {{"intervals", intervals},
          {"mean_latency_ns", mean_of(intervals, "latency_ns")},
          {"mean_imc_latency_ns", mean_of(intervals, "imc_latency_ns")},
          {"probe", std::move(probe)}};
}

void print_accel_section(const json& accel, std::ostream& out) {
  TextTable results({"kernel", "strategy", "design", "C", "alpha", "n/s", "speedup C/C_S",
                     "latency C/C_L", "pays from (speedup)", "pays from (latency)"});
  for (const json& r : accel["results"]) {
    results.add_row({r["kernel"].is_string() ? r["kernel"].get<std::string>() : "-",
                     r["strategy"].get<std::string>(), r["design"].get<std::string>(),
                     shown(r["cycles"]), shown(r["alpha"]), shown(r["offloads_per_s"], 6),
                     shown(r["speedup"]), shown(r["latency_reduction"]),
                     shown(r["min_bytes_speedup"], 12), shown(r["min_bytes_latency"], 12)});
  }
  out << '\n';
  results.print(out);
  if (accel["projections"].empty()) return;
  TextTable projections(
      {"link", "type", "added ns", "baseline ns", "predicted ns", "CI low", "CI high", "missing"});
  for (const json& p : accel["projections"]) {
    projections.add_row({p["link"].get<std::string>(), p["type"].get<std::string>(),
                         shown(p["added_delay_ns"], 10), shown(p["baseline_ns"], 10),
                         shown(p["predicted_ns"], 10), shown(p["ci_low_ns"], 10),
                         shown(p["ci_high_ns"], 10),
                         p["missing"].is_string() ? p["missing"].get<std::string>() : ""});
  }
  out << '\n';
  projections.print(out);
}

void print_memlat_section(const json& memlat, std::ostream& out) {
  if (!memlat["intervals"].empty()) {
    out << "\nmemory latency: " << memlat["intervals"].size() << " intervals, mean "
        << shown(memlat["mean_latency_ns"]) << " ns (cores), "
        << shown(memlat["mean_imc_latency_ns"]) << " ns (memory controllers)\n";
  }
  if (memlat["probe"].empty()) return;
  TextTable probe({"buffer bytes", "load threads", "latency ns", "huge pages"});
  for (const json& p : memlat["probe"]) {
    probe.add_row({std::to_string(p["buffer_bytes"].get<std::int64_t>()),
                   std::to_string(p["load_threads"].get<int>()), shown(p["latency_ns"]),
                   p["huge_pages"].get<bool>() ? "yes" : "no"});
  }
  out << '\n';
  probe.print(out);
}

}  // namespace nabla::coordinator
