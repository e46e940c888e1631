#pragma once
// One injection's packet pipeline, pure: given a packet's arrival time and
// headers it decides drop / release time / corrupt / duplicate, using the
// delay waveform, the faults (each seeded from the injection seed) and the
// per-flow FIFO. It also owns the injection's accounting. The engine feeds it
// packets and the clock; nothing here touches the kernel.
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>

#include "nabla/common/link_spec.hh"
#include "nabla/injector/accounting.hh"
#include "nabla/injector/faults.hh"
#include "nabla/injector/flow_order.hh"
#include "nabla/injector/iptables_rules.hh"
#include "nabla/injector/waveform.hh"

namespace nabla::injector {

struct CorruptSpec {
  Waveform wave;
  double probability = 0.0;
  bool fix_checksum = true;
};

struct DuplicateSpec {
  Waveform wave;
  double probability = 0.0;
};

struct InjectionConfig {
  common::LinkSpec link;
  Direction direction = Direction::kOut;
  Waveform delay;  // amplitude in ns
  std::optional<JitterSpec> jitter;
  std::optional<LossSpec> loss;
  std::optional<Partition> partition;
  std::optional<ReorderSpec> reorder;
  std::optional<CorruptSpec> corrupt;
  std::optional<DuplicateSpec> duplicate;
  std::optional<RateLimitSpec> rate_limit;
  uint64_t seed = 0;
  Release release = Release::kSpin;  // how the engine times this injection's releases

  // Corruption rewrites and duplication re-sends the packet: copy it whole.
  bool needs_payload() const { return corrupt.has_value() || duplicate.has_value(); }
  // Moves every waveform's anchor to start_ns (done when the injection starts).
  void anchor_at(int64_t start_ns);
};

struct PacketPlan {
  bool drop = false;
  int64_t release_ns = 0;
  WavePoint wave;  // of the delay waveform at arrival: the accounting bucket
  bool corrupt = false;
  bool duplicate = false;
  bool reordered = false;  // sent at once by the reorder fault
};

class InjectionPipeline {
 public:
  explicit InjectionPipeline(const InjectionConfig& config);

  // `packet` starts at the IP header (may be truncated to the copy range);
  // `length` is the packet's full length.
  PacketPlan plan(int64_t arrival_ns, std::span<const uint8_t> packet, uint32_t length);

  // Replaces waveforms and faults (inject.update); keeps accounting and the
  // per-flow order so an update never reorders a flow either.
  void update(const InjectionConfig& config);

  const InjectionConfig& config() const { return config_; }
  InjectionAccounting& accounting() { return accounting_; }
  const InjectionAccounting& accounting() const { return accounting_; }
  FlowOrder& flow_order() { return flow_order_; }
  std::mt19937_64& corruption_rng() { return corruption_rng_; }

 private:
  void build_faults();

  InjectionConfig config_;
  std::optional<Jitter> jitter_;
  std::optional<Loss> loss_;
  std::optional<Reorder> reorder_;
  std::optional<GatedCoin> corrupt_;
  std::optional<GatedCoin> duplicate_;
  std::optional<RateLimit> rate_limit_;
  std::mt19937_64 corruption_rng_;
  FlowOrder flow_order_;
  InjectionAccounting accounting_;
};

}  // namespace nabla::injector
