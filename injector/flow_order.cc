#include "nabla/injector/flow_order.hh"

#include <algorithm>
#include <bit>
#include <cstring>

namespace nabla::injector {

size_t FlowKeyHash::operator()(const FlowKey& key) const noexcept {
  // Eight bytes at a time, each word folded in with a multiply and a
  // rotate, then a final avalanche (the murmur3 finaliser). Not byte-wise:
  // a byte-wise hash such as FNV is 38 dependent multiplies per packet,
  // which at 300k packets/s makes it the daemon's hottest function.
  auto word = [](const uint8_t* p) {
    uint64_t w = 0;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = 0;
  auto mix = [&h](uint64_t w) {
    h ^= w;
    h = std::rotl(h * kMul, 29);
  };
  mix(word(key.src.data()));
  mix(word(key.src.data() + 8));
  mix(word(key.dst.data()));
  mix(word(key.dst.data() + 8));
  mix(static_cast<uint64_t>(key.src_port) | static_cast<uint64_t>(key.dst_port) << 16 |
      static_cast<uint64_t>(key.protocol) << 32 | static_cast<uint64_t>(key.ip_version) << 40);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

std::optional<FlowKey> flow_key_of(std::span<const uint8_t> p) {
  if (p.empty()) return std::nullopt;
  FlowKey key;
  size_t l4 = 0;
  bool first_fragment = true;
  if ((p[0] >> 4) == 4) {
    if (p.size() < 20) return std::nullopt;
    key.ip_version = 4;
    key.protocol = p[9];
    std::memcpy(key.src.data(), &p[12], 4);
    std::memcpy(key.dst.data(), &p[16], 4);
    l4 = static_cast<size_t>(p[0] & 0x0f) * 4;
    first_fragment = ((p[6] & 0x1f) | p[7]) == 0;
  } else if ((p[0] >> 4) == 6) {
    if (p.size() < 40) return std::nullopt;
    key.ip_version = 6;
    key.protocol = p[6];
    std::memcpy(key.src.data(), &p[8], 16);
    std::memcpy(key.dst.data(), &p[24], 16);
    l4 = 40;
  } else {
    return std::nullopt;
  }
  // Ports for TCP (6), UDP (17), SCTP (132), UDP-Lite (136); a non-first
  // fragment has none and is ordered with the port-less flow of its pair.
  const bool has_ports =
      key.protocol == 6 || key.protocol == 17 || key.protocol == 132 || key.protocol == 136;
  if (has_ports && first_fragment && p.size() >= l4 + 4) {
    key.src_port = static_cast<uint16_t>((p[l4] << 8) | p[l4 + 1]);
    key.dst_port = static_cast<uint16_t>((p[l4 + 2] << 8) | p[l4 + 3]);
  }
  return key;
}

int64_t FlowOrder::release_ns(const FlowKey& flow, int64_t arrival_ns, int64_t delay_ns) {
  const int64_t wanted = arrival_ns + std::max<int64_t>(delay_ns, 0);
  auto [it, inserted] = last_release_ns_.try_emplace(flow, wanted);
  if (!inserted) {
    it->second = std::max(it->second, wanted);
  }
  return it->second;
}

size_t FlowOrder::forget_released(int64_t now_ns) {
  return std::erase_if(last_release_ns_, [now_ns](const auto& kv) { return kv.second <= now_ns; });
}

}  // namespace nabla::injector
