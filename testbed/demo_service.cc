#include "nabla/testbed/demo_service.hh"

#include <vector>

#include "nabla/common/link_label.hh"

namespace nabla::testbed {
namespace {

tier::DownstreamCall call(std::string_view text) {
  return tier::DownstreamCall::parse(text);
}

}  // namespace

ServiceModel rubis_demo_service() {
  // Service times are small and sleep-based (mode=sleep): the tiers cost
  // almost no CPU on a shared 2-core machine, and little response-time noise
  // means a small injected amplitude suffices. 32 workers per tier keep
  // queueing (which makes gradients load-dependent) negligible at the demo's
  // rates even while a 3x-amplified delay holds workers of web and app.
  // Their waits for downstream replies block 500 us at a time: on a busy
  // machine a thread woken after a long block wakes later than after a
  // short one, so a delayed link's longer waits would add that excess to
  // the service's real gradient (docs/method.md).
  ServiceModel m;
  m.wait_slice_ns = 500'000;
  // An even mix: the bin width follows the least frequent type, so uneven
  // weights would only lengthen every phase.
  m.mix = {{"/view", 0.25}, {"/auth", 0.25}, {"/bid", 0.25}, {"/browse", 0.25}};
  m.tiers.push_back({"web", "web", 8080, 32, {{"*", "fixed:50us", {call("app:serial:1")}}}});
  m.tiers.push_back({"app",
                     "app",
                     8081,
                     32,
                     {{"/view", "exp:200us", {call("db:serial:3")}},
                      {"/auth", "fixed:100us", {}},
                      {"/bid", "fixed:100us", {call("db:serial:1"), call("audit:async:/audit")}},
                      {"/browse", "fixed:100us", {call("db:parallel:4")}}}});
  m.tiers.push_back({"db", "db", 8082, 32, {{"*", "exp:100us", {}}}});
  m.tiers.push_back({"audit", "db", 8083, 8, {{"*", "fixed:50us", {}}}});
  return m;
}

TruthTable true_gradients(const ServiceModel& model) {
  std::vector<std::string> types;
  for (const auto& [type, weight] : model.mix) types.push_back(type);
  TruthTable truth;
  // Every link of the service exists for every type (0 unless a path adds).
  for (const tier::HopGradient& hop : tier::chain_gradients(model)) {
    const TierDef& dst = *hop.callee;
    truth[common::campaign_link_label("tcp", hop.src_host, 0, dst.host, dst.port)][hop.type] +=
        hop.gradient;
    truth[common::campaign_link_label("tcp", dst.host, dst.port, hop.src_host, 0)][hop.type] +=
        hop.gradient;
  }
  for (auto& [label, by_type] : truth) {
    for (const std::string& type : types) by_type.emplace(type, 0.0);
  }
  return truth;
}

}  // namespace nabla::testbed
