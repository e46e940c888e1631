#pragma once
// The campaign's phases as rows of the run history (private to campaign/;
// the writes themselves are CampaignRecorder's, store.hh). Each function runs
// inside the caller's transaction, so a phase and what belongs to it commit
// together.
#include <cstdint>
#include <string>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/loadgen/engine.hh"
#include "run_state.hh"

namespace nabla::campaign {

// One injection of a phase as the campaign saw it.
struct Injected {
  InjectionStats stats;
  std::int64_t anchor_ns = 0;
  std::int64_t ended_ns = 0;
  std::string id;
  double delta_l_ns = 0;       // actual (high - low), else the requested amplitude
  bool measured = false;       // both halves saw packets
  std::int64_t period_ns = 0;  // the square wave's period; 0: the campaign's
  int cycles = 0;              // the square wave's cycles (0: until stopped)
};

// The campaign's links (after discovery) and the flow records seen over
// [first, last], each joined to the link it is the sending side of.
void store_links(CampaignRun& run, const std::vector<NodeFlows>& nodes, std::int64_t first_seen_ns,
                 std::int64_t last_seen_ns);

// The training phase and its samples sent in [start, start + window).
void store_training_phase(CampaignRun& run, const loadgen::EngineResult& result,
                          const std::vector<analysis::LatencyRecord>& records,
                          std::int64_t start_ns, std::int64_t window_ns);

// One phase that injected on `link` (adaptive or active): its row, the
// injection the daemon reported, and the samples sent in [anchor, anchor +
// window). Returns the phase id.
std::int64_t store_injected_phase(CampaignRun& run, db::PhaseKind kind, const CampaignLink& link,
                                  const Injected& injected, double amplitude_ns, std::int64_t bins,
                                  const loadgen::EngineResult& result,
                                  const std::vector<analysis::LatencyRecord>& records,
                                  std::int64_t window_ns);

// One injection of a phase (its wave's period given), with what the daemon
// reported. Returns the injection id.
std::int64_t store_injection(CampaignRun& run, std::int64_t phase_id, const CampaignLink& link,
                             const Injected& injected, double amplitude_ns, std::int64_t period_ns);

// One gradient row per type of `measurement`, on phase `phase_id`, with
// its step estimate; returns the rows' ids in type order.
std::vector<std::int64_t> store_gradients(CampaignRun& run, const CampaignLink& link,
                                          const LinkMeasurement& measurement,
                                          std::int64_t phase_id);

// A sweep's gradient per amplitude and type (gradient_amplitudes), beside
// the type's gradient row (`gradient_ids`, in type order).
void store_sweep(CampaignRun& run, const LinkMeasurement& measurement,
                 const std::vector<std::int64_t>& gradient_ids);

}  // namespace nabla::campaign
