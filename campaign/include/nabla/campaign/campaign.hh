#pragma once
// A link-gradient campaign (docs/method.md, "Link gradients", and docs/design.md,
// "Campaign"): connect, discover, train, and for every measurable link an
// adaptive one-cycle sub-phase then the active phase of N bins; every step is
// stored (store.hh).
//
// Pieces and data flow (one campaign thread drives everything; each phase is
// one file of campaign/, the arithmetic is math.hh):
//   spec ─► CampaignRecorder (run row 'running', store.hh)
//        ─► the environment (environment.hh): Clock, LoadRunner, Daemons.
//           run_campaign(spec, store, options) connects RpcDaemons to every
//           daemon (failure = one error naming the node) after the run row
//           exists; the overload taking a CampaignEnvironment runs against
//           the caller's (the tests' fakes).
//        ─► discovery (discovery.cc): the workload runs (a LoadRun) while
//           the campaign polls every sniffd (flows.list with a cursor);
//           join_flows → links (discover.hh); include/exclude (links.hh); a
//           link is measurable when its source node has an injectd
//           (direction `out` there, link spec = its addresses and fixed
//           ports). The same load calibrates the bin width.
//        ─► training (training.cc): load for warmup + M·N bins; per type bin
//           → train(); one k_d for all types (minimax) and the training
//           amplitude.
//        ─► per link (measurement.cc): adaptive phase (warmup, then ONE
//           cycle, cycles = 1 so the daemon itself ends it), rough gradients
//           → amplitude; active phase (warmup, then a square wave of period
//           N·dTs/k_d, duty 0.5; N bins from the injection's anchor);
//           inject.stop gives the actual delay per half: delta-l = high mean
//           - low mean.
//           Gradients per type against the training FFT0 mean. Phase choice:
//           the wave's phase is estimated (phase unknown) on every type and
//           the estimate of the type with the highest SNR, if detected, is
//           reused as known for every type (so a gradient-0 type gets a
//           symmetric t interval instead of a one-sided magnitude bound); if
//           no type detects the wave the nominal phase 0 (the bins start at
//           the coordinator's estimate of the wave's anchor) is used.
//           Perturbation: mean response time in the active window minus the
//           training mean, per type; throughput change: the share of the
//           window's requests completed within it (math.hh completion_ratio)
//           in the active phase over training, minus 1. Messages per
//           transaction: the sniffds are polled at every wait slice of the
//           active phase and the link's data-segment counts set against the
//           requests per type (messages.hh). A noisy active phase
//           is repeated and the repeats combined by inverse variance (math.hh
//           combine_estimates, inverse_variance_mean).
//        ─► experiments (experiments.cc), after the gradients (or alone
//           with gradient.enabled = false): per [[experiment]] one load run
//           through a baseline, a fault and a recovery window, the fault
//           injected on its links meanwhile; each SLO term judged per window
//           (verdict.hh).
//        ─► store (phase_store.cc): each phase with its injection and
//           samples in its own transaction, the gradients with the last.
// Load runs are bounded by their duration; the campaign waits in short
// slices of its clock, renewing every held lease every lease/4, so a signal
// (cancel flag), a failed renewal or any error ends the campaign within
// ~50 ms: injections are stopped first (RAII handles stop best effort with
// short timeouts), the current load run is stopped, and the run is stored as
// 'failed' with the error and everything measured so far. A kill -9 leaves
// only leased injections, which the daemons remove when the lease lapses.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "nabla/analysis/gradient.hh"
#include "nabla/analysis/interaction.hh"
#include "nabla/analysis/sweep.hh"
#include "nabla/campaign/discover.hh"
#include "nabla/campaign/environment.hh"
#include "nabla/campaign/math.hh"
#include "nabla/campaign/messages.hh"
#include "nabla/campaign/spec.hh"
#include "nabla/campaign/verdict.hh"
#include "nabla/db/store.hh"

namespace nabla::campaign {

struct CampaignLink {
  Link link;
  std::string label;  // "tcp web -> app:9002" (spec.hh)
  std::string spec;   // injector link spec with addresses
  // The same link in its other address family, when its ends talked over
  // both (a dual-stack pair): injected alongside `spec` with the same wave.
  std::vector<std::string> family_specs;
  std::string src_node;  // where it is injected (direction out)
  bool measurable = false;
  std::string note;  // why it is not measured
  std::int64_t link_id = 0;
};

struct TypeGradient {
  std::string type;
  analysis::GradientEstimate estimate;
  double actual_amplitude_ns = 0;
  double perturbation_ns = 0;
  double throughput_change = 0;
  bool reliable = true;  // no more than 5% empty bins
  std::optional<double> truth;
  // Messages per transaction that crossed the link in its direction while it
  // was measured (messages.hh); none without a sniffd at either end.
  std::optional<MessagesPerTxn> messages;
  // [gradient] verify: the finite difference over a held delay, and whether
  // its CI and the spectral CI are disjoint (analysis/sweep.hh).
  std::optional<analysis::StepEstimate> step;
  bool step_disagrees = false;
  // Simultaneous schedule: how much the other links' delays move this
  // gradient (analysis/interaction.hh), and whether that exceeds both its
  // CI half-width and twice its own standard error.
  std::optional<analysis::InteractionBias> interaction;
  bool depends_on_other_links = false;
};

// One amplitude of a sweep: the link's gradient per type measured there
// (its active phase repeated while noisy, like the single-amplitude one).
struct SweepAmplitude {
  std::int64_t requested_ns = 0;
  std::int64_t phase_id = 0;  // the last active phase at this amplitude
  std::vector<TypeGradient> gradients;
};

struct LinkMeasurement {
  std::string label;
  double training_amplitude_ns = 0;
  double amplitude_ns = 0;  // after the adaptive sub-phase
  double delta_l_ns = 0;    // actual, from the daemon (requested if unknown)
  bool delta_l_measured = true;
  std::vector<RoughGradient> rough;
  std::vector<TypeGradient> gradients;
  // Where the gradients were read: the injection frequency and N, and
  // whether every link was measured in the same phases.
  int k_d = 0;
  std::size_t bins = 0;
  bool simultaneous = false;
  // [gradient] amplitudes: every amplitude's gradients (ascending) and a
  // linearity verdict per type; `gradients` are then those of the headline
  // amplitude, the swept one nearest the adaptive amplitude (log scale).
  std::vector<SweepAmplitude> sweep;
  std::vector<analysis::LinearityVerdict> linearity;  // per type; empty without a sweep
  double step_delay_ns = 0;                           // actual held delay; 0 without a step
};

// One fault experiment as it ran ([[experiment]], docs/method.md "Fault
// experiments"): the links it injected, every SLO term per window with its
// verdict, and for a delay fault the observed change of the mean response
// time beside what the run's gradients predict for it.
struct ExperimentOutcome {
  std::string name;
  std::vector<std::string> links;  // labels
  std::vector<TermCheck> checks;   // baseline, fault, recovery
  Verdict verdict = Verdict::kInconclusive;
  std::optional<double> mean_delay_ns;  // per delayed packet, over the links
  double observed_change_ns = 0;
  std::optional<Interval> observed_ci_ns;
  std::optional<double> predicted_change_ns;
  std::optional<Interval> predicted_ci_ns;
};

struct CampaignOutcome {
  std::int64_t run_id = 0;
  bool complete = false;
  std::string error;
  bool interrupted = false;
  std::uint64_t seed = 0;
  std::vector<std::string> types;
  std::int64_t bin_width_ns = 0;
  int k_d = 0;
  std::int64_t period_ns = 0;
  double training_amplitude_ns = 0;
  std::vector<double> training_mean_ns;            // per type
  std::vector<double> training_rate_rps;           // per type
  std::vector<double> training_completion;         // completion_ratio per type
  std::vector<double> training_type_amplitude_ns;  // per type, at k_d
  std::int64_t budget_ns = 0;                      // the printed estimate, no phase measured again
  // The estimate with every active phase measured `repeats` times more: a
  // repeat is decided by each phase's own noise, so the time falls between.
  std::int64_t budget_if_repeated_ns = 0;
  std::vector<CampaignLink> links;
  std::vector<LinkMeasurement> measurements;
  std::vector<ExperimentOutcome> experiments;
  std::vector<std::string> warnings;
};

struct CampaignProgress {
  std::string phase;     // discovery | training | adaptive | active | step
  std::size_t link = 0;  // 1-based while measuring links
  std::size_t links = 0;
  std::size_t bins = 0;  // collected so far in this phase
  std::size_t bins_total = 0;
  std::int64_t left_ns = 0;  // estimated time left for the campaign
};

struct CampaignOptions {
  db::RunKind kind = db::RunKind::kRun;
  std::string tool_version = "0.1.0";
  // Set (to the signal number) from another thread to stop the campaign.
  const std::atomic<int>* cancel = nullptr;
  std::function<void(const CampaignProgress&)> progress;  // called every ~250 ms
  std::ostream* log = nullptr;  // one-line notes (seed, links, estimate); null = quiet
  // Run by run_campaign(spec, store, options) once the run row exists and
  // before the daemons are connected (`nabla run`: nabla nodes check); what
  // it throws fails the stored run with its message. Empty: no check.
  std::function<void(const CampaignSpec&)> check_nodes;
};

// Runs the campaign. Throws only before the run row exists (e.g. the
// database cannot be written); afterwards every failure is returned in the
// outcome (complete = false, error) and stored.
CampaignOutcome run_campaign(const CampaignSpec& spec, db::Store& store,
                             const CampaignOptions& options);
// The same against the caller's clock, load and daemons.
CampaignOutcome run_campaign(const CampaignSpec& spec, db::Store& store,
                             const CampaignOptions& options, const CampaignEnvironment& env);

// "PROTO SRC[:SPORT] -> DST[:DPORT]" (spec.hh).
std::string link_label(const Link& link);

}  // namespace nabla::campaign
