#pragma once
// Waveforms: when a delay or a fault is "high", as a pure function of now.
//
// A waveform is anchored at the injection's start (start_ns) and shifted by
// phase_ns. Square: in each period the first duty * period is high, the rest
// low; after `cycles` full periods (0 = forever) it stays low for good.
// Constant: always high, one endless cycle 0. Off: always low.
// The amplitude is in the unit of whatever the waveform drives (ns of delay,
// or a probability multiplier for a fault); value() is amplitude while high.
#include <cstdint>

#include "nabla/common/protocol/injectd.hh"

namespace nabla::injector {

using WaveKind = common::protocol::WaveKind;  // as requested on the wire

enum class WaveHalf : uint8_t { kLow = 0, kHigh = 1 };

struct WavePoint {
  WaveHalf half = WaveHalf::kLow;
  int64_t cycle = 0;      // 0-based period index; -1 before the start
  bool finished = false;  // square with `cycles` all done
};

struct Waveform {
  WaveKind kind = WaveKind::kOff;
  double amplitude = 0.0;
  int64_t period_ns = 0;  // square only, > 0
  double duty = 0.5;      // square only, fraction of the period that is high
  int64_t phase_ns = 0;   // shifts the square: time t uses t - start + phase
  int64_t cycles = 0;     // square only, 0 = forever
  int64_t start_ns = 0;

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
    return Waveform{WaveKind::kSquare, amplitude, period_ns, duty, phase_ns, cycles, start_ns};
  }

  WavePoint at(int64_t now_ns) const {
    WavePoint p;
    switch (kind) {
      case WaveKind::kOff:
        return p;
      case WaveKind::kConstant:
        p.half = WaveHalf::kHigh;
        return p;
      case WaveKind::kSquare:
        break;
    }
    if (period_ns <= 0) return p;
    const int64_t t = now_ns - start_ns + phase_ns;
    if (t < 0) {
      p.cycle = -1;
      return p;
    }
    p.cycle = t / period_ns;
    if (cycles > 0 && p.cycle >= cycles) {
      p.cycle = cycles;
      p.finished = true;
      return p;
    }
    const int64_t within = t % period_ns;
    const double high_ns = duty * static_cast<double>(period_ns);
    p.half = static_cast<double>(within) < high_ns ? WaveHalf::kHigh : WaveHalf::kLow;
    return p;
  }

  bool high(int64_t now_ns) const { return at(now_ns).half == WaveHalf::kHigh; }
  double value(int64_t now_ns) const { return high(now_ns) ? amplitude : 0.0; }
};

}  // namespace nabla::injector
