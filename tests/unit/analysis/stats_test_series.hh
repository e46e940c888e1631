#pragma once
// Deterministic test series for the hypothesis-test unit tests, rebuilt bit
// for bit by bench/analysis/test_vectors.py (which prints the scipy /
// statsmodels reference values pasted into the tests). Only a 64-bit LCG,
// integer arithmetic and multiplications by 0.5 / 0.75 are used, so both
// languages produce identical doubles; std:: distributions are avoided on
// purpose (their output is implementation-defined).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nabla::analysis::testing {

// Knuth's MMIX LCG; small(k) is an integer in [0, k).
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return state_;
  }
  std::int64_t small(std::int64_t k) { return static_cast<std::int64_t>((next() >> 33) % k); }

 private:
  std::uint64_t state_;
};

// Integers -500..500.
inline std::vector<double> white_noise(std::uint64_t seed, std::size_t n) {
  Lcg g(seed);
  std::vector<double> out(n);
  for (auto& v : out) v = static_cast<double>(g.small(1001) - 500);
  return out;
}

inline std::vector<double> random_walk(std::uint64_t seed, std::size_t n) {
  std::vector<double> out = white_noise(seed, n);
  for (std::size_t i = 1; i < n; ++i) out[i] += out[i - 1];
  return out;
}

// y_t = 0.5 y_{t-1} + e_t
inline std::vector<double> ar1_half(std::uint64_t seed, std::size_t n) {
  std::vector<double> out = white_noise(seed, n);
  double prev = 0.0;
  for (auto& v : out) v = prev = 0.5 * prev + v;
  return out;
}

// y_t = e_{t+1} + 0.75 e_t
inline std::vector<double> ma1(std::uint64_t seed, std::size_t n) {
  const std::vector<double> e = white_noise(seed, n + 1);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = e[i + 1] + 0.75 * e[i];
  return out;
}

// Number of draws until small(one_in) == 0: a discrete exponential, with ties.
inline std::vector<double> geometric_gaps(std::uint64_t seed, std::size_t n, std::int64_t one_in) {
  Lcg g(seed);
  std::vector<double> out(n);
  for (auto& v : out) {
    std::int64_t k = 1;
    while (g.small(one_in) != 0) ++k;
    v = static_cast<double>(k);
  }
  return out;
}

inline std::vector<double> uniform_ints(std::uint64_t seed, std::size_t n, std::int64_t k) {
  Lcg g(seed);
  std::vector<double> out(n);
  for (auto& v : out) v = static_cast<double>(g.small(k));
  return out;
}

}  // namespace nabla::analysis::testing
