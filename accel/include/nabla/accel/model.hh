#pragma once
// The Accelerometer model: what offloading a kernel to an accelerator gains a
// service in throughput (speedup C/C_S) and in per-request latency (latency
// reduction C/C_L), given the offload overheads its threading design and the
// acceleration strategy put on the host. The method and every parameter's
// meaning and unit are in docs/accel.md.
//
// All overheads are host cycles; C is host cycles per second, n offloads per
// second, so n/C is offloads per host cycle. Each equation is Amdahl's law
// with the offload overheads added:
//   sync            C/C_S = C/C_L = 1 / ((1-a) + a/A + n/C (o0 + L + Q))
//   sync-os         C/C_S = 1 / ((1-a) + n/C (o0 + L + Q + 2 o1))
//                   C/C_L = 1 / ((1-a) + a/A + n/C (o0 + L + Q + o1))
//   async-distinct  C/C_S = 1 / ((1-a) + n/C (o0 + L + Q + o1))   (one switch)
//                   C/C_L = as sync-os
//   async           C/C_S = 1 / ((1-a) + n/C (o0 + L + Q))
//                   C/C_L = 1 / ((1-a) + a/A + n/C (o0 + L + Q))
// A remote accelerator is reached over the network: a host that does not
// wait for it (every design but sync) spends no cycles on L + Q, so they
// leave C_S; they stay in C_L, which the request waits through.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nabla::accel {

enum class Design { kSync, kSyncOs, kAsync, kAsyncDistinct };
enum class Strategy { kOnChip, kOffChip, kRemote };

inline constexpr Design kAllDesigns[] = {Design::kSync, Design::kSyncOs, Design::kAsync,
                                         Design::kAsyncDistinct};
inline constexpr Strategy kAllStrategies[] = {Strategy::kOnChip, Strategy::kOffChip,
                                              Strategy::kRemote};

// "sync", "sync-os", "async", "async-distinct"; "on-chip", "off-chip",
// "remote". The parsers throw std::invalid_argument naming `flag` and the
// accepted words.
std::string_view design_name(Design d);
std::string_view strategy_name(Strategy s);
Design parse_design(std::string_view text, std::string_view flag = "--design");
Strategy parse_strategy(std::string_view text, std::string_view flag = "--strategy");

// The model's inputs for one kernel offloaded one way. An overhead that does
// not apply is 0; A may be absent where no equation needs it (the speedup of
// every design but sync), and then there is no latency reduction.
struct Params {
  double cycles_per_s = 0;             // C: host cycles in one second (kernel and the rest)
  double alpha = 0;                    // α: share of C spent in the kernel, in [0, 1]
  std::optional<double> accel_factor;  // A: peak accelerator speedup, > 0
  double offloads_per_s = 0;           // n: offloads in one second
  double setup_cycles = 0;             // o0: host cycles preparing one offload
  double transfer_cycles = 0;          // L: cycles moving one offload to the accelerator
  double queue_cycles = 0;             // Q: cycles one offload waits in a queue
  double switch_cycles = 0;            // o1: cycles of one thread switch
};

// Throws std::invalid_argument naming the flag of the first bad parameter
// ("--alpha: must be in [0, 1], got 1.5"). `design` decides whether A is
// required (sync's speedup needs it).
void validate(const Params& p, Design design);

struct Estimate {
  double speedup = 0;                       // C / C_S
  std::optional<double> latency_reduction;  // C / C_L; nullopt without A
};

// Validates, then applies the design's equations (see the top of this file).
Estimate estimate(const Params& p, Design design, Strategy strategy);

// The per-offload overheads (host cycles) that enter C_S and C_L.
double speedup_overhead_cycles(const Params& p, Design design, Strategy strategy);
double latency_overhead_cycles(const Params& p, Design design);

// The kernel's cost on the host for one offload of g bytes: C_b · g^β.
struct Kernel {
  double cycles_per_byte = 0;  // C_b
  double beta = 1;             // β: 1 linear, < 1 sub-linear, > 1 super-linear
};
double host_cycles(const Kernel& k, double bytes);

// The profitability tests of one offload of g bytes:
//   speedup, sync:       C_b g^β > C_b g^β / A + o0 + L + Q       (eqn 2)
//   speedup, sync-os:    C_b g^β > o0 + L + Q + 2 o1              (eqn 4)
//   speedup, async-dist: C_b g^β > o0 + L + Q + o1
//   speedup, async:      C_b g^β > o0 + L + Q                     (eqn 7)
//   latency:             C_b g^β > C_b g^β / A + latency overhead
bool offload_pays_speedup(const Params& p, const Kernel& k, double bytes, Design design,
                          Strategy strategy);
bool offload_pays_latency(const Params& p, const Kernel& k, double bytes, Design design);

// The smallest whole number of bytes from which every larger offload passes
// the test; nullopt when none does (A <= 1 where A counts, or C_b = 0).
std::optional<double> min_paying_bytes_speedup(const Params& p, const Kernel& k, Design design,
                                               Strategy strategy);
std::optional<double> min_paying_bytes_latency(const Params& p, const Kernel& k, Design design);

}  // namespace nabla::accel
