#pragma once
// JSON <-> injection configuration and statistics, for the control methods.
// Every parameter is validated here, before anything touches the kernel; a bad
// one throws std::invalid_argument whose message starts with the field path
// (e.g. "faults.loss.p: must be within 0..1, got 1.5").
//
// inject.start params:
//   link       "udp 10.0.0.1 -> 10.0.0.2:9000"        (required, common link spec)
//   direction  "out" | "in" | "fwd"                   (default "out")
//   delay      "20ms"  (constant) or a waveform object (default off):
//              {"kind":"constant"|"square"|"off", "amplitude":"5ms",
//               "period":"1s", "duty":0.5, "phase":"0", "cycles":0}
//   faults     {"jitter":    {"amount":"1ms", "distribution":"uniform"|"normal"|
//                             "pareto"|"paretonormal", "correlation":0..1},
//               "loss":      {"model":"bernoulli", "p":0.1} or
//                            {"model":"gilbert_elliott", "p","r","one_minus_h","one_minus_k"},
//               "partition": {},
//               "reorder":   {"probability":0.25, "gap":5},
//               "corrupt":   {"probability":0.01, "fix_checksum":true},
//               "duplicate": {"probability":0.01},
//               "rate_limit":{"rate_bps":1e7, "burst_bytes":3000}}
//              every fault also takes "wave": a waveform object (default constant)
//   lease_s    number of seconds, 0 < lease_s <= 3600 (default 10)
//   seed       unsigned integer (default: random, reported back)
// Probabilities are numbers in [0, 1] or percent strings ("5%"); durations
// are strings with units ("20ms") or integers in nanoseconds.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "nabla/injector/accounting.hh"
#include "nabla/injector/injection.hh"

namespace nabla::injector {

inline constexpr int64_t kMaxDelayNs = 60'000'000'000;  // 60 s
inline constexpr double kDefaultLeaseS = 10.0;
inline constexpr double kMaxLeaseS = 3600.0;

// Parses the waveform/fault part; `link` and `direction` are required unless
// `existing` is given (inject.update keeps the injection's link).
InjectionConfig parse_injection_config(const nlohmann::json& params,
                                       const InjectionConfig* existing, uint64_t default_seed);
Waveform parse_waveform(const nlohmann::json& value, const std::string& field);
double parse_lease_s(const nlohmann::json& params);

nlohmann::json to_json(const DelaySummary& summary);
nlohmann::json to_json(const Waveform& wave);
// Counters and the actual-delay summaries (overall, per half, and per cycle
// when include_cycles).
nlohmann::json stats_json(const InjectionAccounting& accounting, bool include_cycles);

}  // namespace nabla::injector
