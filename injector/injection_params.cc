#include "nabla/injector/injection_params.hh"

#include <cmath>
#include <stdexcept>
#include <string>

namespace nabla::injector {

namespace protocol = common::protocol;

namespace {

// A fault's gate: its wave, or always on when none was given.
Waveform gate_of(const std::optional<protocol::Wave>& wave) {
  return wave ? waveform_of(*wave) : Waveform::constant(1.0);
}

// The delay and faults of `settings` on a config whose link, direction and
// seed are already set.
void apply(const protocol::InjectionSettings& settings, InjectionConfig& config) {
  if (settings.seed) config.seed = *settings.seed;
  if (settings.delay) config.delay = waveform_of(*settings.delay);
  const protocol::Faults& f = settings.faults;
  if (f.jitter) {
    config.jitter = JitterSpec{gate_of(f.jitter->wave), f.jitter->amount_ns, f.jitter->distribution,
                               f.jitter->correlation};
  }
  if (f.loss) {
    config.loss = LossSpec{gate_of(f.loss->wave), f.loss->model,      f.loss->p, f.loss->r,
                           f.loss->one_minus_h,   f.loss->one_minus_k};
  }
  if (f.partition) config.partition = Partition{gate_of(f.partition->wave)};
  if (f.reorder) {
    config.reorder = ReorderSpec{gate_of(f.reorder->wave), f.reorder->probability, f.reorder->gap};
  }
  if (f.corrupt) {
    config.corrupt =
        CorruptSpec{gate_of(f.corrupt->wave), f.corrupt->probability, f.corrupt->fix_checksum};
  }
  if (f.duplicate) {
    config.duplicate = DuplicateSpec{gate_of(f.duplicate->wave), f.duplicate->probability};
  }
  if (f.rate_limit) {
    config.rate_limit = RateLimitSpec{gate_of(f.rate_limit->wave), f.rate_limit->rate_bps,
                                      f.rate_limit->burst_bytes};
  }
}

}  // namespace

Waveform waveform_of(const protocol::Wave& w) {
  const auto amplitude = static_cast<double>(w.amplitude_ns);
  switch (w.kind) {
    case WaveKind::kOff:
      return Waveform::off();
    case WaveKind::kConstant:
      return Waveform::constant(amplitude);
    case WaveKind::kSine:
      return Waveform::sine(amplitude, w.period_ns, w.phase_ns, w.cycles);
    case WaveKind::kTrace:
      return Waveform::from_trace(amplitude, TraceShape{w.trace, w.trace_loop, w.interpolation});
    case WaveKind::kSquare:
      break;
  }
  return Waveform::square(amplitude, w.period_ns, w.duty, w.phase_ns, w.cycles);
}

protocol::Wave wave_of(const Waveform& w) {
  protocol::Wave out =
      protocol::Wave::square(std::llround(w.amplitude), w.period_ns, w.duty, w.cycles);
  out.kind = w.kind;
  out.phase_ns = w.phase_ns;
  if (w.trace) {
    out.trace = w.trace->points;
    out.trace_loop = w.trace->loop;
    out.interpolation = w.trace->interpolation;
  }
  return out;
}

InjectionConfig injection_config(const protocol::InjectStartParams& params, uint64_t default_seed) {
  InjectionConfig config;
  config.link = common::parse_link_spec(params.link);  // checked by from_json
  config.direction = params.direction;
  config.seed = default_seed;
  config.release = params.release;
  apply(params.settings, config);
  return config;
}

InjectionConfig injection_config(const protocol::InjectUpdateParams& params,
                                 const InjectionConfig& existing) {
  InjectionConfig config;
  config.link = existing.link;
  config.direction = existing.direction;
  config.seed = existing.seed;
  config.release = existing.release;
  apply(params.settings, config);
  return config;
}

InjectionConfig parse_injection_config(const nlohmann::json& params,
                                       const InjectionConfig* existing, uint64_t default_seed) {
  if (existing == nullptr) {
    return injection_config(protocol::InjectStartParams::from_json(params), default_seed);
  }
  return injection_config(protocol::InjectUpdateParams::from_json(params), *existing);
}

double parse_lease_s(const nlohmann::json& params) {
  return protocol::read_lease_s(params).value_or(kDefaultLeaseS);
}

protocol::InjectionStats injection_stats(const InjectionAccounting& acc, bool include_cycles) {
  protocol::InjectionStats s;
  s.counters = acc.counters();
  s.actual_delay = acc.overall().summary();
  s.high = acc.half(WaveHalf::kHigh).summary();
  s.low = acc.half(WaveHalf::kLow).summary();
  if (include_cycles) {
    s.cycles.emplace();
    for (const auto& [cycle, halves] : acc.cycles()) {
      s.cycles->push_back({cycle, halves[1].summary(), halves[0].summary()});
    }
  }
  return s;
}

}  // namespace nabla::injector
