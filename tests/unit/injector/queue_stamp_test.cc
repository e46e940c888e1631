// queued_mono_ns: the kernel's NFQA_TIMESTAMP, in either clock, onto
// CLOCK_MONOTONIC, and the stamps that must be refused.
#include <gtest/gtest.h>

#include <cstdint>

#include "nabla/injector/nfqueue.hh"

namespace nabla::injector {
namespace {

constexpr int64_t kMono = 5'000'000'000'000;          // ~83 min of uptime
constexpr int64_t kReal = 1'795'000'000'000'000'000;  // 2026, wall clock
constexpr int64_t kUs = 1000;

// The stamp is truncated to the µs; the end of that µs is taken (999 ns
// later), so a delay counted from it can never end early.
TEST(QueueStamp, ARealtimeStampMovesByItsAgeOntoTheMonotonicClock) {
  // Stamped in the µs that began 37 us before the receive call.
  EXPECT_EQ(queued_mono_ns(kReal - 37 * kUs, kMono, kReal), kMono - 37 * kUs + 999);
  // Stamped in the receive call's own µs (its end lies in the future): now.
  EXPECT_EQ(queued_mono_ns(kReal, kMono, kReal), kMono);
  EXPECT_EQ(queued_mono_ns(kReal - 500, kMono, kReal), kMono);
}

TEST(QueueStamp, AMonotonicStampIsTakenAsItIs) {
  // TCP's departure time (EDT) is CLOCK_MONOTONIC.
  EXPECT_EQ(queued_mono_ns(kMono - 120 * kUs, kMono, kReal), kMono - 120 * kUs + 999);
}

// A queue that asked for no receive stamps (direction out) reads only the
// monotonic clock and passes 0 for realtime: TCP's stamps still convert,
// and nothing is taken for a realtime stamp.
TEST(QueueStamp, WithoutARealtimeReadingOnlyMonotonicStampsCount) {
  EXPECT_EQ(queued_mono_ns(kMono - 120 * kUs, kMono, 0), kMono - 120 * kUs + 999);
  EXPECT_EQ(queued_mono_ns(kReal - 37 * kUs, kMono, 0), 0);
}

TEST(QueueStamp, FutureStaleAndMissingStampsAreRefused) {
  EXPECT_EQ(queued_mono_ns(0, kMono, kReal), 0);
  EXPECT_EQ(queued_mono_ns(kReal + kUs, kMono, kReal), 0);            // a clock step backwards
  EXPECT_EQ(queued_mono_ns(kMono + kUs, kMono, kReal), 0);            // an EDT still in the future
  EXPECT_EQ(queued_mono_ns(kReal - 2'000'000'000, kMono, kReal), 0);  // older than 1 s
  EXPECT_EQ(queued_mono_ns(kReal - 3 * kUs, kMono, kReal, kUs), 0);   // older than max_age
  EXPECT_EQ(queued_mono_ns(12345, kMono, kReal), 0);                  // neither clock
}

}  // namespace
}  // namespace nabla::injector
