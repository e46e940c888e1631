// StopSignals: each mode takes a raised SIGINT/SIGTERM, and the mask and
// handlers are as before once it is gone.
#include "nabla/common/stop_signals.hh"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace nabla::common {
namespace {

using Mode = StopSignals::Mode;

bool blocked(int signo) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, signo) == 1;
}

using Handler = void (*)(int);

Handler handler_of(int signo) {
  struct sigaction now {};
  ::sigaction(signo, nullptr, &now);
  return now.sa_handler;
}

volatile sig_atomic_t g_test_handler_calls = 0;
void test_handler(int) {
  g_test_handler_calls = g_test_handler_calls + 1;
}

// Installs test_handler for `signo` for the life of the object.
class TestHandler {
 public:
  explicit TestHandler(int signo) : signo_(signo) {
    struct sigaction sa {};
    sa.sa_handler = test_handler;
    sigemptyset(&sa.sa_mask);
    ::sigaction(signo_, &sa, &old_);
    g_test_handler_calls = 0;
  }
  ~TestHandler() { ::sigaction(signo_, &old_, nullptr); }

 private:
  int signo_;
  struct sigaction old_ {};
};

TEST(StopSignals, BlockTakesARaisedSignalAndUnblocksAfter) {
  ASSERT_FALSE(blocked(SIGINT));
  {
    StopSignals stop(Mode::kBlock);
    EXPECT_TRUE(blocked(SIGINT));
    EXPECT_TRUE(blocked(SIGTERM));
    EXPECT_EQ(stop.take(), 0);
    EXPECT_FALSE(stop.stopped());
    ASSERT_EQ(::raise(SIGINT), 0);  // pending: blocked
    EXPECT_EQ(stop.take(), SIGINT);
    EXPECT_TRUE(stop.stopped());
    EXPECT_EQ(stop.flag().load(), SIGINT);
    EXPECT_EQ(stop.wait_for(0), SIGINT);  // kept
  }
  EXPECT_FALSE(blocked(SIGINT));
  EXPECT_FALSE(blocked(SIGTERM));
}

TEST(StopSignals, BlockWaitForTimesOutThenSeesTheSignal) {
  StopSignals stop(Mode::kBlock);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(stop.wait_for(20'000'000), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(15));
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(stop.wait_for(1'000'000'000), SIGTERM);
  EXPECT_EQ(stop.wait(), SIGTERM);
}

TEST(StopSignals, BlockKeepsWhatWasBlockedBefore) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &term, &before);
  {
    StopSignals stop(Mode::kBlock, {SIGINT});
    EXPECT_TRUE(blocked(SIGINT));
  }
  EXPECT_FALSE(blocked(SIGINT));
  EXPECT_TRUE(blocked(SIGTERM));
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

TEST(StopSignals, WatchSetsTheFlagFromItsThread) {
  {
    StopSignals stop(Mode::kWatch);
    EXPECT_TRUE(blocked(SIGTERM));
    EXPECT_FALSE(stop.stopped());
    // Process-directed, as from kill(1): the watcher thread takes it.
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    EXPECT_EQ(stop.wait_for(5'000'000'000), SIGTERM);
    EXPECT_EQ(stop.flag().load(), SIGTERM);
  }
  EXPECT_FALSE(blocked(SIGTERM));
}

TEST(StopSignals, HandleSetsTheFlagAndRestoresTheHandlers) {
  TestHandler previous(SIGINT);
  ASSERT_EQ(handler_of(SIGHUP), SIG_DFL);
  {
    StopSignals stop(Mode::kHandle, {SIGINT, SIGTERM, SIGHUP});
    EXPECT_FALSE(blocked(SIGINT));  // children must not inherit a block
    EXPECT_NE(handler_of(SIGINT), test_handler);
    EXPECT_FALSE(stop.stopped());
    ASSERT_EQ(::raise(SIGHUP), 0);  // the handler runs before raise returns
    EXPECT_EQ(stop.received(), SIGHUP);
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_EQ(stop.received(), SIGHUP);  // the first is kept
    EXPECT_EQ(stop.wait_for(0), SIGHUP);
  }
  EXPECT_EQ(handler_of(SIGINT), test_handler);
  EXPECT_EQ(handler_of(SIGHUP), SIG_DFL);
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_EQ(g_test_handler_calls, 1);
}

TEST(StopSignals, HandleStartsClearAndWaitForSeesALaterSignal) {
  {
    StopSignals first(Mode::kHandle);
    ASSERT_EQ(::raise(SIGTERM), 0);
    EXPECT_TRUE(first.stopped());
  }
  TestHandler guard(SIGTERM);  // a stray SIGTERM after the scope must not end the test
  StopSignals stop(Mode::kHandle);
  EXPECT_FALSE(stop.stopped());
  EXPECT_EQ(stop.wait_for(10'000'000), 0);
  std::thread later([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(::getpid(), SIGTERM);
  });
  EXPECT_EQ(stop.wait_for(5'000'000'000), SIGTERM);
  later.join();
}

TEST(StopSignals, OneHandlerAtATime) {
  StopSignals stop(Mode::kHandle);
  EXPECT_THROW({ StopSignals again(Mode::kHandle); }, std::logic_error);
  EXPECT_FALSE(stop.stopped());
}

}  // namespace
}  // namespace nabla::common
