// libFuzzer target: what nabla-injectd reads as root from packets the
// network sent: the flow key of a queued packet, and the corruption fault's
// checksum arithmetic, which walks the IP and transport headers. Any bytes
// must give an answer or a refusal, never a read or write outside the
// packet; a packet whose checksum was recomputed must verify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include "nabla/injector/faults.hh"
#include "nabla/injector/flow_order.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exactly the packet's bytes on the heap, so any overread is caught.
  std::vector<uint8_t> packet(data, data + size);
  const std::span<const uint8_t> view(packet.data(), packet.size());
  (void)nabla::injector::flow_key_of(view);
  (void)nabla::injector::transport_checksum_ok(view);
  std::vector<uint8_t> fixed = packet;
  if (nabla::injector::fix_transport_checksum(fixed)) {
    check(nabla::injector::transport_checksum_ok(fixed));
  }
  std::mt19937_64 rng(size);
  for (const bool fix : {false, true}) {
    for (const bool not_ready : {false, true}) {
      std::vector<uint8_t> copy = packet;
      const bool changed = nabla::injector::corrupt_packet(copy, rng, fix, not_ready);
      check(copy.size() == packet.size());
      if (!changed) check(copy == packet);
    }
  }
  return 0;
}
