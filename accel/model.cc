#include "nabla/accel/model.hh"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace nabla::accel {
namespace {

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void require_finite_non_negative(double v, const char* flag) {
  if (!std::isfinite(v) || v < 0) {
    throw std::invalid_argument(std::string(flag) + ": must be >= 0, got " + number(v));
  }
}

// Whether the host waits for L + Q: not when the accelerator is remote and
// the host does not block a core on it.
bool host_pays_transfer(Design design, Strategy strategy) {
  return strategy != Strategy::kRemote || design == Design::kSync;
}

// 1 / ((1-α) + α/A + n/C · overhead), with the α/A term only when it counts.
double amdahl_with_overhead(const Params& p, bool accelerator_on_path, double overhead_cycles) {
  double denominator = 1.0 - p.alpha;
  if (accelerator_on_path) denominator += p.alpha / *p.accel_factor;
  denominator += p.offloads_per_s / p.cycles_per_s * overhead_cycles;
  return 1.0 / denominator;
}

// The smallest whole g with C_b g^β > threshold_cycles.
std::optional<double> smallest_bytes_above(const Kernel& k, double threshold_cycles) {
  if (!(k.cycles_per_byte > 0) || !(k.beta > 0)) return std::nullopt;
  if (threshold_cycles <= 0) return 1.0;
  const double exact = std::pow(threshold_cycles / k.cycles_per_byte, 1.0 / k.beta);
  double g = std::max(1.0, std::floor(exact));
  while (!(host_cycles(k, g) > threshold_cycles)) g += 1.0;  // one or two steps past rounding
  return g;
}

// Threshold on the host cost of one offload when the accelerator's own time
// (cost / A) is part of what the offload costs: cost (1 - 1/A) > overhead.
std::optional<double> threshold_with_accelerator(const Params& p, double overhead_cycles) {
  if (!p.accel_factor || *p.accel_factor <= 1.0) return std::nullopt;
  return overhead_cycles / (1.0 - 1.0 / *p.accel_factor);
}

}  // namespace

std::string_view design_name(Design d) {
  switch (d) {
    case Design::kSync:
      return "sync";
    case Design::kSyncOs:
      return "sync-os";
    case Design::kAsync:
      return "async";
    case Design::kAsyncDistinct:
      return "async-distinct";
  }
  return "?";
}

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kOnChip:
      return "on-chip";
    case Strategy::kOffChip:
      return "off-chip";
    case Strategy::kRemote:
      return "remote";
  }
  return "?";
}

Design parse_design(std::string_view text, std::string_view flag) {
  for (Design d : kAllDesigns) {
    if (design_name(d) == text) return d;
  }
  throw std::invalid_argument(std::string(flag) + ": unknown design '" + std::string(text) +
                              "' (expected sync, sync-os, async or async-distinct)");
}

Strategy parse_strategy(std::string_view text, std::string_view flag) {
  for (Strategy s : kAllStrategies) {
    if (strategy_name(s) == text) return s;
  }
  throw std::invalid_argument(std::string(flag) + ": unknown strategy '" + std::string(text) +
                              "' (expected on-chip, off-chip or remote)");
}

void validate(const Params& p, Design design) {
  if (!std::isfinite(p.cycles_per_s) || p.cycles_per_s <= 0) {
    throw std::invalid_argument("--cycles: must be > 0, got " + number(p.cycles_per_s));
  }
  if (!std::isfinite(p.alpha) || p.alpha < 0 || p.alpha > 1) {
    throw std::invalid_argument("--alpha: must be in [0, 1], got " + number(p.alpha));
  }
  if (p.accel_factor && (!std::isfinite(*p.accel_factor) || *p.accel_factor <= 0)) {
    throw std::invalid_argument("--accel-factor: must be > 0, got " + number(*p.accel_factor));
  }
  if (!p.accel_factor && design == Design::kSync) {
    throw std::invalid_argument("--accel-factor: required for design sync");
  }
  require_finite_non_negative(p.offloads_per_s, "--offloads-per-s");
  require_finite_non_negative(p.setup_cycles, "--o0");
  require_finite_non_negative(p.transfer_cycles, "--L");
  require_finite_non_negative(p.queue_cycles, "--Q");
  require_finite_non_negative(p.switch_cycles, "--o1");
}

double speedup_overhead_cycles(const Params& p, Design design, Strategy strategy) {
  double overhead = p.setup_cycles;
  if (host_pays_transfer(design, strategy)) overhead += p.transfer_cycles + p.queue_cycles;
  if (design == Design::kSyncOs) overhead += 2 * p.switch_cycles;
  if (design == Design::kAsyncDistinct) overhead += p.switch_cycles;
  return overhead;
}

double latency_overhead_cycles(const Params& p, Design design) {
  double overhead = p.setup_cycles + p.transfer_cycles + p.queue_cycles;
  if (design == Design::kSyncOs || design == Design::kAsyncDistinct) overhead += p.switch_cycles;
  return overhead;
}

Estimate estimate(const Params& p, Design design, Strategy strategy) {
  validate(p, design);
  Estimate e;
  e.speedup = amdahl_with_overhead(p, design == Design::kSync,
                                   speedup_overhead_cycles(p, design, strategy));
  if (p.accel_factor) {
    e.latency_reduction = amdahl_with_overhead(p, true, latency_overhead_cycles(p, design));
  }
  return e;
}

double host_cycles(const Kernel& k, double bytes) {
  return k.cycles_per_byte * std::pow(bytes, k.beta);
}

bool offload_pays_speedup(const Params& p, const Kernel& k, double bytes, Design design,
                          Strategy strategy) {
  const double cost = host_cycles(k, bytes);
  double spent = speedup_overhead_cycles(p, design, strategy);
  if (design == Design::kSync) {
    if (!p.accel_factor) return false;
    spent += cost / *p.accel_factor;
  }
  return cost > spent;
}

bool offload_pays_latency(const Params& p, const Kernel& k, double bytes, Design design) {
  if (!p.accel_factor) return false;
  const double cost = host_cycles(k, bytes);
  return cost > cost / *p.accel_factor + latency_overhead_cycles(p, design);
}

std::optional<double> min_paying_bytes_speedup(const Params& p, const Kernel& k, Design design,
                                               Strategy strategy) {
  const double overhead = speedup_overhead_cycles(p, design, strategy);
  if (design != Design::kSync) return smallest_bytes_above(k, overhead);
  const std::optional<double> threshold = threshold_with_accelerator(p, overhead);
  if (!threshold) return std::nullopt;
  return smallest_bytes_above(k, *threshold);
}

std::optional<double> min_paying_bytes_latency(const Params& p, const Kernel& k, Design design) {
  const std::optional<double> threshold =
      threshold_with_accelerator(p, latency_overhead_cycles(p, design));
  if (!threshold) return std::nullopt;
  return smallest_bytes_above(k, *threshold);
}

}  // namespace nabla::accel
