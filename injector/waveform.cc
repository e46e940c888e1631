#include "nabla/injector/waveform.hh"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

namespace nabla::injector {

namespace {

WavePoint with_level(WavePoint p, double level) {
  p.level = level;
  p.half = level >= 0.5 ? WaveHalf::kHigh : WaveHalf::kLow;
  return p;
}

}  // namespace

WavePoint TraceShape::at(int64_t within_ns) const {
  // The segment [points[i], points[i+1]) holding within_ns.
  const auto after =
      std::upper_bound(points.begin(), points.end(), within_ns,
                       [](int64_t t, const TracePoint& point) { return t < point.t_ns; });
  const auto i = static_cast<size_t>(std::max<std::ptrdiff_t>(after - points.begin() - 1, 0));
  const size_t last_segment = points.size() - 2;
  const size_t segment = std::min(i, last_segment);
  const TracePoint& from = points[segment];
  const TracePoint& to = points[segment + 1];
  double level = from.level;
  if (interpolation == TraceInterpolation::kLinear) {
    const double fraction =
        static_cast<double>(within_ns - from.t_ns) / static_cast<double>(to.t_ns - from.t_ns);
    level = from.level + (to.level - from.level) * std::clamp(fraction, 0.0, 1.0);
  }
  WavePoint p;
  p.cycle = static_cast<int64_t>(segment);
  return with_level(p, level);
}

WavePoint Waveform::at(int64_t now_ns) const {
  switch (kind) {
    case WaveKind::kOff:
      return WavePoint{};
    case WaveKind::kConstant:
      return with_level(WavePoint{}, 1.0);
    case WaveKind::kSquare:
    case WaveKind::kSine:
    case WaveKind::kTrace:
      break;
  }
  const int64_t t = now_ns - start_ns + phase_ns;
  if (t < 0) {
    WavePoint before;
    before.cycle = -1;
    return before;
  }
  return kind == WaveKind::kTrace ? trace_at(t) : periodic_at(t);
}

WavePoint Waveform::periodic_at(int64_t t_ns) const {
  WavePoint p;
  if (period_ns <= 0) return p;
  p.cycle = t_ns / period_ns;
  if (cycles > 0 && p.cycle >= cycles) {
    p.cycle = cycles;
    p.finished = true;
    return p;
  }
  const int64_t within = t_ns % period_ns;
  if (kind == WaveKind::kSquare) {
    const double high_ns = duty * static_cast<double>(period_ns);
    return with_level(p, static_cast<double>(within) < high_ns ? 1.0 : 0.0);
  }
  const double angle =
      2.0 * std::numbers::pi * static_cast<double>(within) / static_cast<double>(period_ns);
  return with_level(p, 0.5 * (1.0 + std::cos(angle)));
}

WavePoint Waveform::trace_at(int64_t t_ns) const {
  WavePoint p;
  if (!trace || trace->points.size() < 2) return p;
  const int64_t length = trace->length_ns();
  const auto segments = static_cast<int64_t>(trace->points.size() - 1);
  if (!trace->loop && t_ns >= length) {
    p.cycle = segments;
    p.finished = true;
    return p;
  }
  const int64_t loop = t_ns / length;
  p = trace->at(t_ns % length);
  p.cycle += loop * segments;
  return p;
}

}  // namespace nabla::injector
