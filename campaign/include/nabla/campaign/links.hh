#pragma once
// Building the campaign's link set (see campaign.hh): discovered links plus
// [links].include, minus [links].exclude (an exclude spec matching the
// link's addresses and ports, ephemeral ports matching only `*`), minus the
// connections to the workload's load agents' ports (the campaign's own
// calls to them; the agents' links to the target are ordinary links). A link is
// measurable when its source node is in the spec and has an injectd; the
// injector spec carries the ends' addresses (from the flow records that
// produced the link, else the nodes' first addresses) and the fixed ports
// (`*` for ephemeral ones), so it matches exactly that link's packets.
#include <vector>

#include "nabla/campaign/campaign.hh"

namespace nabla::campaign {

// Throws std::invalid_argument for an include whose protocol is `any`.
std::vector<CampaignLink> assemble_links(const CampaignSpec& spec,
                                         const std::vector<NodeFlows>& nodes,
                                         const std::vector<Link>& discovered);

// Whether `address` is the link end `host`'s: an address of the node of
// that name, or the bare address a link end without a node is named by.
bool node_owns_address(const CampaignSpec& spec, const std::string& host,
                       const std::string& address);

}  // namespace nabla::campaign
