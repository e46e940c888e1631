#include "nabla/injector/injection.hh"

#include <algorithm>
#include <cmath>

namespace nabla::injector {

namespace {
// Fault indices for derive_seed: fixed, so a fault's pattern depends only on
// the injection seed and its own kind.
enum FaultIndex : uint64_t { kJitter = 1, kLoss, kReorder, kCorrupt, kDuplicate, kCorruptBits };
}  // namespace

void InjectionConfig::anchor_at(int64_t start_ns) {
  delay.start_ns = start_ns;
  if (jitter) jitter->wave.start_ns = start_ns;
  if (loss) loss->wave.start_ns = start_ns;
  if (partition) partition->wave.start_ns = start_ns;
  if (reorder) reorder->wave.start_ns = start_ns;
  if (corrupt) corrupt->wave.start_ns = start_ns;
  if (duplicate) duplicate->wave.start_ns = start_ns;
  if (rate_limit) rate_limit->wave.start_ns = start_ns;
}

InjectionPipeline::InjectionPipeline(const InjectionConfig& config)
    : config_(config), corruption_rng_(derive_seed(config.seed, kCorruptBits)) {
  build_faults();
}

void InjectionPipeline::build_faults() {
  const uint64_t seed = config_.seed;
  jitter_.reset();
  loss_.reset();
  reorder_.reset();
  corrupt_.reset();
  duplicate_.reset();
  rate_limit_.reset();
  if (config_.jitter) jitter_.emplace(*config_.jitter, derive_seed(seed, kJitter));
  if (config_.loss) loss_.emplace(*config_.loss, derive_seed(seed, kLoss));
  if (config_.reorder) reorder_.emplace(*config_.reorder, derive_seed(seed, kReorder));
  if (config_.corrupt) {
    corrupt_.emplace(config_.corrupt->wave, config_.corrupt->probability,
                     derive_seed(seed, kCorrupt));
  }
  if (config_.duplicate) {
    duplicate_.emplace(config_.duplicate->wave, config_.duplicate->probability,
                       derive_seed(seed, kDuplicate));
  }
  if (config_.rate_limit) rate_limit_.emplace(*config_.rate_limit);
}

void InjectionPipeline::update(const InjectionConfig& config) {
  config_ = config;
  build_faults();
}

PacketPlan InjectionPipeline::plan(int64_t arrival_ns, std::span<const uint8_t> packet,
                                   uint32_t length) {
  PacketPlan plan;
  plan.wave = config_.delay.at(arrival_ns);
  plan.release_ns = arrival_ns;
  if ((config_.partition && config_.partition->drop(arrival_ns)) ||
      (loss_ && loss_->drop(arrival_ns))) {
    plan.drop = true;
    return plan;
  }
  const double wave_ns = config_.delay.value(arrival_ns);
  int64_t delay_ns = static_cast<int64_t>(std::llround(wave_ns));
  if (jitter_) delay_ns += jitter_->offset_ns(arrival_ns);
  delay_ns = std::clamp<int64_t>(delay_ns, 0, common::protocol::kMaxDelayNs);
  if (rate_limit_) {
    const int64_t wait_ns = rate_limit_->delay_ns(arrival_ns, length);
    if (wait_ns == RateLimit::kBacklogFull) {
      plan.drop = true;  // its backlog already holds the 60 s maximum
      return plan;
    }
    delay_ns += wait_ns;
  }
  if (reorder_ && reorder_->send_now(arrival_ns)) {
    plan.reordered = true;  // released at once, outside the flow's FIFO
  } else {
    const auto key = flow_key_of(packet);
    plan.release_ns = flow_order_.release_ns(key.value_or(FlowKey{}), arrival_ns, delay_ns);
  }
  plan.corrupt = corrupt_ && corrupt_->flip(arrival_ns);
  plan.duplicate = duplicate_ && duplicate_->flip(arrival_ns);
  return plan;
}

}  // namespace nabla::injector
