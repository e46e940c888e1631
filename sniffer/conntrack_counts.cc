// Conntrack counters as deltas; see conntrack_counts.hh.
#include "nabla/sniffer/conntrack_counts.hh"

#include <algorithm>

namespace nabla::sniffer {
namespace {

uint64_t minus(uint64_t now, uint64_t before) {
  return now >= before ? now - before : 0;
}

}  // namespace

ConntrackEvent ConntrackCounts::since(const ConntrackEvent& entry) {
  ConntrackEvent out = entry;
  Baseline& b = baselines_[entry.id];
  out.orig_packets = minus(entry.orig_packets, b.orig_packets);
  out.orig_bytes = minus(entry.orig_bytes, b.orig_bytes);
  out.reply_packets = minus(entry.reply_packets, b.reply_packets);
  out.reply_bytes = minus(entry.reply_bytes, b.reply_bytes);
  b = Baseline{entry.orig_packets, entry.orig_bytes, entry.reply_packets, entry.reply_bytes,
               generation_};
  return out;
}

ConntrackEvent ConntrackCounts::live(const ConntrackEvent& entry) {
  if (!entry.has_counters || entry.id == 0) {
    ConntrackEvent none = entry;
    none.has_counters = false;  // counted at DESTROY instead
    return none;
  }
  return since(entry);
}

ConntrackEvent ConntrackCounts::destroyed(const ConntrackEvent& destroyed) {
  if (!destroyed.has_counters || destroyed.id == 0) return destroyed;
  return since(destroyed);
}

void ConntrackCounts::end_dump() {
  std::erase_if(baselines_,
                [this](const auto& e) { return e.second.generation + 1 < generation_; });
  ++generation_;
}

void ConntrackLive::seen(const ConntrackEvent& ev) {
  if (ev.id == 0) {
    unsure_ = true;  // cannot be matched with its DESTROY
    return;
  }
  if (ev.type == ConntrackEventType::kNew) {
    live_[ev.id] = ev.proto;
  } else {
    live_.erase(ev.id);
  }
}

void ConntrackLive::dumped(const std::vector<ConntrackEvent>& entries, bool udp_only) {
  // The dump is the truth for the kinds it listed; with udp_only the TCP
  // entries the events announced are kept.
  std::erase_if(live_, [udp_only](const auto& e) { return !udp_only || e.second == Proto::kUdp; });
  unsure_ = false;
  for (const ConntrackEvent& e : entries) {
    if (e.id == 0) {
      unsure_ = true;
      continue;
    }
    live_[e.id] = e.proto;
  }
}

bool ConntrackLive::dump_needed(bool udp_only) const {
  if (unsure_) return true;
  if (!udp_only) return !live_.empty();
  return std::any_of(live_.begin(), live_.end(),
                     [](const auto& e) { return e.second == Proto::kUdp; });
}

}  // namespace nabla::sniffer
