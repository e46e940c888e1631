// The production clock and load runner; see environment.hh.
#include "nabla/campaign/environment.hh"

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "nabla/common/clock.hh"

namespace nabla::campaign {
namespace {

class EngineRun final : public LoadRun {
 public:
  EngineRun(loadgen::EngineConfig config, std::int64_t start_ns) {
    config.stop = &stop_;
    thread_ = std::thread([this, config = std::move(config), start_ns] {
      try {
        result_ = loadgen::run_engine(config, start_ns);
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~EngineRun() override {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  EngineRun(const EngineRun&) = delete;
  EngineRun& operator=(const EngineRun&) = delete;

  loadgen::EngineResult take() override {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return std::move(result_);
  }

 private:
  std::atomic<bool> stop_{false};
  loadgen::EngineResult result_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

std::int64_t SystemClock::now_ns() {
  return common::monotonic_ns();
}

void SystemClock::sleep_until(std::int64_t t_ns) {
  const std::int64_t left_ns = t_ns - common::monotonic_ns();
  if (left_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left_ns));
}

std::unique_ptr<LoadRun> EngineLoadRunner::start(const loadgen::EngineConfig& config,
                                                 std::int64_t start_ns) {
  return std::make_unique<EngineRun>(config, start_ns);
}

}  // namespace nabla::campaign
