#pragma once
// Per-flow FIFO release: a packet's release time is
//   max(arrival + delay(arrival), last release in its flow)
// so a falling delay edge (square wave, jitter) never reorders a flow. Flows
// are 5-tuples read from the packet headers; packets that are not TCP/UDP over
// IP share one flow per protocol and address pair (ports 0).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

namespace nabla::injector {

struct FlowKey {
  std::array<uint8_t, 16> src{};  // IPv4 in the first 4 bytes
  std::array<uint8_t, 16> dst{};
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint8_t protocol = 0;
  uint8_t ip_version = 0;
  friend bool operator==(const FlowKey&, const FlowKey&) = default;
};

struct FlowKeyHash {
  size_t operator()(const FlowKey& key) const noexcept;
};

// Reads the flow of a packet starting at its IP header; nullopt when the
// bytes are not an IPv4/IPv6 header.
std::optional<FlowKey> flow_key_of(std::span<const uint8_t> packet);

class FlowOrder {
 public:
  // Release time for a packet of `flow` arriving at arrival_ns with the given
  // delay; records it as the flow's last release.
  int64_t release_ns(const FlowKey& flow, int64_t arrival_ns, int64_t delay_ns);

  // Drops flows whose last release is at or before now_ns: they no longer
  // constrain anything. Call periodically to bound memory.
  size_t forget_released(int64_t now_ns);

  size_t flows() const { return last_release_ns_.size(); }

 private:
  std::unordered_map<FlowKey, int64_t, FlowKeyHash> last_release_ns_;
};

}  // namespace nabla::injector
