#include "nabla/loadgen/schedule.hh"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace nabla::loadgen {

void validate(const ScheduleSpec& spec) {
  if (spec.kind == ScheduleKind::kTrace) {
    // An empty trace is only valid as a split() part (origin set): it sends nothing.
    if (spec.trace_ns.empty() && !spec.trace_origin_ns)
      throw std::invalid_argument("schedule: empty trace");
    for (size_t i = 1; i < spec.trace_ns.size(); ++i) {
      if (spec.trace_ns[i] < spec.trace_ns[i - 1]) {
        throw std::invalid_argument("schedule: trace times decrease");
      }
    }
    return;
  }
  if (!(spec.rate_per_s > 0) || !std::isfinite(spec.rate_per_s)) {
    throw std::invalid_argument("schedule: rate must be positive and finite");
  }
  if (!(spec.uniform_spread >= 0 && spec.uniform_spread <= 1)) {
    throw std::invalid_argument("schedule: uniform spread must be in [0,1]");
  }
  if (!(spec.lognormal_sigma >= 0)) throw std::invalid_argument("schedule: sigma must be >= 0");
}

std::vector<ScheduleSpec> split(const ScheduleSpec& spec, int parts) {
  validate(spec);
  if (parts < 1) throw std::invalid_argument("schedule: parts must be >= 1");
  std::vector<ScheduleSpec> out(static_cast<size_t>(parts), spec);
  for (int i = 0; i < parts; ++i) {
    auto& part = out[static_cast<size_t>(i)];
    if (spec.kind == ScheduleKind::kTrace) {
      part.trace_ns.clear();
      for (size_t k = static_cast<size_t>(i); k < spec.trace_ns.size();
           k += static_cast<size_t>(parts)) {
        part.trace_ns.push_back(spec.trace_ns[k]);
      }
      part.trace_origin_ns = spec.trace_origin_ns.value_or(spec.trace_ns.front());
    } else {
      part.rate_per_s = spec.rate_per_s / parts;
    }
  }
  return out;
}

int64_t split_phase_ns(const ScheduleSpec& spec, int index, int parts) {
  if (spec.kind == ScheduleKind::kFixed) {
    return static_cast<int64_t>(std::llround(index * (1e9 / spec.rate_per_s)));
  }
  (void)parts;
  return 0;
}

std::vector<int64_t> load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::system_error(errno, std::system_category(), "open trace " + path);
  std::vector<int64_t> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || p != line.data() + line.size()) {
      throw std::invalid_argument(path + ":" + std::to_string(n) + ": not an integer ns time");
    }
    if (!out.empty() && v < out.back()) {
      throw std::invalid_argument(path + ":" + std::to_string(n) + ": time decreases");
    }
    out.push_back(v);
  }
  return out;
}

Schedule::Schedule(ScheduleSpec spec, int64_t start_ns, uint64_t seed)
    : spec_(std::move(spec)), start_ns_(start_ns), rng_(seed) {
  validate(spec_);
  if (spec_.kind != ScheduleKind::kTrace) mean_gap_ns_ = 1e9 / spec_.rate_per_s;
}

double Schedule::draw_gap_ns() {
  switch (spec_.kind) {
    case ScheduleKind::kExponential:
      return std::exponential_distribution<double>(1.0 / mean_gap_ns_)(rng_);
    case ScheduleKind::kFixed:
      return mean_gap_ns_;
    case ScheduleKind::kLognormal: {
      const double s = spec_.lognormal_sigma;
      const double mu = std::log(mean_gap_ns_) - s * s / 2;  // E[gap] = exp(mu + s²/2)
      return std::lognormal_distribution<double>(mu, s)(rng_);
    }
    case ScheduleKind::kUniform: {
      const double w = spec_.uniform_spread * mean_gap_ns_;
      return std::uniform_real_distribution<double>(mean_gap_ns_ - w, mean_gap_ns_ + w)(rng_);
    }
    case ScheduleKind::kTrace:
      break;
  }
  return 0;
}

std::optional<int64_t> Schedule::peek() {
  if (peeked_) return peeked_;
  if (spec_.kind == ScheduleKind::kTrace) {
    if (issued_ >= spec_.trace_ns.size()) return std::nullopt;
    peeked_ = start_ns_ +
              (spec_.trace_ns[issued_] - spec_.trace_origin_ns.value_or(spec_.trace_ns.front()));
    return peeked_;
  }
  // The first request goes at start; every later one a drawn gap after the last.
  if (issued_ > 0) offset_ns_ += draw_gap_ns();
  peeked_ = start_ns_ + static_cast<int64_t>(std::llround(offset_ns_));
  return peeked_;
}

std::optional<int64_t> Schedule::next() {
  auto t = peek();
  if (t) {
    ++issued_;
    peeked_.reset();
  }
  return t;
}

}  // namespace nabla::loadgen
