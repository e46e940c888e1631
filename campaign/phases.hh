#pragma once
// The phases of a campaign, in the order campaign.cc runs them (private to
// campaign/; the design is in nabla/campaign/campaign.hh).
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/analysis/gradient.hh"
#include "phase_store.hh"
#include "run_state.hh"

namespace nabla::campaign {

// Runs the workload for the discovery time (at least its warm-up), polls
// every sniffd meanwhile, joins the flows into the campaign's links and
// stores them; calibrates the bin width on the same load. Throws when no
// link is measurable.
void discover(CampaignRun& run);

// The passive training phase: M*N bins per type, one k_d for all types, the
// training amplitude; stored with its samples.
void train(CampaignRun& run);

// Sequential schedule: once training has chosen k_d, the time left for
// `links` links (each an adaptive cycle of N/k_d bins and N active bins),
// noted and set as the progress line's deadline.
void revise_estimate_after_training(CampaignRun& run, std::size_t links);

// A phase of `bins` bins (and its warm-up) is measured again: the progress
// line's deadline moves by it and the new time left is noted.
void extend_estimate_for_repeat(CampaignRun& run, std::size_t bins);

// The adaptive sub-phase and the active phase(s) of one link (index of
// count), each stored in its own transaction, the gradients with the last.
void measure_link(CampaignRun& run, CampaignLink& link, std::size_t index, std::size_t count);

// Every measurable link in the same phases, each at its own frequency
// (analysis/frequency_plan.hh): a first phase at the training amplitude, a
// second at the amplitudes its estimates call for (their sum within the
// perturbation budget), the two combined by inverse variance per link and
// type; stored like measure_link's, under `simultaneous` phases.
void measure_links_simultaneously(CampaignRun& run, const std::vector<CampaignLink*>& links);
// The N of the simultaneous phases for `links` links: `bins` when a plan of
// distinct frequencies fits there, else the smallest power of two up to
// 16 x `bins` that holds one (the time estimate uses it before training).
std::size_t simultaneous_phase_bins(const GradientSpec& g, std::size_t links);

// The experiment[index] of the spec: one load run through its baseline,
// fault and recovery windows, the fault on its links meanwhile; judged
// (verdict.hh), stored in its own transaction and added to the outcome.
void run_experiment(CampaignRun& run, std::size_t index);

// [gradient] verify: after the link's active phase(s), holds the measured
// amplitude and releases it in four adjacent windows (on, off, on, off: a
// square wave of two cycles) of step_window_bins(N) bins, each measured
// but for a p99 response time at either end, and puts each type's step
// gradient, against the baseline measured beside it, next to its spectral
// one; stored as a `step` phase of step_phase_bins(N) bins.
void verify_step(CampaignRun& run, const CampaignLink& link, LinkMeasurement& m, std::size_t index,
                 std::size_t count);
inline constexpr std::size_t kStepWindows = 4;      // on, off, on, off
inline constexpr std::size_t kStepWindowBins = 12;  // at most N/4, at least 4
std::size_t step_window_bins(std::size_t bins);
std::size_t step_phase_bins(std::size_t bins);

// ---- shared by the sequential and simultaneous measurements

// Runs the load for warmup + `window_ns` (+ tail), injecting from the end of
// the warm-up until `window_ns` + `tail_ns` later: a square wave of
// `cycles` (0: until stopped) with inj.period_ns (0: the campaign's); fills
// `inj` with what the daemon reported.
loadgen::EngineResult inject_phase(CampaignRun& run, const CampaignLink& link, double amplitude_ns,
                                   int cycles, std::int64_t window_ns, std::int64_t tail_ns,
                                   Injected& inj);

// A load run started for its warm-up plus `measured_ns`, its warm-up
// already waited out; warm_ns is when the warm-up ended.
struct WarmLoad {
  std::unique_ptr<LoadRun> load;
  std::int64_t warm_ns = 0;
};
WarmLoad start_warm_load(CampaignRun& run, std::int64_t measured_ns);

// Where a link's gradient is read: the series' first bin, its length, the
// link's injection frequency in it.
struct GradientWindow {
  std::int64_t start_ns = 0;
  std::size_t bins = 0;
  int k_d = 0;
};

// Each type's series over the window; throws when a type has none.
std::vector<analysis::BinnedSeries> bin_types(CampaignRun& run, const CampaignLink& link,
                                              const std::vector<analysis::LatencyRecord>& records,
                                              const GradientWindow& window);

// Type t's training spectrum as the baseline FFT^0 when the window has the
// training's N bins, else none (FFT^0 = 0). None in the simultaneous
// schedule too: its short training (M = 2) would add half the noise
// variance of a phase, shared by both phases, to cancel only a service
// component phase-locked to the bin grid.
std::span<const std::complex<double>> training_baseline(const CampaignRun& run, std::size_t t,
                                                        const GradientWindow& window);

// One type's gradient over the window, with its perturbation and throughput
// change against the training and its truth from the spec.
TypeGradient type_gradient(CampaignRun& run, const CampaignLink& link, std::size_t t,
                           const analysis::BinnedSeries& series,
                           const std::vector<analysis::LatencyRecord>& records,
                           const GradientWindow& window, const analysis::GradientOptions& options,
                           double delta_l_ns);

// Type t's gradient over several phases: the estimates combined by inverse
// variance, and amplitude, perturbation, throughput change and interaction
// bias weighted like them.
TypeGradient combine_type_gradients(const std::vector<TypeGradient>& phases);

// Whether a gradient's interaction bias exceeds both its CI half-width and
// twice the bias's own standard error (docs/method.md, "Interaction check").
bool depends_on_other_links(const TypeGradient& tg);

// A noise ratio for a message: one decimal ("2.4").
std::string format_ratio(double r);

}  // namespace nabla::campaign
