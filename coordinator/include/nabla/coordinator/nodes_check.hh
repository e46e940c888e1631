#pragma once
// `nabla nodes check`: whether every node of a campaign can serve it. The
// policy is here, as pure functions over plain facts, so it is tested with
// literal facts and no daemons; nodes_command.hh gathers the facts from the
// daemons (daemon.info, clock.now) and prints them.
//
// A node can serve the campaign when each of its daemons is reachable,
// accepts the key, speaks this CLI's protocol version and is this CLI's
// version, and has what the campaign needs of it:
//   - nabla-injectd: NFQUEUE (every injection is an NFQUEUE rule);
//   - nabla-sniffd, when links are discovered: sock_diag, and conntrack
//     events or socket-destroy notifications (without either, a connection
//     that opens and closes between two scans is never seen).
// Warnings do not stop a campaign: a CPU latency limit that cannot be held
// (releases and the tail wait for idle CPUs to wake), and a clock whose
// offset may exceed a tenth of the expected bin width (clock_tolerance_ns).
// Hardware timestamps on the node's service interface are a note.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nabla/campaign/spec.hh"
#include "nabla/common/protocol/node.hh"

namespace nabla::coordinator {

// One clock.now exchange, all CLOCK_REALTIME ns: the coordinator sent at
// sent_ns, the daemon read its clock once at daemon_ns (so the NTP t1 and t2
// are the same reading), the coordinator received the answer at received_ns.
struct ClockSample {
  std::int64_t sent_ns = 0;
  std::int64_t daemon_ns = 0;
  std::int64_t received_ns = 0;
};

// The daemon's clock minus the coordinator's, and the round trip it was
// measured over. The true offset is within offset_ns ± rtt_ns / 2.
struct ClockEstimate {
  std::int64_t offset_ns = 0;
  std::int64_t rtt_ns = 0;
};

// NTP's estimate from the sample with the smallest round trip (the one whose
// two one-way delays can differ least): offset = ((t1 - t0) + (t2 - t3)) / 2,
// rtt = (t3 - t0) - (t2 - t1). Exact when both directions take equally long;
// an asymmetry a of the one-way delays biases it by a / 2. Throws
// std::invalid_argument for no samples or a sample received before sent.
ClockEstimate estimate_clock_offset(std::span<const ClockSample> samples);

// One daemon of a node as the check found it.
struct DaemonFacts {
  std::string daemon;   // "nabla-injectd" | "nabla-sniffd"
  std::string address;  // HOST:PORT
  bool reachable = false;
  bool authenticated = false;
  std::string error;  // why it is not reachable, not authenticated or unreadable
  std::string version;
  std::int64_t protocol_version = 0;
  // daemon.info's facts; absent when the daemon could not be read or speaks
  // another protocol version (then nothing else of it is trusted).
  std::optional<common::protocol::NodeFacts> node;
  std::optional<double> lateness_p50_us;  // the release loop's timer wake-ups (injectd)
  std::optional<double> lateness_p99_us;
  std::optional<ClockEstimate> clock;
};

struct NodeProbe {
  std::string name;
  std::vector<std::string> addresses;
  std::optional<DaemonFacts> injectd;
  std::optional<DaemonFacts> sniffd;
};

// What a campaign needs of its nodes, from its spec.
struct CampaignNeeds {
  bool discovery = true;                // links.discover: sniffd sources matter
  std::int64_t expected_bin_ns = 0;     // campaign::expected_bin_width_ns for the workload
  std::int64_t clock_tolerance_ns = 0;  // expected_bin_ns / 10
};
CampaignNeeds campaign_needs(const campaign::CampaignSpec& spec);

// The versions this CLI speaks.
struct CliVersions {
  std::string version;
  std::int64_t protocol_version = 0;
};

enum class Severity { kError, kWarning, kNote };
const char* to_string(Severity severity);

struct Finding {
  Severity severity = Severity::kNote;
  std::string text;  // starts with "node NAME: "
};

struct NodeVerdict {
  std::string node;
  std::vector<Finding> findings;
  bool can_serve() const;  // no error
};

NodeVerdict judge_node(const NodeProbe& probe, const CampaignNeeds& needs, const CliVersions& cli);

}  // namespace nabla::coordinator
