#pragma once
// Waveforms: the level (0 .. 1) of a delay or a fault, as a pure function of
// now. A delay is amplitude × level; a fault's magnitude (loss and
// corruption probabilities, jitter, reorder chance, rate-limit strength) is
// its own parameter × level.
//
// A waveform is anchored at the injection's start (start_ns) and shifted by
// phase_ns. Square: in each period the first duty * period has level 1, the
// rest 0. Sine: level (1 + cos(2π t / period)) / 2, so it starts at 1 and
// reaches 0 in mid-period. Either stays at 0 for good after `cycles` full
// periods (0 = forever). Trace: the points' levels, interpolated linearly or
// held (step), the trace played looped or once (then 0 for good after its
// end). Constant: always 1, one endless cycle 0. Off: always 0.
//
// Accounting buckets: a point is in the high half when its level is at
// least 1/2 (for a square wave exactly its high part); its cycle is the
// period index, and for a trace the segment index (segment i runs from point
// i to point i+1, counted on across loops).
#include <cstdint>
#include <memory>
#include <vector>

#include "nabla/common/protocol/injectd.hh"

namespace nabla::injector {

using WaveKind = common::protocol::WaveKind;  // as requested on the wire
using TracePoint = common::protocol::TracePoint;
using TraceInterpolation = common::protocol::TraceInterpolation;

enum class WaveHalf : uint8_t { kLow = 0, kHigh = 1 };

struct WavePoint {
  WaveHalf half = WaveHalf::kLow;
  int64_t cycle = 0;      // 0-based period (trace: segment) index; -1 before the start
  bool finished = false;  // all `cycles` done, or a trace played once is over
  double level = 0.0;     // 0 .. 1
};

// A trace's samples, shared by the copies of one waveform (every fault of
// an injection may carry the same trace).
struct TraceShape {
  std::vector<TracePoint> points;  // >= 2, the first at 0, strictly increasing
  bool loop = true;
  TraceInterpolation interpolation = TraceInterpolation::kLinear;

  int64_t length_ns() const { return points.back().t_ns; }
  // Level and segment at `within_ns` in [0, length_ns).
  WavePoint at(int64_t within_ns) const;
};

struct Waveform {
  WaveKind kind = WaveKind::kOff;
  double amplitude = 0.0;
  int64_t period_ns = 0;  // square and sine, > 0
  double duty = 0.5;      // square only, fraction of the period that is high
  int64_t phase_ns = 0;   // shifts the wave: time t uses t - start + phase
  int64_t cycles = 0;     // square and sine, 0 = forever
  int64_t start_ns = 0;
  std::shared_ptr<const TraceShape> trace;  // trace only

  static Waveform off() { return Waveform{}; }
  static Waveform constant(double amplitude, int64_t start_ns = 0) {
    Waveform w;
    w.kind = WaveKind::kConstant;
    w.amplitude = amplitude;
    w.start_ns = start_ns;
    return w;
  }
  static Waveform square(double amplitude, int64_t period_ns, double duty = 0.5,
                         int64_t phase_ns = 0, int64_t cycles = 0, int64_t start_ns = 0) {
    return Waveform{WaveKind::kSquare, amplitude, period_ns, duty, phase_ns, cycles, start_ns, {}};
  }
  static Waveform sine(double amplitude, int64_t period_ns, int64_t phase_ns = 0,
                       int64_t cycles = 0, int64_t start_ns = 0) {
    return Waveform{WaveKind::kSine, amplitude, period_ns, 0.5, phase_ns, cycles, start_ns, {}};
  }
  static Waveform from_trace(double amplitude, TraceShape shape, int64_t start_ns = 0) {
    Waveform w = constant(amplitude, start_ns);
    w.kind = WaveKind::kTrace;
    w.trace = std::make_shared<const TraceShape>(std::move(shape));
    return w;
  }

  WavePoint at(int64_t now_ns) const;
  double level(int64_t now_ns) const { return at(now_ns).level; }
  bool high(int64_t now_ns) const { return at(now_ns).half == WaveHalf::kHigh; }
  double value(int64_t now_ns) const { return amplitude * level(now_ns); }

 private:
  WavePoint periodic_at(int64_t t_ns) const;
  WavePoint trace_at(int64_t t_ns) const;
};

}  // namespace nabla::injector
