// common::PeriodicTask: ticks on its own thread, goes on past a throwing
// tick, and its destructor wakes and joins at once (never after a long
// period has run out), after which no tick runs.
#include "nabla/common/periodic_task.hh"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace nabla::common {
namespace {

using namespace std::chrono_literals;

TEST(PeriodicTask, TicksUntilDestroyedAndGoesOnPastAThrowingTick) {
  std::atomic<int> ticks{0};
  {
    PeriodicTask task("test tick", 1ms, [&] {
      if (++ticks == 1) throw std::runtime_error("first tick fails");
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (ticks < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_GE(ticks.load(), 3) << "the loop stopped at the throwing tick";
  const int after = ticks.load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ticks.load(), after) << "a tick ran after the destructor returned";
}

TEST(PeriodicTask, DestructionDoesNotWaitForThePeriod) {
  std::atomic<int> ticks{0};
  const auto start = std::chrono::steady_clock::now();
  {
    PeriodicTask task("test tick", 3600s, [&] { ++ticks; });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  EXPECT_EQ(ticks.load(), 0);
}

}  // namespace
}  // namespace nabla::common
