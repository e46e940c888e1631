#pragma once
// A service's offload candidates as a TOML file (`nabla accel --config`):
// its host cycles per second, its kernels with their granularity histograms,
// and per kernel the acceleration strategies on offer with their overheads.
// evaluate() puts every kernel × strategy × design side by side with the
// offload sizes that pay off. The file format is in docs/accel.md.
#include <optional>
#include <string>
#include <vector>

#include "nabla/accel/model.hh"

namespace nabla::accel {

struct GranularityBin {
  double bytes = 0;  // offload size g
  double per_s = 0;  // offloads of that size in one second
};

struct StrategyOption {
  Strategy strategy = Strategy::kOnChip;
  std::optional<double> accel_factor;  // A
  double setup_cycles = 0, transfer_cycles = 0, queue_cycles = 0, switch_cycles = 0;
};

struct KernelSpec {
  std::string name;
  double alpha = 0;  // share of C in this kernel, over all its offloads
  Kernel cost;       // C_b, β
  // Offloads per second by size; empty = every offload pays and `offloads_per_s` holds n.
  std::vector<GranularityBin> granularity;
  double offloads_per_s = 0;
  std::vector<StrategyOption> strategies;
};

struct ServiceSpec {
  double cycles_per_s = 0;  // C
  std::vector<Design> designs;
  std::vector<KernelSpec> kernels;
};

// Parses the TOML text; throws std::invalid_argument naming the key
// ("kernel[1].alpha: must be in [0, 1], got 2").
ServiceSpec parse_service_spec(const std::string& toml_text);
ServiceSpec load_service_spec(const std::string& path);

struct DesignRow {
  std::string kernel;
  Strategy strategy = Strategy::kOnChip;
  Design design = Design::kSync;
  // The bins that pass the speedup test (all of them without a histogram),
  // the n and α they make, and what they gain.
  double offloads_per_s = 0;
  double alpha = 0;
  std::optional<double> min_bytes_speedup, min_bytes_latency;
  Estimate estimate;
  Params params{};  // the model's inputs as evaluated (n and α of the paying offloads)
  std::optional<Kernel> cost{};  // C_b and β, when the kernel gives C_b
};

std::vector<DesignRow> evaluate(const ServiceSpec& spec);

// The model's inputs of one kernel offloaded one way, with n and α given.
Params params_for(const ServiceSpec& spec, const StrategyOption& option, double alpha,
                  double offloads_per_s);

}  // namespace nabla::accel
