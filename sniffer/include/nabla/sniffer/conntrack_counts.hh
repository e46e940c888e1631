#pragma once
// Conntrack counters turned into deltas, so a flow is counted while it
// lives (each scan dumps the live entries) and once more when it ends (its
// DESTROY event), each packet once. An entry is known by its conntrack id:
//   - a dump adds what the entry counted since the previous dump (all of it
//     for an entry seen the first time);
//   - a DESTROY event adds what it counted beyond the last dump (all of it
//     for an entry no dump saw), and becomes the baseline: a dump that still
//     lists the dying entry adds nothing;
//   - an entry missing from a dump keeps its baseline for one more dump (its
//     DESTROY event may be read after that dump); then it is forgotten.
// Entries without an id (an old kernel) are counted whole from DESTROY
// events only. Pure: no syscalls.
#include <cstdint>
#include <unordered_map>

#include "nabla/sniffer/conntrack.hh"

namespace nabla::sniffer {

class ConntrackCounts {
 public:
  // `entry` from a dump, with its counters replaced by what it counted since
  // the last dump.
  ConntrackEvent live(const ConntrackEvent& entry);
  // `destroyed` (a DESTROY event) with its counters replaced by what it
  // counted beyond the last dump.
  ConntrackEvent destroyed(const ConntrackEvent& destroyed);
  // Ends one dump: forgets entries missing from it and the one before.
  void end_dump();
  size_t size() const { return baselines_.size(); }

 private:
  struct Baseline {
    uint64_t orig_packets = 0;
    uint64_t orig_bytes = 0;
    uint64_t reply_packets = 0;
    uint64_t reply_bytes = 0;
    uint64_t generation = 0;
  };
  ConntrackEvent since(const ConntrackEvent& entry);
  std::unordered_map<uint32_t, Baseline> baselines_;
  uint64_t generation_ = 1;
};

}  // namespace nabla::sniffer
