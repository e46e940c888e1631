#include "nabla/sniffer/daemon.hh"

namespace nabla::sniffer {

std::vector<common::RequiredCapability> required_capabilities(const SnifferOptions& options) {
  std::vector<common::RequiredCapability> required;
  if (options.conntrack) {
    required.push_back(
        common::cap_net_admin("conntrack events and the iptables chain that keeps them live; "
                              "--no-conntrack runs without"));
  }
  required.push_back(common::cap_sys_ptrace("reading other users' /proc/PID/fd: socket owners"));
  required.push_back(
      common::cap_dac_read_search("listing other users' /proc/PID/fd: socket owners"));
  return required;
}

std::vector<common::RequiredCapability> kept_capabilities(const SnifferOptions& options) {
  std::vector<common::RequiredCapability> kept = required_capabilities(options);
  if (!options.namespaces.only_own()) {
    kept.push_back(common::cap_sys_admin("entering the other network namespaces it scans"));
  }
  return kept;
}

}  // namespace nabla::sniffer
