#pragma once
// The names in a campaign file (a node's address/addresses, injectd, sniffd
// and the workload target's host), resolved once before the run starts: each
// distinct name is looked up once, printed ("resolved web01 -> 10.0.0.2"),
// written into the spec in place of the name and listed in
// CampaignSpec::resolved (so the stored config has both).
#include <iosfwd>

#include "nabla/campaign/spec.hh"
#include "nabla/common/resolve.hh"

namespace nabla::campaign {

// Throws common::ResolveError naming the key ("node[0].sniffd: cannot
// resolve 'web01': ...") for a name that does not resolve (the workload
// target needs an IPv4 address), or when two nodes' names resolve to one
// address.
void resolve_campaign_hosts(CampaignSpec& spec, const common::Resolver& resolver,
                            std::ostream& log);

}  // namespace nabla::campaign
