#pragma once
// Open-loop inter-arrival schedules. The n-th intended send time is computed
// from the start time and the schedule alone (start + sum of the first n
// gaps, accumulated in long double so that 1e6 gaps do not drift), never from
// replies: that is what makes the load open-loop (docs/method.md, "Open loop").
// Randomness is a seeded std::mt19937_64 (docs/design.md, "Time and randomness are inputs").
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace nabla::loadgen {

enum class ScheduleKind { kExponential, kFixed, kLognormal, kUniform, kTrace };

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kExponential;
  double rate_per_s = 1000.0;    // mean rate; unused by kTrace
  double lognormal_sigma = 1.0;  // sigma of log(gap); mu is set so the mean gap is 1/rate
  double uniform_spread = 1.0;   // gaps uniform in mean*[1-spread, 1+spread], spread in [0,1]
  // kTrace: send times in ns relative to any origin, non-decreasing; replayed
  // as start + (t[n] - t[0]).
  std::vector<int64_t> trace_ns;
  // Origin of the trace times; unset means trace_ns.front(). split() sets it
  // so every part replays at the same absolute offsets.
  std::optional<int64_t> trace_origin_ns;
};

// Throws std::invalid_argument for a non-positive rate, spread outside [0,1],
// a negative sigma, or a decreasing or empty trace.
void validate(const ScheduleSpec& spec);

// Splits one schedule into `parts` per-thread schedules whose union has the
// same rate: the rate is divided (a superposition of independent Poisson
// processes is Poisson); kFixed parts are phase-shifted by one gap each;
// kTrace parts take every parts-th entry.
std::vector<ScheduleSpec> split(const ScheduleSpec& spec, int parts);

// Phase offset in ns for part `index` of `parts` of a kFixed split (0 otherwise).
int64_t split_phase_ns(const ScheduleSpec& spec, int index, int parts);

// Reads a trace file: one send time in integer nanoseconds per line (any
// origin); blank lines and lines starting with '#' are skipped. Throws
// std::system_error when the file cannot be opened and std::invalid_argument
// naming the line for a malformed or decreasing entry.
std::vector<int64_t> load_trace(const std::string& path);

class Schedule {
 public:
  Schedule(ScheduleSpec spec, int64_t start_ns, uint64_t seed);

  // Intended send time of the next request (monotonic ns), or nullopt when a
  // trace is exhausted. Never decreases.
  std::optional<int64_t> next();
  // Intended time next() would return, without consuming it.
  std::optional<int64_t> peek();

  uint64_t issued() const { return issued_; }
  double mean_gap_ns() const { return mean_gap_ns_; }

 private:
  double draw_gap_ns();

  ScheduleSpec spec_;
  int64_t start_ns_;
  std::mt19937_64 rng_;
  double mean_gap_ns_ = 0;
  long double offset_ns_ = 0;  // sum of the gaps drawn so far
  uint64_t issued_ = 0;
  std::optional<int64_t> peeked_;
};

}  // namespace nabla::loadgen
