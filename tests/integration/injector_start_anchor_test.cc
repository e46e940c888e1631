// InjectorService::start anchors an injection's waves when its rule is in
// place, not before the iptables command that installs it: on a busy
// machine that command took up to 1.6 s, and a wave anchored before it ran
// that long on no packet, while the coordinator's window began. The real
// iptables backend and a real NFQUEUE in a private network namespace (the
// namespace and its rules go with it, even on failure); the service's clock
// is the test's, and the backend moves it on by a second while it installs,
// so the order is read without any timing.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "nabla/common/netns.hh"
#include "nabla/injector/engine.hh"
#include "nabla/injector/iptables_rules.hh"
#include "nabla/injector/service.hh"
#include "nabla_test_support.hh"

namespace {

using nabla::injector::InstalledRule;
using nabla::injector::RuleSpec;
using nlohmann::json;

constexpr int64_t kInstallNs = 1'000'000'000;

// The real backend, with the test's clock moved on by kInstallNs per rule.
class SlowRules : public nabla::injector::RuleBackend {
 public:
  explicit SlowRules(int64_t& now_ns) : now_ns_(now_ns) {}
  std::unique_ptr<InstalledRule> install(const RuleSpec& spec) override {
    auto rule = real_.install(spec);
    now_ns_ += kInstallNs;
    return rule;
  }

 private:
  nabla::injector::IptablesBackend real_;
  int64_t& now_ns_;
};

// The description inject.list gives of the one live injection.
json only_injection(nabla::injector::InjectorService& service) {
  const json listed = service.list(json::object());
  EXPECT_EQ(listed.at("injections").size(), 1u) << listed;
  return listed.at("injections").at(0);
}

// The service in the namespace: a start, then what inject.list says of it.
void run_in(const nabla::common::NetNamespace& ns) {
  nabla::common::enter_netns(ns.path());
  int64_t now_ns = 5'000'000'000;
  SlowRules rules(now_ns);
  nabla::injector::DelayEngine engine(nabla::injector::EngineOptions{});
  engine.start();
  nabla::injector::InjectorService service(nabla::injector::ServiceOptions{}, engine, rules,
                                           [&now_ns] { return now_ns; });
  const json started =
      service.start(json{{"link", "tcp 10.77.0.1:* -> 10.77.0.2:9000"},
                         {"delay", {{"kind", "square"}, {"amplitude", "2ms"}, {"period", "100ms"}}},
                         {"lease_s", 30}},
                    {});
  // Its start is the clock after the install: it has run for no time.
  EXPECT_EQ(only_injection(service).at("running_s").get<double>(), 0.0);
  now_ns += 250'000'000;
  EXPECT_DOUBLE_EQ(only_injection(service).at("running_s").get<double>(), 0.25);
  // The lease, too, runs from then.
  EXPECT_DOUBLE_EQ(only_injection(service).at("lease_remaining_s").get<double>(), 29.75);
  service.stop(json{{"id", started.at("id")}}, {});
  engine.stop();
}

TEST(InjectorStart, TheWaveStartsWhenTheRuleIsInPlace) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  nabla::common::NetNamespace ns("anchor");
  // An exception leaving the thread would end the process before the
  // namespace is removed: each one is a failure here instead.
  std::thread in_namespace([&] {
    try {
      run_in(ns);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  });
  in_namespace.join();
}

}  // namespace
