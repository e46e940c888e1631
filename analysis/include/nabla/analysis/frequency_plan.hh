#pragma once
// Frequencies for measuring several links in one phase.
//
// In a simultaneous phase every link carries its own square-wave delay, all
// over the same N bins, and each link's gradient is read at its own
// injection frequency k_i from the one response series. Over N bins a wave
// with k_i whole cycles puts energy only at multiples of k_i (aliased modulo
// N), so the links separate exactly unless one link's wave, or the product
// of two links' waves, has energy at another link's frequency:
//   - the odd harmonics of a square wave fall on 3k, 5k, ... (1/m of the
//     fundamental, less after bin averaging);
//   - an interaction between links j and l (the response to both delays
//     differs from the sum of the responses to each) adds a term in
//     x_j * x_l, whose spectrum has lines at k_j +- k_l, 3k_j +- k_l, ...
//     (the intermodulation products).
// The planner measures both exactly: for each candidate it takes the DFT of
// the bin-averaged unit wave and of every pair product (at relative phases
// 0 and half a bin, since the links start together but not on a bin edge),
// and accepts a set of frequencies when every such leak into another link's
// frequency is at most `max_leak` of that link's own coefficient. A leak of
// r biases a link's gradient by at most r times the other link's (or the
// interaction's) response per unit of the link's own amplitude.
//
// The product x_j * x_l also has a line at k_j itself: x_j times the mean
// of l's wave, 1/2. So with an interaction c (ns of response per ns^2 of
// both delays), link j's simultaneous gradient is g_j + c * a_l / 2: the
// gradient at the other links' mean injected delay. That is inherent to any
// simultaneous schedule and is documented as the quantity measured. Any
// further line there (k_l - k_j = k_j when k_l = 2 k_j, 3k_j - k_l = k_l
// when k_l = 3k_j / 2, ...) would change that meaning, so the planner
// counts the product's deviation from x_j / 2 at k_j as a leak too.
//
// Frequencies the training found noisy (`avoid`) are never chosen, and the
// search takes candidates in `preference` order (quietest first when the
// caller passes the training's ranking), backtracking when a choice blocks
// the rest.
#include <complex>
#include <cstddef>
#include <optional>
#include <vector>

namespace nabla::analysis {

struct FrequencyPlanOptions {
  std::size_t bins = 0;                 // N, a power of two >= 8
  std::size_t min_bins_per_period = 8;  // k <= N / min_bins_per_period
  std::size_t min_k = 2;                // lowest frequency (slow drift below)
  double max_leak = 0.01;               // see above
  double occupied_leak = 0.05;          // see FrequencyPlan::occupied
  double occupied_product_leak = 0.1;   // the same for pair products
  std::size_t min_free_bins = 16;       // bins left for the noise estimate
  std::vector<std::size_t> avoid;       // frequencies never chosen
  std::vector<std::size_t> preference;  // candidate order; empty: ascending k
};

struct FrequencyPlan {
  std::vector<std::size_t> k;  // one frequency per link, in the order chosen
  double worst_leak = 0;       // the largest leak between the chosen waves
  // Every bin where a chosen wave has energy above occupied_leak of the
  // weakest fundamental: the noise estimate avoids them. Smaller lines left
  // in the noise bins raise the noise estimate by their power (a fraction
  // occupied_leak^2 * SNR^2 of a bin's), and so widen the CI. Pair products
  // are not counted: they carry energy only when links interact, and then
  // their lines in the noise bins widen the CI in the same way.
  std::vector<std::size_t> occupied;
};

// A plan for `links` links, or nullopt when N is too small to hold them.
// Throws std::invalid_argument for N not a power of two >= 8, links == 0,
// min_bins_per_period < 4 or max_leak outside (0, 1).
std::optional<FrequencyPlan> plan_frequencies(std::size_t links,
                                              const FrequencyPlanOptions& options);

// The smallest N (a power of two from `options.bins` up to max_bins) whose
// plan holds `links` links, with that plan; nullopt when none does.
struct SizedFrequencyPlan {
  std::size_t bins = 0;
  FrequencyPlan plan;
};
std::optional<SizedFrequencyPlan> smallest_frequency_plan(std::size_t links,
                                                          FrequencyPlanOptions options,
                                                          std::size_t max_bins);

// Bin means of the product of two unit square waves (duty 1/2, the
// convention of square_wave_bin_means): the fraction of bin i during which
// both are high.
std::vector<double> square_wave_product_bin_means(std::size_t bins, double period_a_bins,
                                                  double phase_a_bins, double period_b_bins,
                                                  double phase_b_bins);

// Scales amplitudes down together so that their sum is at most budget_ns
// (unchanged when it already is). Throws std::invalid_argument for a
// negative amplitude or a budget <= 0.
std::vector<double> fit_amplitudes_to_budget(std::vector<double> amplitudes_ns, double budget_ns);

}  // namespace nabla::analysis
