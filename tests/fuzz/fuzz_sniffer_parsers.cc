// libFuzzer target: what nabla-sniffd reads as root from the kernel and
// /proc on behalf of other users' processes: one netlink message of
// sock_diag (dumped and destroyed sockets) and of ctnetlink, and the
// /proc and cgroup texts, plus its --netns argument. The kernel frames a
// netlink message (its nlmsg_len never exceeds what was received); the
// attributes inside are not trusted. Every parser must return or refuse,
// never read outside its input; the text parsers may throw only
// std::invalid_argument.
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "nabla/sniffer/cgroups.hh"
#include "nabla/sniffer/conntrack.hh"
#include "nabla/sniffer/conntrack_rule.hh"
#include "nabla/sniffer/namespaces.hh"
#include "nabla/sniffer/proc_map.hh"
#include "nabla/sniffer/sock_diag.hh"

namespace {

using namespace nabla::sniffer;

// The fuzzer's bytes as one netlink message of exactly their length, in a
// buffer aligned as the kernel's receive buffer is.
void parse_as_netlink(const uint8_t* data, size_t size) {
  if (size < sizeof(nlmsghdr)) return;
  std::vector<uint32_t> storage((size + 3) / 4);
  std::memcpy(storage.data(), data, size);
  auto* nlh = reinterpret_cast<nlmsghdr*>(storage.data());
  nlh->nlmsg_len = static_cast<uint32_t>(size);
  SocketRecord record;
  DumpCounters counters;
  (void)parse_inet_diag(nlh, Proto::kTcp, record, counters);
  (void)parse_inet_diag(nlh, Proto::kUdp, record, counters);
  (void)parse_destroyed_socket(nlh, record, counters);
  ConntrackEvent event;
  (void)parse_conntrack_event(nlh, event);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse_as_netlink(data, size);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cgroup2_mount(text);
  (void)parse_cgroup_file(text);
  (void)parse_socket_link(text);
  (void)container_id_from_cgroup(text);
  (void)conntrack_chain_creator(text);
  try {
    (void)parse_namespace_selection(text);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
