#include "nabla/analysis/frequency_plan.hh"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "nabla/analysis/fft.hh"
#include "nabla/analysis/square_wave_synth.hh"

namespace nabla::analysis {
namespace {

// Phases (in bins) at which waves are evaluated: the links start together
// but their edges fall anywhere within a bin.
constexpr double kPhases[] = {0.0, 0.25, 0.5, 0.75};
// The search gives up (no plan) after this many partial sets.
constexpr std::size_t kMaxSearchNodes = 200'000;

struct Interval {
  double begin = 0;
  double end = 0;
};

// The parts of bin [i, i+1) during which a unit wave is high.
std::vector<Interval> high_parts(std::size_t i, double period, double phase) {
  std::vector<Interval> parts;
  const double lo = static_cast<double>(i);
  const double first_cycle = std::floor((lo - phase) / period) - 1;
  for (double c = first_cycle; c <= first_cycle + 3; ++c) {
    const double begin = std::max(lo, phase + c * period);
    const double end = std::min(lo + 1, phase + c * period + period / 2);
    if (end > begin) parts.push_back({begin, end});
  }
  return parts;
}

void validate(std::size_t links, const FrequencyPlanOptions& o) {
  if (o.bins < 8 || !std::has_single_bit(o.bins)) {
    throw std::invalid_argument("frequency plan: bins must be a power of two >= 8");
  }
  if (links == 0) throw std::invalid_argument("frequency plan: no links");
  if (o.min_bins_per_period < 4) {
    throw std::invalid_argument("frequency plan: min_bins_per_period must be >= 4");
  }
  if (!(o.max_leak > 0 && o.max_leak < 1) || !(o.occupied_leak > 0 && o.occupied_leak < 1)) {
    throw std::invalid_argument("frequency plan: max_leak and occupied_leak must be in (0, 1)");
  }
}

// Spectra of the candidate waves and, on demand, of their pair products,
// each the largest magnitude per bin over the evaluated phases.
class Spectra {
 public:
  Spectra(std::size_t bins, std::vector<std::size_t> candidates)
      : n_(bins), candidates_(std::move(candidates)) {
    for (std::size_t k : candidates_) {
      std::vector<double> worst(n_ / 2 + 1, 0.0);
      for (double phase : kPhases) {
        const auto w = square_wave_bin_means(n_, period(k), phase, 1.0);
        const auto s = rfft(w);
        for (std::size_t b = 0; b < s.size(); ++b) worst[b] = std::max(worst[b], std::abs(s[b]));
      }
      wave_[k] = std::move(worst);
      own_[k] = square_wave_min_coefficient_magnitude(n_, k, period(k));
    }
  }

  const std::vector<std::size_t>& candidates() const { return candidates_; }
  double own(std::size_t k) const { return own_.at(k); }
  double wave_at(std::size_t from, std::size_t bin) const { return wave_.at(from)[bin]; }

  const std::vector<double>& product(std::size_t a, std::size_t b) {
    compute_product(a, b);
    return product_.at(std::minmax(a, b));
  }

  // How far the product's line at a's (or b's) own frequency is from half
  // that link's wave (the other's mean), relative to the link's coefficient.
  double own_line_deviation(std::size_t a, std::size_t b) {
    compute_product(a, b);
    return own_deviation_.at(std::minmax(a, b));
  }

 private:
  double period(std::size_t k) const { return static_cast<double>(n_) / static_cast<double>(k); }

  void compute_product(std::size_t a, std::size_t b) {
    const auto key = std::minmax(a, b);
    if (product_.count(key) != 0) return;
    std::vector<double> worst(n_ / 2 + 1, 0.0);
    double deviation = 0;
    const auto wa = rfft(square_wave_bin_means(n_, period(a), 0.0, 1.0));
    for (double phase : kPhases) {
      const auto p = rfft(square_wave_product_bin_means(n_, period(a), 0.0, period(b), phase));
      for (std::size_t bin = 0; bin < p.size(); ++bin) {
        worst[bin] = std::max(worst[bin], std::abs(p[bin]));
      }
      const auto wb = rfft(square_wave_bin_means(n_, period(b), phase, 1.0));
      deviation = std::max({deviation, std::abs(p[a] - 0.5 * wa[a]) / own(a),
                            std::abs(p[b] - 0.5 * wb[b]) / own(b)});
    }
    product_.emplace(key, std::move(worst));
    own_deviation_.emplace(key, deviation);
  }

  std::size_t n_;
  std::vector<std::size_t> candidates_;
  std::map<std::size_t, std::vector<double>> wave_;
  std::map<std::size_t, double> own_;
  std::map<std::pair<std::size_t, std::size_t>, std::vector<double>> product_;
  std::map<std::pair<std::size_t, std::size_t>, double> own_deviation_;
};

// The largest leak a set gets from adding k: k's wave into every chosen
// frequency and theirs into k, and every pair product into a third member.
double leak_with(Spectra& s, const std::vector<std::size_t>& chosen, std::size_t k) {
  double worst = 0;
  for (std::size_t c : chosen) {
    worst = std::max(worst, s.wave_at(k, c) / s.own(c));
    worst = std::max(worst, s.wave_at(c, k) / s.own(k));
  }
  for (std::size_t a = 0; a < chosen.size(); ++a) {
    for (std::size_t b = a + 1; b < chosen.size(); ++b) {
      worst = std::max(worst, s.product(chosen[a], chosen[b])[k] / s.own(k));
    }
    worst = std::max(worst, s.own_line_deviation(chosen[a], k));
    const auto& with_k = s.product(chosen[a], k);
    for (std::size_t c : chosen) {
      if (c != chosen[a]) worst = std::max(worst, with_k[c] / s.own(c));
    }
  }
  return worst;
}

std::vector<std::size_t> occupied_bins(Spectra& s, const std::vector<std::size_t>& k,
                                       std::size_t bins, double occupied_leak, double product_leak);

struct Search {
  Spectra& spectra;
  const FrequencyPlanOptions& options;
  std::size_t links;
  std::size_t nodes = 0;
  std::vector<std::size_t> chosen;
  double worst = 0;

  // A full set leaves room for the noise estimate.
  bool enough_free_bins() {
    const auto busy = occupied_bins(spectra, chosen, options.bins, options.occupied_leak,
                                    options.occupied_product_leak);
    return options.bins / 2 - 1 - busy.size() >= options.min_free_bins;
  }

  bool extend(std::size_t from) {
    if (chosen.size() == links) return enough_free_bins();
    const auto& cands = spectra.candidates();
    for (std::size_t i = from; i < cands.size(); ++i) {
      if (++nodes > kMaxSearchNodes) return false;
      const double leak = leak_with(spectra, chosen, cands[i]);
      if (leak > options.max_leak) continue;
      const double before = worst;
      chosen.push_back(cands[i]);
      worst = std::max(worst, leak);
      if (extend(i + 1)) return true;
      chosen.pop_back();
      worst = before;
    }
    return false;
  }
};

std::vector<std::size_t> candidate_order(const FrequencyPlanOptions& o) {
  const std::size_t max_k = o.bins / o.min_bins_per_period;
  std::vector<std::size_t> order = o.preference;
  if (order.empty()) {
    for (std::size_t k = 1; k <= max_k; ++k) order.push_back(k);
  }
  std::vector<std::size_t> out;
  for (std::size_t k : order) {
    const bool allowed = k >= std::max<std::size_t>(o.min_k, 1) && k <= max_k &&
                         std::find(o.avoid.begin(), o.avoid.end(), k) == o.avoid.end() &&
                         std::find(out.begin(), out.end(), k) == out.end();
    if (allowed) out.push_back(k);
  }
  return out;
}

std::vector<std::size_t> occupied_bins(Spectra& s, const std::vector<std::size_t>& k,
                                       std::size_t bins, double occupied_leak,
                                       double product_leak) {
  double weakest = s.own(k.front());
  for (std::size_t f : k) weakest = std::min(weakest, s.own(f));
  const double floor = occupied_leak * weakest;
  std::vector<std::size_t> out;
  for (std::size_t bin = 1; bin < bins / 2; ++bin) {
    bool busy = std::find(k.begin(), k.end(), bin) != k.end();
    for (std::size_t a = 0; a < k.size() && !busy; ++a) {
      busy = s.wave_at(k[a], bin) > floor;
      for (std::size_t b = a + 1; b < k.size() && !busy; ++b) {
        busy = s.product(k[a], k[b])[bin] > product_leak * weakest;
      }
    }
    if (busy) out.push_back(bin);
  }
  return out;
}

}  // namespace

std::vector<double> square_wave_product_bin_means(std::size_t bins, double period_a_bins,
                                                  double phase_a_bins, double period_b_bins,
                                                  double phase_b_bins) {
  if (!(period_a_bins > 0) || !(period_b_bins > 0)) {
    throw std::invalid_argument("square wave product: periods must be > 0");
  }
  std::vector<double> out(bins, 0.0);
  for (std::size_t i = 0; i < bins; ++i) {
    for (const Interval& a : high_parts(i, period_a_bins, phase_a_bins)) {
      for (const Interval& b : high_parts(i, period_b_bins, phase_b_bins)) {
        out[i] += std::max(0.0, std::min(a.end, b.end) - std::max(a.begin, b.begin));
      }
    }
  }
  return out;
}

std::optional<FrequencyPlan> plan_frequencies(std::size_t links,
                                              const FrequencyPlanOptions& options) {
  validate(links, options);
  Spectra spectra(options.bins, candidate_order(options));
  Search search{spectra, options, links, 0, {}, 0};
  if (!search.extend(0)) return std::nullopt;
  FrequencyPlan plan;
  plan.k = search.chosen;
  plan.worst_leak = search.worst;
  plan.occupied = occupied_bins(spectra, plan.k, options.bins, options.occupied_leak,
                                options.occupied_product_leak);
  return plan;
}

std::optional<SizedFrequencyPlan> smallest_frequency_plan(std::size_t links,
                                                          FrequencyPlanOptions options,
                                                          std::size_t max_bins) {
  for (std::size_t n = options.bins; n <= max_bins; n *= 2) {
    options.bins = n;
    if (auto plan = plan_frequencies(links, options)) return SizedFrequencyPlan{n, *plan};
  }
  return std::nullopt;
}

std::vector<double> fit_amplitudes_to_budget(std::vector<double> amplitudes_ns, double budget_ns) {
  if (!(budget_ns > 0)) throw std::invalid_argument("amplitude budget must be > 0");
  double sum = 0;
  for (double a : amplitudes_ns) {
    if (!(a >= 0)) throw std::invalid_argument("amplitudes must be >= 0");
    sum += a;
  }
  if (sum <= budget_ns) return amplitudes_ns;
  for (double& a : amplitudes_ns) a *= budget_ns / sum;
  return amplitudes_ns;
}

}  // namespace nabla::analysis
