#pragma once
// The daemon's model of an injection, made from the typed control messages
// (nabla/common/protocol/injectd.hh), which validate every field before
// anything touches the kernel, and the statistics it reports back in them.
// Nothing here reads a JSON key: the messages are the one place that does.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "nabla/common/protocol/injectd.hh"
#include "nabla/injector/accounting.hh"
#include "nabla/injector/injection.hh"

namespace nabla::injector {

inline constexpr int64_t kMaxDelayNs = common::protocol::kMaxDelayNs;
inline constexpr double kDefaultLeaseS = common::protocol::kDefaultLeaseS;
inline constexpr double kMaxLeaseS = common::protocol::kMaxLeaseS;

// inject.start: a new injection; the seed is default_seed unless given.
InjectionConfig injection_config(const common::protocol::InjectStartParams& params,
                                 uint64_t default_seed);
// inject.update: the new delay and faults replace `existing`'s; its link,
// direction and (unless given) seed are kept.
InjectionConfig injection_config(const common::protocol::InjectUpdateParams& params,
                                 const InjectionConfig& existing);

// Raw params, as a client sends them: parsed by the message of inject.start
// (existing == nullptr) or inject.update. Throws std::invalid_argument
// naming the field.
InjectionConfig parse_injection_config(const nlohmann::json& params,
                                       const InjectionConfig* existing, uint64_t default_seed);
// The lease_s of raw params, or kDefaultLeaseS when absent.
double parse_lease_s(const nlohmann::json& params);

Waveform waveform_of(const common::protocol::Wave& wave);
common::protocol::Wave wave_of(const Waveform& waveform);
// Counters and the actual-delay summaries (overall, per half, and per cycle
// when include_cycles).
common::protocol::InjectionStats injection_stats(const InjectionAccounting& accounting,
                                                 bool include_cycles);

}  // namespace nabla::injector
