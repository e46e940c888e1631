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
#include <vector>

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

// Whether a scan needs to dump the conntrack table at all. A dump walks
// every bucket of the kernel's hash table (262,144 on a 24 GiB machine),
// whatever it asks for and however few entries there are, with softirqs
// held off on its CPU: milliseconds in which that CPU delivers no packet.
// The NEW and DESTROY events already say which entries live, so a dump is
// needed only while one of the kind being counted lives, or when the events
// cannot be trusted: before the first dump (entries older than the
// subscription), after the kernel dropped events, or for an entry without an
// id. Pure: no syscalls.
class ConntrackLive {
 public:
  // An event read from the subscription.
  void seen(const ConntrackEvent& ev);
  // Events were lost (ENOBUFS): only a dump tells what lives.
  void lost() { unsure_ = true; }
  // A dump completed; `entries` is what it listed, of the kinds it asked for.
  void dumped(const std::vector<ConntrackEvent>& entries, bool udp_only);
  // Whether the next scan must dump: UDP entries only when udp_only.
  bool dump_needed(bool udp_only) const;

 private:
  std::unordered_map<uint32_t, Proto> live_;
  bool unsure_ = true;  // nothing is known before the first dump
};

}  // namespace nabla::sniffer
