#include "load_memlat.hh"

#include <stdexcept>

#include "nabla/common/json_null.hh"
#include "nabla/common/units.hh"
#include "nabla/memlat/uncore.hh"

namespace nabla::coordinator {

std::variant<std::monostate, LoadMemlat, memlat::Unavailable> open_load_memlat(
    const LoadOptions& o) {
  if (!o.memlat) {
    if (o.memlat_pid != 0) throw std::invalid_argument("--memlat-pid: only with --memlat");
    if (o.memlat_interval != "1s") {
      throw std::invalid_argument("--memlat-interval: only with --memlat");
    }
    return std::monostate{};
  }
  if (o.memlat_pid < 0) throw std::invalid_argument("--memlat-pid: must be > 0");
  std::int64_t interval_ns = 0;
  try {
    interval_ns = common::parse_duration_ns(o.memlat_interval);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--memlat-interval: ") + e.what());
  }
  if (interval_ns <= 0) throw std::invalid_argument("--memlat-interval: must be > 0");
  auto detected = memlat::detect_event_table();
  if (auto* u = std::get_if<memlat::Unavailable>(&detected)) return *u;
  const memlat::EventTable& table = std::get<memlat::EventTable>(detected);
  const std::optional<double> base_ghz = memlat::detect_base_ghz();
  if (!base_ghz) {
    return memlat::Unavailable{"unknown base frequency (no cpufreq base_frequency)"};
  }
  memlat::Target target;
  if (o.memlat_pid > 0) {
    target.kind = memlat::Target::Kind::kPid;
    target.pid = o.memlat_pid;
  }
  auto opened = memlat::open_counters(table, target);
  if (auto* u = std::get_if<memlat::Unavailable>(&opened)) return *u;
  LoadMemlat setup{std::move(std::get<memlat::CounterSet>(opened)),
                   {table.default_cache_cycles, *base_ghz, table.outstanding_scale},
                   interval_ns,
                   o.memlat_pid > 0 ? "pid " + std::to_string(o.memlat_pid) : "system",
                   ""};
  const auto imc = memlat::count_imc(setup.counters);
  if (const auto* u = std::get_if<memlat::Unavailable>(&imc)) setup.imc_unavailable = u->reason;
  return setup;
}

nlohmann::json memlat_summary_json(const LoadMemlat& setup,
                                   const std::vector<MemlatSampler::Interval>& intervals) {
  std::vector<memlat::CounterSample> samples;
  for (const MemlatSampler::Interval& i : intervals) samples.push_back(i.counters);
  nlohmann::json out = {
      {"target", setup.target},
      {"interval_ns", setup.interval_ns},
      {"intervals", intervals.size()},
      {"mean_latency_ns", common::or_null(memlat::mean_latency_ns(samples, setup.constants))},
      {"mean_imc_latency_ns",
       common::or_null(memlat::mean_imc_latency_ns(samples, setup.constants.cas_ns))}};
  if (!setup.imc_unavailable.empty()) out["imc_note"] = setup.imc_unavailable;
  return out;
}

}  // namespace nabla::coordinator
