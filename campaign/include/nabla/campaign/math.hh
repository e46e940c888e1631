#pragma once
// The arithmetic of a campaign, kept apart from sockets and threads so it can
// be unit-tested with literal inputs (campaign.hh runs it on live data).
//
// Decisions written down here:
//  - Bin width: the paper's m + 3 sigma of the span of k consecutive requests
//    (analysis::bin_width_ns) computed per transaction type on a calibration
//    load, and the LARGEST over types is used, so that even the least
//    frequent type has about k requests per bin.
//  - One k_d for all types: every type's training gives an amplitude per
//    candidate k (TrainingResult::amplitude_by_k_ns); we pick the k whose
//    largest per-type amplitude is smallest (minimax), so the one injection
//    reaches d sigma for every type with the least delay. Ties: lower k.
//    The training amplitude is that largest per-type amplitude.
//  - Adaptive sub-phase: one wave cycle; a type's rough gradient is the
//    difference of its mean response time for requests sent in the high and
//    in the low half-cycle over the actual delay step (time domain: with one
//    cycle there is no spectrum to speak of). It is "clear" when positive and
//    at least kClearZ standard errors (Welch) from 0. The new amplitude is the
//    max over clear types of adapt_amplitude_ns(amplitude of that type at
//    k_d, rough gradient), clamped to [min, max]; with no clear type the
//    link barely matters to any type and the maximum amplitude is used.
//    Safety: the cap also bounds the response-time swing, so the amplitude
//    is at most max / (largest clear rough gradient) when that exceeds 1.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nabla/analysis/binning.hh"
#include "nabla/analysis/gradient.hh"
#include "nabla/analysis/training.hh"

namespace nabla::campaign {

inline constexpr double kClearZ = 3.0;

// Largest per-type bin width over the types of `records` (k requests per bin
// of the rarest type). Throws std::invalid_argument naming the type when a
// type has fewer than k + 2 requests. type_names index the record types.
std::int64_t campaign_bin_width_ns(std::span<const analysis::LatencyRecord> records,
                                   std::size_t requests_per_bin,
                                   const std::vector<std::string>& type_names);

// The same rule for Poisson arrivals of rate `rate_rps * min_weight` without
// data: (k + 3 sqrt(k)) / rate (sum of k exponential gaps). For estimates.
std::int64_t expected_bin_width_ns(double rate_rps, double min_weight_fraction,
                                   std::size_t requests_per_bin);

struct KdChoice {
  int k_d = 0;
  double amplitude_ns = 0;  // the largest per-type amplitude at k_d
  std::vector<double> per_type_amplitude_ns;
};

// Throws std::invalid_argument when `trainings` is empty or they have no
// common candidate k.
KdChoice choose_k_d(const std::vector<analysis::TrainingResult>& trainings);

struct RoughGradient {
  double value = 0;  // (mean high - mean low) / delta_l
  double z = 0;      // difference over its Welch standard error
  std::size_t high_requests = 0;
  std::size_t low_requests = 0;
  bool clear = false;  // value > 0 and z >= kClearZ
};

// Requests of one type sent in [wave_start, wave_start + period): the first
// half is high, the second low. delta_l_ns > 0.
RoughGradient rough_gradient(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                             std::int64_t wave_start_ns, std::int64_t period_ns, double delta_l_ns);

// The measurement amplitude after the adaptive sub-phase (see the header).
double adapted_amplitude_ns(const std::vector<double>& per_type_amplitude_ns,
                            const std::vector<RoughGradient>& rough, double min_amplitude_ns,
                            double max_amplitude_ns);

// Mean latency and count of one type's requests sent in [start, end).
struct WindowStats {
  double mean_latency_ns = 0;
  std::size_t requests = 0;
  double rate_rps(std::int64_t window_ns) const;
};
WindowStats window_stats(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                         std::int64_t start_ns, std::int64_t end_ns);

// Throughput of an open-loop phase: requests of one type completed in
// [start, end) (by completion time, send + latency) over requests sent in it.
// Open-loop sends do not slow down when the service does, so the request
// *rate* only shows the schedule's randomness (about 1/sqrt(count)); what a
// slower service changes is how many of them complete within the window.
// 1 in a steady state (less the edge effect latency/window); 0 when nothing
// was sent. The campaign's throughput change is this ratio during the active
// phase over the same ratio during training, minus 1. Failed requests are not
// samples; the campaign warns when a phase had any.
double completion_ratio(std::span<const analysis::LatencyRecord> records, std::int32_t type,
                        std::int64_t start_ns, std::int64_t end_ns);

// Delta l from an injector's per-half statistics: high-half mean minus
// low-half mean; nullopt when a half saw no packet.
std::optional<double> delta_l_from_halves(std::size_t high_count, double high_mean_ns,
                                          std::size_t low_count, double low_mean_ns);

// One gradient from several active phases of the same link and type (a phase
// repeated because it was much noisier than the training): the
// inverse-variance weighted mean, se = 1/sqrt(sum of 1/se_i^2), and a
// symmetric CI of that se times the widest quantile factor among the phases
// ((ci_high - value)/se, the t quantile of each phase). The time-domain
// cross-check is weighted the same way. Other fields come from the phase with
// the most weight. Phases with se <= 0 carry no weight; when none has any,
// the first is returned. One phase is returned as it is. Throws
// std::invalid_argument on an empty span.
analysis::GradientEstimate combine_estimates(std::span<const analysis::GradientEstimate> phases);

// The inverse-variance weight of a phase: 1/se^2, and 0 (no weight) when
// se <= 0 or is not a number.
double inverse_variance_weight(double standard_error);

// sum(w_i x_i) / sum(w_i) with w_i = inverse_variance_weight(se_i): how the
// campaign combines what it measured beside the gradient in repeated phases
// (actual amplitude, perturbation, throughput change), so they describe the
// same measurement as combine_estimates's value. nullopt when no value has
// weight. Throws std::invalid_argument when the spans differ in length.
std::optional<double> inverse_variance_mean(std::span<const double> values,
                                            std::span<const double> standard_errors);

// Expected campaign duration: (M*N + links*(N + one cycle)) * dTs plus a
// warm-up before each phase and the discovery time.
std::int64_t campaign_budget_ns(std::int64_t bin_width_ns, std::size_t bins, std::size_t chunks,
                                std::size_t links, double period_bins, std::int64_t warmup_ns,
                                std::int64_t discover_ns);

}  // namespace nabla::campaign
