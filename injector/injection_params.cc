#include "nabla/injector/injection_params.hh"

#include <cmath>
#include <stdexcept>
#include <string>

#include "nabla/common/units.hh"

namespace nabla::injector {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw std::invalid_argument(field + ": " + why);
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

void require_object(const json& value, const std::string& field) {
  if (!value.is_object()) bad(field, "must be an object");
}

void reject_unknown(const json& object, const std::string& field,
                    std::initializer_list<const char*> known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) bad(field.empty() ? it.key() : field + "." + it.key(), "unknown field");
  }
}

int64_t duration(const json& value, const std::string& field, int64_t max_ns) {
  int64_t ns = 0;
  if (value.is_string()) {
    try {
      ns = common::parse_duration_ns(value.get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad(field, e.what());
    }
  } else if (value.is_number_integer()) {
    ns = value.get<int64_t>();
  } else {
    bad(field, "must be a duration string like \"20ms\" or integer nanoseconds");
  }
  if (ns < 0 || ns > max_ns) {
    bad(field, "must be within 0 .. " + common::format_duration_ns(max_ns));
  }
  return ns;
}

double probability(const json& value, const std::string& field) {
  double p = 0.0;
  if (value.is_string()) {
    try {
      p = common::parse_percent(value.get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad(field, e.what());
    }
  } else if (value.is_number()) {
    p = value.get<double>();
  } else {
    bad(field, "must be a number in [0, 1] or a percent string like \"5%\"");
  }
  if (!(p >= 0.0 && p <= 1.0)) bad(field, "must be within 0 .. 1");
  return p;
}

double number(const json& value, const std::string& field, double lo, double hi) {
  if (!value.is_number()) bad(field, "must be a number");
  const double x = value.get<double>();
  if (!(x >= lo && x <= hi)) {
    bad(field, "must be within " + std::to_string(lo) + " .. " + std::to_string(hi));
  }
  return x;
}

Waveform fault_wave(const json& fault, const std::string& field) {
  const json* w = member(fault, "wave");
  return w == nullptr ? Waveform::constant(1.0) : parse_waveform(*w, field + ".wave");
}

}  // namespace

Waveform parse_waveform(const json& value, const std::string& field) {
  if (value.is_string() || value.is_number_integer()) {
    return Waveform::constant(static_cast<double>(duration(value, field, kMaxDelayNs)));
  }
  require_object(value, field);
  reject_unknown(value, field, {"kind", "amplitude", "period", "duty", "phase", "cycles"});
  const json* kind = member(value, "kind");
  if (kind == nullptr || !kind->is_string()) bad(field + ".kind", "must be constant|square|off");
  const std::string k = kind->get<std::string>();
  const json* amp = member(value, "amplitude");
  const double amplitude =
      amp == nullptr ? 0.0 : static_cast<double>(duration(*amp, field + ".amplitude", kMaxDelayNs));
  if (k == "off") return Waveform::off();
  if (k == "constant") return Waveform::constant(amplitude);
  if (k != "square") bad(field + ".kind", "must be constant|square|off, got '" + k + "'");
  const json* period = member(value, "period");
  if (period == nullptr) bad(field + ".period", "required for a square wave");
  const int64_t period_ns = duration(*period, field + ".period", 3'600'000'000'000);
  if (period_ns < 1'000'000) bad(field + ".period", "must be at least 1ms");
  const json* duty = member(value, "duty");
  const double d = duty == nullptr ? 0.5 : number(*duty, field + ".duty", 0.0, 1.0);
  const json* phase = member(value, "phase");
  const int64_t phase_ns = phase == nullptr ? 0 : duration(*phase, field + ".phase", period_ns);
  const json* cycles = member(value, "cycles");
  int64_t c = 0;
  if (cycles != nullptr) {
    if (!cycles->is_number_integer() || cycles->get<int64_t>() < 0) {
      bad(field + ".cycles", "must be a non-negative integer (0 = forever)");
    }
    c = cycles->get<int64_t>();
  }
  return Waveform::square(amplitude, period_ns, d, phase_ns, c);
}

double parse_lease_s(const json& params) {
  const json* lease = member(params, "lease_s");
  if (lease == nullptr) return kDefaultLeaseS;
  if (!lease->is_number() || !(lease->get<double>() > 0.0) || lease->get<double>() > kMaxLeaseS) {
    bad("lease_s", "must be a number of seconds in (0, 3600]");
  }
  return lease->get<double>();
}

InjectionConfig parse_injection_config(const json& params, const InjectionConfig* existing,
                                       uint64_t default_seed) {
  require_object(params, "params");
  reject_unknown(params, "", {"id", "link", "direction", "delay", "faults", "lease_s", "seed"});
  InjectionConfig config;
  if (existing != nullptr) {
    config.link = existing->link;
    config.direction = existing->direction;
    config.seed = existing->seed;
    if (member(params, "link") != nullptr || member(params, "direction") != nullptr) {
      bad("link", "cannot be changed by inject.update; stop and start a new injection");
    }
  } else {
    const json* link = member(params, "link");
    if (link == nullptr || !link->is_string()) bad("link", "required, a link spec string");
    try {
      config.link = common::parse_link_spec(link->get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad("link", e.what());
    }
    if (const json* dir = member(params, "direction")) {
      if (!dir->is_string()) bad("direction", "must be out|in|fwd");
      try {
        config.direction = parse_direction(dir->get<std::string>());
      } catch (const std::invalid_argument&) {
        bad("direction", "must be out|in|fwd, got '" + dir->get<std::string>() + "'");
      }
    }
    config.seed = default_seed;
  }
  if (const json* seed = member(params, "seed")) {
    // JSON parsers store small non-negative integers as signed or unsigned.
    if (seed->is_number_unsigned()) {
      config.seed = seed->get<uint64_t>();
    } else if (seed->is_number_integer() && seed->get<int64_t>() >= 0) {
      config.seed = static_cast<uint64_t>(seed->get<int64_t>());
    } else {
      bad("seed", "must be a non-negative integer");
    }
  }
  if (const json* delay = member(params, "delay")) config.delay = parse_waveform(*delay, "delay");
  parse_lease_s(params);
  const json* faults = member(params, "faults");
  if (faults == nullptr) return config;
  require_object(*faults, "faults");
  reject_unknown(*faults, "faults",
                 {"jitter", "loss", "partition", "reorder", "corrupt", "duplicate", "rate_limit"});
  if (const json* f = member(*faults, "jitter")) {
    const std::string field = "faults.jitter";
    require_object(*f, field);
    reject_unknown(*f, field, {"amount", "distribution", "correlation", "wave"});
    JitterSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* amount = member(*f, "amount");
    if (amount == nullptr) bad(field + ".amount", "required");
    spec.jitter_ns = duration(*amount, field + ".amount", kMaxDelayNs);
    const json* dist = member(*f, "distribution");
    const std::string d =
        dist == nullptr || !dist->is_string() ? "uniform" : dist->get<std::string>();
    if (d == "uniform") {
      spec.distribution = JitterDistribution::kUniform;
    } else if (d == "normal") {
      spec.distribution = JitterDistribution::kNormal;
    } else if (d == "pareto") {
      spec.distribution = JitterDistribution::kPareto;
    } else if (d == "paretonormal") {
      spec.distribution = JitterDistribution::kParetoNormal;
    } else {
      bad(field + ".distribution", "must be uniform|normal|pareto|paretonormal, got '" + d + "'");
    }
    if (const json* c = member(*f, "correlation")) {
      spec.correlation = number(*c, field + ".correlation", 0.0, 0.999);
    }
    config.jitter = spec;
  }
  if (const json* f = member(*faults, "loss")) {
    const std::string field = "faults.loss";
    require_object(*f, field);
    reject_unknown(*f, field, {"model", "p", "r", "one_minus_h", "one_minus_k", "wave"});
    LossSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* model = member(*f, "model");
    const std::string m =
        model == nullptr || !model->is_string() ? "bernoulli" : model->get<std::string>();
    const json* p = member(*f, "p");
    if (p == nullptr) bad(field + ".p", "required");
    spec.p = probability(*p, field + ".p");
    if (m == "bernoulli") {
      spec.model = LossModel::kBernoulli;
    } else if (m == "gilbert_elliott") {
      spec.model = LossModel::kGilbertElliott;
      const json* r = member(*f, "r");
      if (r == nullptr) bad(field + ".r", "required for gilbert_elliott");
      spec.r = probability(*r, field + ".r");
      if (const json* h = member(*f, "one_minus_h")) {
        spec.one_minus_h = probability(*h, field + ".one_minus_h");
      }
      if (const json* k = member(*f, "one_minus_k")) {
        spec.one_minus_k = probability(*k, field + ".one_minus_k");
      }
    } else {
      bad(field + ".model", "must be bernoulli|gilbert_elliott, got '" + m + "'");
    }
    config.loss = spec;
  }
  if (const json* f = member(*faults, "partition")) {
    require_object(*f, "faults.partition");
    reject_unknown(*f, "faults.partition", {"wave"});
    config.partition = Partition{fault_wave(*f, "faults.partition")};
  }
  if (const json* f = member(*faults, "reorder")) {
    const std::string field = "faults.reorder";
    require_object(*f, field);
    reject_unknown(*f, field, {"probability", "gap", "wave"});
    ReorderSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* p = member(*f, "probability");
    if (p == nullptr) bad(field + ".probability", "required");
    spec.probability = probability(*p, field + ".probability");
    if (const json* gap = member(*f, "gap")) {
      if (!gap->is_number_integer() || gap->get<int64_t>() < 0 || gap->get<int64_t>() > 1'000'000) {
        bad(field + ".gap", "must be an integer in 0 .. 1000000");
      }
      spec.gap = gap->get<int64_t>();
    }
    config.reorder = spec;
  }
  if (const json* f = member(*faults, "corrupt")) {
    const std::string field = "faults.corrupt";
    require_object(*f, field);
    reject_unknown(*f, field, {"probability", "fix_checksum", "wave"});
    CorruptSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* p = member(*f, "probability");
    if (p == nullptr) bad(field + ".probability", "required");
    spec.probability = probability(*p, field + ".probability");
    if (const json* fix = member(*f, "fix_checksum")) {
      if (!fix->is_boolean()) bad(field + ".fix_checksum", "must be true or false");
      spec.fix_checksum = fix->get<bool>();
    }
    config.corrupt = spec;
  }
  if (const json* f = member(*faults, "duplicate")) {
    const std::string field = "faults.duplicate";
    require_object(*f, field);
    reject_unknown(*f, field, {"probability", "wave"});
    DuplicateSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* p = member(*f, "probability");
    if (p == nullptr) bad(field + ".probability", "required");
    spec.probability = probability(*p, field + ".probability");
    config.duplicate = spec;
  }
  if (const json* f = member(*faults, "rate_limit")) {
    const std::string field = "faults.rate_limit";
    require_object(*f, field);
    reject_unknown(*f, field, {"rate_bps", "burst_bytes", "wave"});
    RateLimitSpec spec;
    spec.wave = fault_wave(*f, field);
    const json* rate = member(*f, "rate_bps");
    if (rate == nullptr) bad(field + ".rate_bps", "required");
    spec.rate_bps = number(*rate, field + ".rate_bps", 1000.0, 1e12);
    if (const json* burst = member(*f, "burst_bytes")) {
      spec.burst_bytes = static_cast<int64_t>(number(*burst, field + ".burst_bytes", 0.0, 1e9));
    }
    config.rate_limit = spec;
  }
  return config;
}

json to_json(const DelaySummary& s) {
  return json{{"count", s.count}, {"mean", s.mean_ns}, {"std", s.std_ns}, {"p50", s.p50_ns},
              {"p99", s.p99_ns},  {"min", s.min_ns},   {"max", s.max_ns}};
}

json to_json(const Waveform& w) {
  switch (w.kind) {
    case WaveKind::kOff:
      return json{{"kind", "off"}};
    case WaveKind::kConstant:
      return json{{"kind", "constant"}, {"amplitude_ns", w.amplitude}};
    case WaveKind::kSquare:
      break;
  }
  return json{{"kind", "square"}, {"amplitude_ns", w.amplitude}, {"period_ns", w.period_ns},
              {"duty", w.duty},   {"phase_ns", w.phase_ns},      {"cycles", w.cycles}};
}

json stats_json(const InjectionAccounting& acc, bool include_cycles) {
  const PacketCounters& c = acc.counters();
  json out{{"packets", c.packets},
           {"bytes", c.bytes},
           {"delayed", c.delayed},
           {"dropped", c.dropped},
           {"corrupted", c.corrupted},
           {"duplicated", c.duplicated},
           {"reordered", c.reordered},
           {"queue_full", c.queue_full},
           {"enobufs", c.enobufs},
           {"verdict_errors", c.verdict_errors},
           {"actual_delay_ns", to_json(acc.overall().summary())},
           {"halves",
            {{"high", to_json(acc.half(WaveHalf::kHigh).summary())},
             {"low", to_json(acc.half(WaveHalf::kLow).summary())}}}};
  if (include_cycles) {
    json cycles = json::array();
    for (const auto& [cycle, halves] : acc.cycles()) {
      cycles.push_back({{"cycle", cycle},
                        {"high", to_json(halves[1].summary())},
                        {"low", to_json(halves[0].summary())}});
    }
    out["cycles"] = std::move(cycles);
  }
  return out;
}

}  // namespace nabla::injector
