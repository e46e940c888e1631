#pragma once
// One link's gradient for one transaction type as nabla prints it: the one
// result type behind `nabla run --json` (read from the campaign as it ends)
// and `nabla runs show --json` (read back from the run history), with one
// JSON writer, so both print the same keys with the same meaning.
//
// A field the source does not hold is empty and prints as null: the run
// history keeps the estimate, its CI, the time-domain cross-check, delta-l,
// the perturbation, the throughput change, messages per transaction, the
// step and the sweep, but not the SNR, the standard error, the detection,
// the phase, the reliability, the truth or the interaction bias.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/analysis/sweep.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/db/reads.hh"

namespace nabla::campaign {

// [gradient] verify: the finite difference over a held delay.
struct StepResult {
  std::optional<double> gradient, ci_low, ci_high;
  std::optional<double> delay_ns;  // the actual held delay
  bool disagrees = false;          // its CI and the spectral one are disjoint
};

// [gradient] amplitudes: the gradient measured at one requested amplitude.
struct AmplitudeResult {
  std::int64_t amplitude_ns = 0;  // requested
  std::optional<double> actual_amplitude_ns;
  std::optional<double> gradient, ci_low, ci_high;
};

struct GradientResult {
  std::string link;  // the campaign's label of the link: "tcp web -> app:9002"
  std::string type;
  std::optional<double> gradient;  // ns of response per ns of delay
  std::optional<double> ci_low, ci_high;
  std::optional<double> standard_error;
  std::optional<double> snr;
  std::optional<bool> detected;
  std::optional<double> time_domain;  // the time-domain cross-check
  std::optional<double> phase_bins;
  std::optional<bool> reliable;               // no more than 5% empty bins
  std::optional<double> actual_amplitude_ns;  // delta-l
  std::optional<double> perturbation_ns;
  std::optional<double> throughput_change;
  std::optional<double> truth;  // the testbed's known gradient
  std::optional<double> messages_per_txn, messages_ci_low, messages_ci_high;
  bool waits_not_hops = false;  // messages.hh waits_not_hops
  std::optional<double> interaction_bias, interaction_se;
  std::optional<bool> depends_on_other_links;
  std::optional<StepResult> step;
  std::vector<AmplitudeResult> amplitudes;  // ascending; empty without a sweep
  std::optional<analysis::LinearityVerdict> linearity;
};

// Type `t` of a measurement as the campaign ends.
GradientResult gradient_result(const LinkMeasurement& m, std::size_t t);

// A stored gradient row with its sweep (db::run_gradient_amplitudes; empty
// without one).
GradientResult gradient_result(const db::GradientRow& row,
                               const std::vector<db::GradientAmplitude>& amplitudes);

// Every stored gradient of a run, ordered as db::run_gradients orders them.
std::vector<GradientResult> stored_gradient_results(db::Database& db, std::int64_t run_id);

// The one JSON shape of a gradient (docs/cli.md, "Gradient results"); keys in
// reading order, every key always present.
nlohmann::ordered_json gradient_json(const GradientResult& g);

}  // namespace nabla::campaign
