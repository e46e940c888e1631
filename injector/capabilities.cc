#include "nabla/injector/daemon.hh"

namespace nabla::injector {

std::vector<common::RequiredCapability> required_capabilities(const DaemonOptions& options) {
  std::vector<common::RequiredCapability> required = {
      common::cap_net_admin("NFQUEUE and iptables")};
  if (options.realtime_priority > 0) {
    required.push_back(common::cap_sys_nice("--rt-priority: SCHED_FIFO for the packet loop"));
  }
  return required;
}

std::vector<common::RequiredCapability> optional_capabilities() {
  return {common::cap_net_raw("the duplicate fault: copies are re-sent through a raw socket")};
}

std::vector<common::RequiredCapability> kept_capabilities(const DaemonOptions& options) {
  std::vector<common::RequiredCapability> kept = required_capabilities(options);
  for (common::RequiredCapability& cap : optional_capabilities()) kept.push_back(std::move(cap));
  return kept;
}

}  // namespace nabla::injector
