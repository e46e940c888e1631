#pragma once
// Reads the data-segment counts of the links being measured while a phase
// runs, for the messages per transaction (nabla/campaign/messages.hh,
// docs/method.md "Messages per transaction"). Private to campaign/.
//
// While it lives, every wait slice of the campaign (50 ms) asks the sniffd
// of each link's ends for the flows changed since its cursor. A link's
// count is that of its direction: the data segments its source's records
// sent to the destination (segments_out on the source node), or, when the
// source has no sniffd or no record of the link, the segments the
// destination's records received from the source. A new count is kept with
// the time the sniffer updated it (last_seen_ns, the sniffer's clock); the
// sniffer's clock is put on the campaign's by the smallest difference
// between the time a poll returned and the update it returned, which is
// within one wait slice and one call of the true offset.
//
// A flows.list that fails only ends the sampling of that node, with a
// warning: the messages are a companion of the gradient, not a reason to
// fail the run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nabla/campaign/messages.hh"
#include "run_state.hh"

namespace nabla::campaign {

class MessageSampler {
 public:
  MessageSampler(CampaignRun& run, const std::vector<const CampaignLink*>& links);
  ~MessageSampler();
  MessageSampler(const MessageSampler&) = delete;
  MessageSampler& operator=(const MessageSampler&) = delete;

  // Sets each type's `messages` in `gradients` (one per type, in the run's
  // type order) from link `link`'s counts inside [start_ns, end_ns].
  void fill(std::size_t link, std::vector<TypeGradient>& gradients,
            const std::vector<analysis::LatencyRecord>& records, std::int64_t start_ns,
            std::int64_t end_ns) const;

  // The counts of link `link` on the campaign's clock (for tests and notes).
  std::vector<SegmentCount> counts(std::size_t link) const;

 private:
  struct NodeState {
    std::string name;
    std::uint64_t cursor = 0;
    std::vector<FlowEnd> flows;
    bool failed = false;
  };
  struct Observation {
    std::int64_t seen_ns = 0;    // the sniffer's clock
    std::int64_t polled_ns = 0;  // the campaign's, when the answer was in
    std::uint64_t segments = 0;
  };
  struct LinkState {
    const CampaignLink* link = nullptr;
    std::optional<std::size_t> node;  // where the count is read, once known
    bool outgoing = true;             // the source's records (else the destination's)
    std::vector<Observation> observations;
  };

  void poll();
  void poll_node(NodeState& node);
  void observe(LinkState& state, std::int64_t polled_ns);
  std::size_t node_index(const std::string& name);

  CampaignRun& run_;
  std::vector<NodeState> nodes_;
  std::vector<LinkState> links_;
};

}  // namespace nabla::campaign
