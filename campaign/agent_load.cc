// The load agents' LoadRunner; see agent_load.hh.
#include "nabla/campaign/agent_load.hh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "nabla/common/clock.hh"
#include "nabla/common/local_keys.hh"

namespace nabla::campaign {
namespace {

class AgentRun final : public LoadRun {
 public:
  AgentRun(const loadgen::RoundRunner& runner, std::function<void()> stop_all,
           const std::function<std::int64_t()>& clock, loadgen::RoundRequest request,
           std::int64_t start_ns)
      : stop_all_(std::move(stop_all)) {
    thread_ = std::thread([this, runner, clock, request = std::move(request), start_ns]() mutable {
      try {
        // The lead from now, so the round's start on this clock is start_ns
        // (within the calls' time).
        request.lead_ns = std::max<std::int64_t>(0, start_ns - clock());
        result_ = runner(request).merged;
      } catch (...) {
        error_ = std::current_exception();
      }
      done_.store(true);
    });
  }
  ~AgentRun() override {
    if (!thread_.joinable()) return;
    // Stops the agents' rounds; again while the round is still being
    // started (a round an agent had not yet reported is stopped by the
    // next call), so unwinding never waits for the rest of a phase.
    while (!done_.load()) {
      stop_all_();
      for (int i = 0; i < 10 && !done_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    thread_.join();
  }
  AgentRun(const AgentRun&) = delete;
  AgentRun& operator=(const AgentRun&) = delete;

  loadgen::EngineResult take() override {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return std::move(result_);
  }

 private:
  std::function<void()> stop_all_;
  std::atomic<bool> done_{false};
  loadgen::EngineResult result_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

AgentLoadRunner::AgentLoadRunner(loadgen::RoundRunner runner, std::function<void()> stop_all,
                                 std::function<std::int64_t()> clock)
    : runner_(std::move(runner)), stop_all_(std::move(stop_all)), clock_(std::move(clock)) {}

std::unique_ptr<LoadRun> AgentLoadRunner::start(const loadgen::EngineConfig& config,
                                                std::int64_t start_ns) {
  loadgen::RoundRequest request;
  request.engine = config;
  request.duration_ns = config.duration_ns;
  request.index = rounds_++;
  return std::make_unique<AgentRun>(runner_, stop_all_, clock_, std::move(request), start_ns);
}

std::unique_ptr<loadd::AgentPool> connect_campaign_agents(
    const std::vector<loadd::AgentAddress>& agents, const std::optional<std::string>& key_file,
    const std::string& owner) {
  loadd::AgentPoolOptions options;
  options.owner = owner;
  options.clock = common::monotonic_ns;
  options.key_for = [key_file](const loadd::AgentAddress& a) {
    return common::client_key(key_file, common::kLoaddKeyName, a.host, a.port);
  };
  return std::make_unique<loadd::AgentPool>(agents, std::move(options));
}

}  // namespace nabla::campaign
