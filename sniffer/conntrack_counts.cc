// Conntrack counters as deltas; see conntrack_counts.hh.
#include "nabla/sniffer/conntrack_counts.hh"

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

}  // namespace nabla::sniffer
