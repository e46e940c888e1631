#pragma once
// The [[experiment]] tables of a campaign file (private to campaign/; the
// structs are in nabla/campaign/spec.hh, the keys in docs/cli.md).
#include <vector>

#include "nabla/campaign/spec.hh"
#include "toml_section.hh"

namespace nabla::campaign {

// Parses `experiment` (absent: none) against the spec's nodes; throws
// std::invalid_argument naming the key ("experiment[0].slo.p99: ...").
std::vector<ExperimentSpec> parse_experiments(const toml::node* experiments,
                                              const CampaignSpec& spec);

}  // namespace nabla::campaign
