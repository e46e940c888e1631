#include "nabla/analysis/interaction.hh"

#include <cmath>

#include "nabla/analysis/frequency_plan.hh"
#include "nabla/analysis/least_squares.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

struct Pair {
  std::size_t a, b;
};

std::vector<Pair> pairs_of(std::size_t waves) {
  std::vector<Pair> out;
  for (std::size_t a = 0; a < waves; ++a) {
    for (std::size_t b = a + 1; b < waves; ++b) out.push_back({a, b});
  }
  return out;
}

// A constant, each unit wave, then each pair's product wave.
std::vector<std::vector<double>> design(std::size_t bins, const std::vector<WaveInSeries>& waves,
                                        const std::vector<Pair>& pairs) {
  std::vector<std::vector<double>> columns;
  columns.emplace_back(bins, 1.0);
  for (const WaveInSeries& w : waves) {
    columns.push_back(square_wave_bin_means(bins, w.period_bins, w.phase_bins, 1.0));
  }
  for (const Pair& p : pairs) {
    const WaveInSeries &a = waves[p.a], &b = waves[p.b];
    columns.push_back(square_wave_product_bin_means(bins, a.period_bins, a.phase_bins,
                                                    b.period_bins, b.phase_bins));
  }
  return columns;
}

}  // namespace

std::optional<std::vector<InteractionBias>> interaction_biases(
    const std::vector<double>& series_ns, const std::vector<WaveInSeries>& waves) {
  if (waves.size() < 2) return std::nullopt;
  for (const WaveInSeries& w : waves) {
    if (!(w.delta_l_ns > 0) || !(w.period_bins > 0)) return std::nullopt;
  }
  const std::vector<Pair> pairs = pairs_of(waves.size());
  const std::size_t columns = 1 + waves.size() + pairs.size();
  if (series_ns.size() < 2 * columns) return std::nullopt;
  const auto fit = least_squares(design(series_ns.size(), waves, pairs), series_ns);
  if (!fit) return std::nullopt;
  std::vector<InteractionBias> out;
  for (std::size_t j = 0; j < waves.size(); ++j) {
    std::vector<double> weights(columns, 0.0);
    const double scale = 1.0 / (2.0 * waves[j].delta_l_ns);
    for (std::size_t q = 0; q < pairs.size(); ++q) {
      if (pairs[q].a == j || pairs[q].b == j) weights[1 + waves.size() + q] = scale;
    }
    double value = 0;
    for (std::size_t c = 0; c < columns; ++c) value += weights[c] * fit->beta[c];
    out.push_back({value, std::sqrt(fit->variance_of(weights))});
  }
  return out;
}

}  // namespace nabla::analysis
