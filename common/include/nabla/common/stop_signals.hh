#pragma once
// StopSignals: how a command or daemon learns it was asked to stop (SIGINT
// and SIGTERM; `nabla demo` adds SIGHUP). Held for one scope; when it ends
// the previous signal mask or handlers are back.
//
// Three ways to take the signals, for three kinds of callers:
//   kBlock   blocked in the calling thread, and so in every thread started
//            while held; taken with wait_for()/take() between the steps of
//            a loop, or wait() for a daemon's main thread. A child forked
//            meanwhile inherits the block, so start children first (`nabla
//            testbed up`) or use kHandle.
//   kWatch   blocked as with kBlock, and a thread of its own takes them and
//            sets flag(), for work that only polls a flag (a campaign's
//            cancel flag).
//   kHandle  a handler sets flag(); nothing is blocked, so a child started
//            meanwhile gets the default dispositions at exec (`nabla demo`,
//            which forwards the stop to its children). Interrupts the
//            system calls of the thread it lands on (no SA_RESTART). One at
//            a time per process.
// Only the first signal is kept. A signal that arrives after the scope (or
// one left pending under kBlock) meets the previous mask and disposition:
// by default it ends the process.
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <thread>
#include <vector>

namespace nabla::common {

class StopSignals {
 public:
  enum class Mode { kBlock, kWatch, kHandle };

  explicit StopSignals(Mode mode, std::initializer_list<int> signals = {SIGINT, SIGTERM});
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal's number; 0 while none has arrived (under kBlock:
  // been taken by wait_for, take or wait).
  int received() const { return flag_->load(); }
  bool stopped() const { return received() != 0; }
  // The same number, for code that polls a flag (CampaignOptions::cancel).
  const std::atomic<int>& flag() const { return *flag_; }

  // Waits up to `timeout_ns` for a stop signal and returns its number (at
  // once if one arrived before), or 0 when none came in time.
  int wait_for(std::int64_t timeout_ns);
  // A stop signal already pending, without waiting: wait_for(0).
  int take() { return wait_for(0); }
  // Waits for a stop signal as long as it takes.
  int wait();

 private:
  void restore();

  Mode mode_;
  std::vector<int> signals_;
  sigset_t set_{};
  sigset_t old_mask_{};
  std::vector<struct sigaction> old_actions_;
  std::atomic<int> received_{0};
  const std::atomic<int>* flag_ = &received_;
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace nabla::common
