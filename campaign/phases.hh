#pragma once
// The phases of a campaign, in the order campaign.cc runs them (private to
// campaign/; the design is in nabla/campaign/campaign.hh).
#include <cstddef>

#include "run_state.hh"

namespace nabla::campaign {

// Runs the workload for the discovery time (at least its warm-up), polls
// every sniffd meanwhile, joins the flows into the campaign's links and
// stores them; calibrates the bin width on the same load. Throws when no
// link is measurable.
void discover(CampaignRun& run);

// The passive training phase: M*N bins per type, one k_d for all types, the
// training amplitude; stored with its samples.
void train(CampaignRun& run);

// The adaptive sub-phase and the active phase(s) of one link (index of
// count), each stored in its own transaction, the gradients with the last.
void measure_link(CampaignRun& run, CampaignLink& link, std::size_t index, std::size_t count);

}  // namespace nabla::campaign
