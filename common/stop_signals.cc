#include "nabla/common/stop_signals.hh"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <stdexcept>

namespace nabla::common {
namespace {

static_assert(std::atomic<int>::is_always_lock_free, "the handler stores into an atomic int");

// kHandle's flag: a handler can reach only what is global.
std::atomic<int> g_handled{0};
std::atomic<bool> g_handler_installed{false};

void on_stop_signal(int signo) {
  int none = 0;
  g_handled.compare_exchange_strong(none, signo);
}

timespec to_timespec(std::int64_t ns) {
  ns = std::max<std::int64_t>(ns, 0);
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

}  // namespace

StopSignals::StopSignals(Mode mode, std::initializer_list<int> signals)
    : mode_(mode), signals_(signals) {
  sigemptyset(&set_);
  for (int s : signals_) sigaddset(&set_, s);
  if (mode_ == Mode::kHandle) {
    if (g_handler_installed.exchange(true)) {
      throw std::logic_error("StopSignals: a kHandle one is already held");
    }
    g_handled.store(0);
    flag_ = &g_handled;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    old_actions_.resize(signals_.size());
    for (std::size_t i = 0; i < signals_.size(); ++i) {
      ::sigaction(signals_[i], &sa, &old_actions_[i]);
    }
    return;
  }
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  if (mode_ == Mode::kWatch) {
    try {
      watcher_ = std::thread([this] {
        while (!done_.load()) {
          timespec ts = to_timespec(100'000'000);
          const int sig = sigtimedwait(&set_, nullptr, &ts);
          int none = 0;
          if (sig > 0) received_.compare_exchange_strong(none, sig);
        }
      });
    } catch (...) {
      restore();
      throw;
    }
  }
}

StopSignals::~StopSignals() {
  if (watcher_.joinable()) {
    done_.store(true);
    watcher_.join();
  }
  restore();
}

void StopSignals::restore() {
  if (mode_ == Mode::kHandle) {
    for (std::size_t i = 0; i < signals_.size(); ++i) {
      ::sigaction(signals_[i], &old_actions_[i], nullptr);
    }
    g_handler_installed.store(false);
  } else {
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
}

int StopSignals::wait_for(std::int64_t timeout_ns) {
  using Clock = std::chrono::steady_clock;
  constexpr std::int64_t kLongestNs = 1'000'000'000'000'000'000;  // ~31 years: no overflow
  const auto deadline =
      Clock::now() + std::chrono::nanoseconds(std::clamp<std::int64_t>(timeout_ns, 0, kLongestNs));
  auto left_ns = [&deadline] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count();
  };
  // kWatch and kHandle: the flag is set elsewhere; look at it often.
  constexpr std::int64_t kPollNs = 10'000'000;
  while (!stopped()) {
    const std::int64_t left = left_ns();
    if (mode_ == Mode::kBlock) {
      // Again after EINTR (a handled signal, or a stop and SIGCONT).
      const timespec ts = to_timespec(left);
      const int sig = sigtimedwait(&set_, nullptr, &ts);
      if (sig > 0) {
        received_.store(sig);
        break;
      }
      if (errno != EINTR || left <= 0) return 0;
    } else {
      if (left <= 0) return 0;
      const timespec ts = to_timespec(std::min(kPollNs, left));
      ::nanosleep(&ts, nullptr);
    }
  }
  return received();
}

int StopSignals::wait() {
  while (true) {
    if (const int sig = wait_for(1'000'000'000)) return sig;
  }
}

}  // namespace nabla::common
