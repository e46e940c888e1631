#pragma once
// Fakes of the campaign's three seams (nabla/campaign/environment.hh), so a
// whole campaign runs unprivileged in virtual time:
//  - FakeClock: sleep_until jumps to the wake-up time at once and runs the
//    actions scheduled up to it (e.g. setting the cancel flag).
//  - FakeDaemons: serves flows.list from fixed records per node, and holds
//    the injections the campaign starts, stops and renews, with their
//    square waves anchored at the fake clock's time of inject.start. The
//    delay it "adds" is `actual_fraction` of the requested amplitude, and
//    inject.stop reports exactly that per half, so a campaign that divides
//    by the requested amplitude instead of the actual one is off by that
//    factor. An experiment's fault (InjectionRequest::fault) is taken as a
//    constant delay of its amplitude, all of it in the high half.
//  - FakeService: the LoadRunner. A run's samples are Poisson arrivals at
//    the configured rate over the run's duration, each type drawn by the
//    workload's mix, with latency = base + sum over links of
//    gradient[link][type] * delay_on_link(send time) + normal noise; the
//    delays come from the fake daemons' injections (square waves, or a
//    held delay). A link may instead have a response function of the type
//    and the delay, so its gradient depends on the amplitude; a pair of
//    links may interact (a term in the product of their delays).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nabla/campaign/environment.hh"

namespace nabla::campaign::fake {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::int64_t start_ns = 1'000'000'000'000) : now_ns_(start_ns) {}
  std::int64_t now_ns() override { return now_ns_; }
  void sleep_until(std::int64_t t_ns) override;
  // Runs `action` once, when a sleep first reaches `at_ns`.
  void at(std::int64_t at_ns, std::function<void()> action);

 private:
  std::int64_t now_ns_;
  std::multimap<std::int64_t, std::function<void()>> actions_;
};

struct FakeInjection {
  std::string node;
  std::string id;
  InjectionRequest request;
  std::int64_t started_ns = 0;
  std::optional<std::int64_t> stopped_ns;
  bool abandoned = false;  // stopped by abandon_injection (on the way out)
  std::vector<std::int64_t> renewals_ns;
};

// A sniffer's record of one end of a TCP connection with 100 segments and
// 10 kB each way, as FakeDaemons::flows holds them.
FlowEnd tcp_flow_end(const std::string& local, std::uint16_t lport, int pid,
                     const std::string& comm, const std::string& remote, std::uint16_t rport,
                     const std::string& direction);

class FakeDaemons final : public Daemons {
 public:
  explicit FakeDaemons(Clock& clock) : clock_(clock) {}

  // Configuration.
  std::map<std::string, std::vector<FlowEnd>> flows;  // per node with a sniffd
  // When set, flows.list answers every call with these records (all of them
  // changed), as a sniffer whose counts move with the load would.
  std::function<std::vector<FlowEnd>(const std::string& node, std::int64_t now_ns)> live_flows;
  double actual_fraction = 0.8;           // actual delay / requested
  std::set<std::string> refuse_start_on;  // nodes whose inject.start fails
  // lease.renew fails from this renewal on (counted over the whole run).
  std::optional<std::size_t> fail_renewal_from;
  std::function<void(const FakeInjection&)> on_start;  // after each inject.start
  // Before each wave's inject.stop answers: may change what it reports.
  std::function<void(const FakeInjection&, InjectionStats&)> on_stop;

  std::optional<FlowsPage> list_flows(const std::string& node, std::uint64_t cursor) override;
  std::string start_injection(const std::string& node, const InjectionRequest& request) override;
  InjectionStats stop_injection(const std::string& node, const std::string& id) override;
  void abandon_injection(const std::string& node, const std::string& id) noexcept override;
  void renew_lease(const std::string& node, const std::string& id) override;

  // The delay the injections on `link_spec` add to a packet sent at t.
  double delay_ns(const std::string& link_spec, std::int64_t t_ns) const;
  const std::vector<FakeInjection>& injections() const { return injections_; }
  std::size_t running() const;

 private:
  FakeInjection& find(const std::string& node, const std::string& id);

  Clock& clock_;
  std::vector<FakeInjection> injections_;
  std::size_t renewals_ = 0;
};

struct FakeServiceModel {
  std::vector<double> base_ns;  // per type, in the workload's mix order
  double noise_ns = 0;          // standard deviation of a sample's noise
  // link spec (as the campaign injects it) -> gradient per type
  std::map<std::string, std::vector<double>> gradients;
  // link spec -> the response time a delay on it adds to a type's request
  std::map<std::string, std::function<double(std::uint32_t type, double delay_ns)>> responses;
  // link spec -> data segments per request per type crossing the link
  std::map<std::string, std::vector<double>> messages;
  // Pairwise interactions: a type's response also rises by
  // per_type[type] * delay(a) * delay(b) (per ns of each delay), so the
  // gradient of one link depends on the other's delay.
  struct Interaction {
    std::string a, b;
    std::vector<double> per_type;
  };
  std::vector<Interaction> interactions;
};

class FakeService final : public LoadRunner {
 public:
  FakeService(const FakeDaemons& daemons, FakeServiceModel model)
      : daemons_(daemons), model_(std::move(model)) {}
  std::unique_ptr<LoadRun> start(const loadgen::EngineConfig& config,
                                 std::int64_t start_ns) override;
  std::size_t runs() const { return runs_; }
  // The segments the requests of every run started so far, sent before
  // `before_ns`, put on `link_spec` (FakeServiceModel::messages).
  std::uint64_t segments_sent(const std::string& link_spec, std::int64_t before_ns) const;

 private:
  struct Arrival {
    std::int64_t t_ns;
    std::uint32_t type;
  };
  const FakeDaemons& daemons_;
  FakeServiceModel model_;
  std::size_t runs_ = 0;
  std::vector<Arrival> arrivals_;  // of every run, in the order drawn
};

}  // namespace nabla::campaign::fake
