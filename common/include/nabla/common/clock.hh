#pragma once
// The clocks. Intervals are always measured with monotonic_ns(); realtime_ns()
// is only for wall-clock stamps stored in records and logs, never for
// intervals. Library code that needs "now" should take it as a parameter
// (docs/design.md, "Time and randomness are inputs"); these are for the edges.
#include <cstdint>

namespace nabla::common {

// CLOCK_MONOTONIC in nanoseconds.
int64_t monotonic_ns() noexcept;

// CLOCK_REALTIME in nanoseconds since the Unix epoch.
int64_t realtime_ns() noexcept;

}  // namespace nabla::common
