#include "nabla/injector/faults.hh"

#include <algorithm>
#include <cmath>

namespace nabla::injector {

namespace {

// Inverse of the standard normal CDF (Acklam's rational approximation,
// relative error < 1.2e-9), for p in (0, 1).
double inverse_normal_cdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  p = std::clamp(p, 1e-15, 1.0 - 1e-15);
  if (p < kLow) {
    const double q = std::sqrt(-2.0 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  if (p > 1.0 - kLow) {
    const double q = std::sqrt(-2.0 * std::log(1.0 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// netem's pareto table value: Pareto(x_m = 1, shape 3) minus its mean 1.5,
// times 4/3.
double pareto_value(double u) {
  u = std::clamp(u, 0.0, 1.0 - 1e-12);
  return (std::pow(1.0 - u, -1.0 / 3.0) - 1.5) * (4.0 / 3.0);
}

}  // namespace

uint64_t derive_seed(uint64_t injection_seed, uint64_t fault_index) {
  uint64_t z = injection_seed + 0x9e3779b97f4a7c15ULL * (fault_index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Jitter::Jitter(const JitterSpec& spec, uint64_t seed) : spec_(spec), rng_(seed) {}

double Jitter::correlated_uniform() {
  const double u = std::generate_canonical<double, 53>(rng_);
  const double c = std::clamp(spec_.correlation, 0.0, 1.0);
  last_uniform_ = (1.0 - c) * u + c * last_uniform_;
  return last_uniform_;
}

int64_t Jitter::offset_ns(int64_t now_ns) {
  const double level = spec_.wave.level(now_ns);
  if (level <= 0.0 || spec_.jitter_ns <= 0) return 0;
  const double sigma = static_cast<double>(spec_.jitter_ns) * level;
  double x = 0.0;
  switch (spec_.distribution) {
    case JitterDistribution::kUniform:
      x = -1.0 + 2.0 * correlated_uniform();
      break;
    case JitterDistribution::kNormal:
      x = inverse_normal_cdf(correlated_uniform());
      break;
    case JitterDistribution::kPareto:
      x = pareto_value(correlated_uniform());
      break;
    case JitterDistribution::kParetoNormal: {
      // One correlated draw drives both parts, as one netem table lookup does.
      const double u = correlated_uniform();
      x = 0.75 * pareto_value(u) + 0.25 * inverse_normal_cdf(u);
      break;
    }
  }
  const double limit = static_cast<double>(common::protocol::kMaxDelayNs);
  return static_cast<int64_t>(std::llround(std::clamp(x * sigma, -limit, limit)));
}

Loss::Loss(const LossSpec& spec, uint64_t seed) : spec_(spec), rng_(seed) {}

bool Loss::drop(int64_t now_ns) {
  const double level = spec_.wave.level(now_ns);
  if (level <= 0.0) return false;
  if (spec_.model == LossModel::kBernoulli) return unit_(rng_) < spec_.p * level;
  const double transition = unit_(rng_);
  const bool lost = unit_(rng_) < level * (bad_ ? spec_.one_minus_h : spec_.one_minus_k);
  bad_ = bad_ ? !(transition < spec_.r) : transition < spec_.p;
  return lost;
}

Reorder::Reorder(const ReorderSpec& spec, uint64_t seed) : spec_(spec), rng_(seed) {}

bool Reorder::send_now(int64_t now_ns) {
  const double level = spec_.wave.level(now_ns);
  if (level <= 0.0 || spec_.gap <= 0) return false;
  if (counter_ >= spec_.gap - 1 && unit_(rng_) < spec_.probability * level) {
    counter_ = 0;
    return true;
  }
  ++counter_;
  return false;
}

GatedCoin::GatedCoin(const Waveform& wave, double probability, uint64_t seed)
    : wave_(wave), probability_(probability), rng_(seed) {}

bool GatedCoin::flip(int64_t now_ns) {
  const double level = wave_.level(now_ns);
  return level > 0.0 && unit_(rng_) < probability_ * level;
}

RateLimit::RateLimit(const RateLimitSpec& spec) : spec_(spec), tokens_bytes_(spec.burst_bytes) {}

int64_t RateLimit::delay_ns(int64_t now_ns, int64_t bytes) {
  if (!started_) {
    last_departure_ns_ = now_ns;
    started_ = true;
  }
  // The level scales the limit's strength: the bucket fills at rate / level,
  // so level 1 is the requested rate and a level near 0 hardly limits; at
  // level 0 it does not limit and the bucket refills at the requested rate.
  const double level = spec_.wave.level(now_ns);
  const double bytes_per_ns = spec_.rate_bps / 8e9 / (level > 0.0 ? level : 1.0);
  const int64_t t = std::max(now_ns, last_departure_ns_);
  const double refill = static_cast<double>(t - last_departure_ns_) * bytes_per_ns;
  double tokens = std::min(static_cast<double>(spec_.burst_bytes), tokens_bytes_ + refill);
  if (level <= 0.0 || spec_.rate_bps <= 0.0) {
    // Not limiting: keep refilling, do not queue.
    tokens_bytes_ = tokens;
    last_departure_ns_ = t;
    return 0;
  }
  int64_t departure = t;
  const double need = static_cast<double>(bytes);
  if (tokens >= need) {
    tokens -= need;
  } else {
    const double wait_ns = std::ceil((need - tokens) / bytes_per_ns);
    if (static_cast<double>(t - now_ns) + wait_ns > static_cast<double>(spec_.max_wait_ns)) {
      return kBacklogFull;  // the state stays: this packet takes no tokens
    }
    departure = t + static_cast<int64_t>(wait_ns);
    tokens = 0.0;
  }
  tokens_bytes_ = tokens;
  last_departure_ns_ = departure;
  return departure - now_ns;
}

}  // namespace nabla::injector
