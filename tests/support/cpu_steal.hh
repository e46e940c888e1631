#pragma once
// How much CPU time the hypervisor took from this VM while a measurement ran:
// the "steal" column of /proc/stat's cpu line, as a fraction of all CPU time
// over the object's lifetime (or since restart()).
//
// Why tests need it: on these lab VMs a busy host takes 0-1% when it is calm
// and 10% or more when other guests compete; then a vCPU is parked for
// milliseconds and every timing bound (a 20 ms delay read as 20.0-20.5 ms, a
// daemon's mean within 0.25 ms of the receiver's) fails for reasons nabla
// cannot see or fix. Timing tests judge their tight bounds when steal stayed
// below kCalmStealFraction, and looser bounds, printed as such, otherwise:
// never no bound at all.
//
// Header-only, like the rest of tests/support.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace nabla::testing {

// Above this share of stolen CPU time the machine is not calm (measured here:
// idle 0.7%, a calm run 1-2%, host contention 10-11%).
inline constexpr double kCalmStealFraction = 0.03;

class CpuSteal {
 public:
  CpuSteal() { restart(); }

  void restart() { read(start_total_, start_steal_); }

  // Stolen share of CPU time since construction or restart(); 0 when
  // /proc/stat cannot be read (no steal column: not a VM).
  double fraction() const {
    std::uint64_t total = 0, steal = 0;
    read(total, steal);
    if (total <= start_total_) return 0.0;
    return static_cast<double>(steal - start_steal_) / static_cast<double>(total - start_total_);
  }

  bool calm() const { return fraction() < kCalmStealFraction; }

  // "calm (steal 1.2%)" or "NOT calm (steal 11%): loose timing bounds", for
  // the test's output.
  std::string describe() const {
    const double f = fraction();
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s (hypervisor steal %.1f%% of CPU time)",
                  f < kCalmStealFraction ? "calm" : "NOT calm, loose timing bounds", 100.0 * f);
    return buf;
  }

 private:
  static void read(std::uint64_t& total, std::uint64_t& steal) {
    std::ifstream in("/proc/stat");
    std::string line;
    std::getline(in, line);
    std::istringstream fields(line);
    std::string cpu;
    fields >> cpu;
    total = 0;
    steal = 0;
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    // (guest time is already inside user and nice).
    std::uint64_t v = 0;
    for (int i = 0; i < 8 && fields >> v; ++i) {
      total += v;
      if (i == 7) steal = v;
    }
  }

  std::uint64_t start_total_ = 0;
  std::uint64_t start_steal_ = 0;
};

}  // namespace nabla::testing
