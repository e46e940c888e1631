// libFuzzer target: one datagram as nabla-injectd receives it from its
// NFQUEUE socket, as root: netlink messages around queued packets, read by
// QueueMessageReader with the project's netlink reader, and the same bytes
// as the answer to a configuration message. The reads must end with an
// answer and never read outside the datagram; each whole message gives at
// most one packet, whose payload lies inside the datagram; a delay never
// counts from a time after the receive; the counters add up.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "nabla/common/netlink_reader.hh"
#include "nabla/injector/nfqueue.hh"

namespace {

using namespace nabla::injector;

void check(bool ok) {
  if (!ok) std::abort();
}

size_t whole_messages(std::span<const std::byte> datagram) {
  nabla::common::netlink::MessageWalk walk(datagram);
  size_t n = 0;
  while (walk.next() != nullptr) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exactly the datagram's bytes on the heap (aligned for nlmsghdr), so any
  // read past them is caught.
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  const std::span<const std::byte> datagram(bytes.data(), bytes.size());
  const size_t messages = whole_messages(datagram);

  // Queue 0, as the seeds (tests/fuzz/make_netlink_dumps_corpus.py); the
  // clocks near the seeds' stamps.
  const ReceiveClocks clocks{5'000'000'000, 1'700'000'000'000'000'000};
  QueueMessageReader reader(0);
  NfQueueCounters counters;
  size_t seen = 0;
  const size_t handed = reader.read(
      datagram, clocks,
      [&](const QueuedPacket& p) {
        ++seen;
        if (!p.payload.empty()) {
          const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
          check(p.payload.data() >= begin &&
                p.payload.data() + p.payload.size() <= begin + bytes.size());
        }
        check(p.received_ns == clocks.mono_ns);
        check(p.queued_ns <= clocks.mono_ns);
      },
      counters);
  check(handed == seen && counters.received == handed);
  check(handed <= messages && counters.malformed <= messages + 1);
  check(handed + counters.malformed >= messages);
  check(counters.kernel_stamped <= handed);

  const auto error = acknowledgement_error(datagram, 1);
  check(!error || *error >= 0);
  return 0;
}
