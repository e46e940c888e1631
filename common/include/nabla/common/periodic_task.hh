#pragma once
// A callback run every `period` on a thread of its own until the object is
// destroyed (the daemons' lease checks). What the callback throws is logged
// with `what` and the loop goes on; destruction wakes the thread at once and
// joins it, so the callback never runs after the destructor returns.
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "nabla/common/log.hh"

namespace nabla::common {

class PeriodicTask {
 public:
  PeriodicTask(std::string what, std::chrono::milliseconds period, std::function<void()> tick)
      : what_(std::move(what)),
        period_(period),
        tick_(std::move(tick)),
        thread_([this] { loop(); }) {}
  ~PeriodicTask() {
    {
      std::lock_guard lock(m_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

 private:
  void loop() {
    std::unique_lock lock(m_);
    while (!cv_.wait_for(lock, period_, [this] { return quit_; })) {
      try {
        tick_();
      } catch (const std::exception& e) {
        log_error(what_, ": ", e.what());
      }
    }
  }

  const std::string what_;
  const std::chrono::milliseconds period_;
  const std::function<void()> tick_;
  std::mutex m_;
  std::condition_variable cv_;
  bool quit_ = false;
  std::thread thread_;  // last: started once everything above is set
};

}  // namespace nabla::common
