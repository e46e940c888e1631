// libFuzzer target: one buffer as nabla-sniffd receives it from the kernel,
// several netlink messages in a row, walked as the replies of each dump the
// sniffer runs (sock_diag, ctnetlink, RTM_GETADDR) with the functions its
// receive loops call, and as one datagram of its event sockets (socket
// destroy notifications, conntrack events). The walks must end with an
// answer and never read outside the buffer; each whole message gives at
// most one record; a failed dump walk names an errno and no other does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "nabla/sniffer/conntrack.hh"
#include "nabla/sniffer/interface_addresses.hh"
#include "nabla/sniffer/netlink_dump.hh"
#include "nabla/sniffer/sock_diag.hh"

namespace {

using namespace nabla::sniffer;

// The seeds' sequence number: the request the replies answer.
constexpr uint32_t kSeq = 1;

void check(bool ok) {
  if (!ok) std::abort();
}

size_t whole_messages(std::span<const std::byte> received) {
  netlink::MessageWalk walk(received);
  size_t n = 0;
  while (walk.next() != nullptr) ++n;
  return n;
}

void walk_sock_diag(std::span<const std::byte> received, size_t messages) {
  for (const Proto proto : {Proto::kTcp, Proto::kUdp}) {
    std::vector<SocketRecord> out;
    DumpCounters counters;
    DiagReplies replies{proto, proto == Proto::kUdp, &out, &counters};
    (void)walk_diag_replies(received, kSeq, replies);
    check(out.size() <= messages && counters.messages <= messages);
  }
}

void walk_conntrack(std::span<const std::byte> received, size_t messages) {
  for (const bool udp_only : {false, true}) {
    std::vector<ConntrackEvent> out;
    int error = 0;
    const DumpStep step = walk_conntrack_dump(received, kSeq, udp_only, out, error);
    check((step == DumpStep::kFailed) == (error != 0) && error >= 0);
    check(out.size() <= messages);
    for (const ConntrackEvent& ev : out) check(!udp_only || ev.proto == Proto::kUdp);
  }
}

void walk_addresses(std::span<const std::byte> received, size_t messages) {
  std::vector<IpAddr> found;
  int error = 0;
  const DumpStep step = walk_address_dump(received, kSeq, found, error);
  check((step == DumpStep::kFailed) == (error != 0) && error >= 0);
  check(found.size() <= messages);
}

// What DestroyListener and ConntrackListener do with one datagram.
void walk_events(std::span<const std::byte> received) {
  netlink::MessageWalk walk(received);
  while (const nlmsghdr* nlh = walk.next()) {
    SocketRecord record;
    DumpCounters counters;
    (void)parse_destroyed_socket(nlh, record, counters);
    ConntrackEvent event;
    (void)parse_conntrack_event(nlh, event);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exactly the received bytes on the heap (operator new aligns them for
  // nlmsghdr), so any read past the buffer is caught.
  std::vector<std::byte> buffer(size);
  if (size > 0) std::memcpy(buffer.data(), data, size);
  const std::span<const std::byte> received(buffer);
  const size_t messages = whole_messages(received);
  walk_sock_diag(received, messages);
  walk_conntrack(received, messages);
  walk_addresses(received, messages);
  walk_events(received);
  return 0;
}
