#include "nabla/memlat/recording.hh"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "nabla/common/json_null.hh"

namespace nabla::memlat {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "nabla-memlat-recording/1";

double number(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    throw std::invalid_argument(where + "." + key + ": required, a number");
  }
  return it->get<double>();
}

using common::or_null;

json imc_json(const CounterSample& s, double cas_ns) {
  return {{"rpq_occupancy", s.imc->rpq_occupancy},
          {"rpq_inserts", s.imc->rpq_inserts},
          {"clockticks", s.imc->clockticks},
          {"latency_ns", or_null(interval_imc_latency_ns(s, cas_ns))}};
}

ImcCounts parse_imc(const json& imc, const std::string& where) {
  ImcCounts c;
  c.rpq_occupancy = number(imc, "rpq_occupancy", where);
  c.rpq_inserts = number(imc, "rpq_inserts", where);
  c.clockticks = number(imc, "clockticks", where);
  if (c.rpq_occupancy < 0 || c.rpq_inserts < 0 || c.clockticks < 0) {
    throw std::invalid_argument(where + ": counts must be >= 0");
  }
  return c;
}

}  // namespace

json report_json(const Recording& r) {
  json samples = json::array();
  for (const CounterSample& s : r.samples) {
    const auto e = estimate_latency(s, r.constants);
    json sample = {{"interval_ns", s.interval_ns},
                   {"cycles", s.cycles},
                   {"ref_cycles", s.ref_cycles},
                   {"outstanding", s.outstanding},
                   {"requests", s.requests},
                   {"latency_ns", e ? json(e->latency_ns) : json(nullptr)},
                   {"frequency_ghz", e ? json(e->frequency_ghz) : json(nullptr)}};
    if (s.imc) sample["imc"] = imc_json(s, r.constants.cas_ns);
    samples.push_back(std::move(sample));
  }
  json out = {{"format", kFormat},
              {"microarch", r.microarch},
              {"target", r.target},
              {"constants",
               {{"cache_cycles", r.constants.cache_cycles},
                {"base_ghz", r.constants.base_ghz},
                {"outstanding_scale", r.constants.outstanding_scale},
                {"cas_ns", r.constants.cas_ns}}},
              {"samples", std::move(samples)},
              {"mean_latency_ns", or_null(mean_latency_ns(r.samples, r.constants))}};
  const bool any_imc = std::any_of(r.samples.begin(), r.samples.end(),
                                   [](const CounterSample& s) { return s.imc.has_value(); });
  if (any_imc || !r.imc_microarch.empty()) {
    out["imc_microarch"] = r.imc_microarch;
    out["mean_imc_latency_ns"] = or_null(mean_imc_latency_ns(r.samples, r.constants.cas_ns));
  }
  return out;
}

Recording parse_recording(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != kFormat) {
    throw std::invalid_argument(std::string("--replay: not a recording (format must be ") +
                                kFormat + ")");
  }
  Recording r;
  r.microarch = doc.value("microarch", "");
  r.target = doc.value("target", "");
  r.imc_microarch = doc.value("imc_microarch", "");
  const json& k = doc.at("constants");
  r.constants.cache_cycles = number(k, "cache_cycles", "constants");
  r.constants.base_ghz = number(k, "base_ghz", "constants");
  r.constants.outstanding_scale = number(k, "outstanding_scale", "constants");
  if (k.contains("cas_ns")) r.constants.cas_ns = number(k, "cas_ns", "constants");
  if (!(r.constants.base_ghz > 0)) throw std::invalid_argument("constants.base_ghz: must be > 0");
  if (r.constants.cas_ns < 0) throw std::invalid_argument("constants.cas_ns: must be >= 0");
  const json& samples = doc.at("samples");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string where = "samples[" + std::to_string(i) + "]";
    CounterSample s;
    s.interval_ns = static_cast<std::int64_t>(number(samples[i], "interval_ns", where));
    if (s.interval_ns <= 0) throw std::invalid_argument(where + ".interval_ns: must be > 0");
    s.cycles = number(samples[i], "cycles", where);
    s.ref_cycles = number(samples[i], "ref_cycles", where);
    s.outstanding = number(samples[i], "outstanding", where);
    s.requests = number(samples[i], "requests", where);
    if (s.cycles < 0 || s.ref_cycles < 0 || s.outstanding < 0 || s.requests < 0) {
      throw std::invalid_argument(where + ": counts must be >= 0");
    }
    if (samples[i].contains("imc")) s.imc = parse_imc(samples[i].at("imc"), where + ".imc");
    r.samples.push_back(s);
  }
  return r;
}

Recording load_recording(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--replay: cannot read '" + path + "'");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument("--replay: '" + path + "' is not JSON: " + e.what());
  }
  try {
    return parse_recording(doc);
  } catch (const json::exception& e) {
    throw std::invalid_argument("--replay: '" + path + "': " + e.what());
  }
}

void save_recording(const Recording& r, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("--record: cannot write '" + path + "'");
  // max_digits10 via dump: nlohmann writes doubles round-trip exactly.
  out << report_json(r).dump(2) << '\n';
  if (!out) throw std::runtime_error("--record: write to '" + path + "' failed");
}

}  // namespace nabla::memlat
