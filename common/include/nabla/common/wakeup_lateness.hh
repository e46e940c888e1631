#pragma once
// Timer wake-up lateness, measured while a loop runs, and the lead a
// self-calibrated timer arms by (docs/timing.md).
//
// A thread that sleeps until a deadline wakes some time after it: the
// hypervisor, the idle states of the CPU and the scheduler add 20-90 µs on
// the 2-vCPU VMs nabla is developed on, and differently on every machine. A
// fixed spin window is therefore wrong everywhere but where it was tuned.
// Instead the loop records how late each of its own timer wake-ups was
// (wake time minus the time the timer was armed for) and arms the next timer
// early by a high quantile of the recent lateness, then spins to the
// deadline. The lead follows the machine: it grows while the host is noisy
// and shrinks when it calms down.
//
// Pure policy: the caller measures and records; time is an input. Not
// thread-safe (one loop owns one).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nabla::common {

struct WakeupLatenessOptions {
  std::size_t window = 256;  // most recent wake-ups kept
  // The lead is this quantile of the window: most wake-ups then come before
  // the deadline and spin to it; the rest are late by less than they were.
  double lead_quantile = 0.95;
  // Upper bound of the lead, and so of the spin per deadline: on a host
  // whose wake-ups are later than this, precision is given up before CPU.
  int64_t max_lead_ns = 500'000;
  // The lead is recomputed after this many new records (a sort of the window).
  std::size_t refresh_every = 16;
};

struct WakeupLatenessSummary {
  std::size_t samples = 0;  // in the window
  uint64_t recorded = 0;    // since construction
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p99_ns = 0;
  int64_t max_ns = 0;
  int64_t lead_ns = 0;
};

class WakeupLateness {
 public:
  explicit WakeupLateness(WakeupLatenessOptions options = {});

  // One wake-up: how long after the armed time the thread ran (negative
  // values, a clock read before the expiry was seen, count as 0).
  void record(int64_t lateness_ns);

  // The lead to arm the next timer by: 0 before the first record.
  int64_t lead_ns() const { return lead_ns_; }

  // Quantiles of the window (0 when empty) and the current lead.
  WakeupLatenessSummary summary() const;

  const WakeupLatenessOptions& options() const { return options_; }

 private:
  void refresh();

  WakeupLatenessOptions options_;
  std::vector<int64_t> ring_;
  std::size_t next_ = 0;
  uint64_t recorded_ = 0;
  std::size_t since_refresh_ = 0;
  int64_t lead_ns_ = 0;
};

// The q-quantile (nearest rank, q in [0, 1]) of values; 0 when empty.
int64_t nearest_rank_quantile(std::vector<int64_t> values, double q);

// Sleeps `count` times until an absolute CLOCK_MONOTONIC deadline `period_ns`
// ahead (timer slack 1 ns for the calling thread) and records each wake-up's
// lateness into `into`. For a loop's first lead, and for --check. Blocks for
// about count x period_ns.
void probe_wakeup_lateness(WakeupLateness& into, int count, int64_t period_ns);

}  // namespace nabla::common
