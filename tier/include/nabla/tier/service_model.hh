#pragma once
// A service made of nabla-tier processes, described as data so that the same
// description yields the tiers' command lines (tier_argv) AND their true link
// gradients (chain_gradients). `nabla demo` describes its RUBiS-like service
// this way (testbed/demo_service.hh).
//
// True gradients: each call's factor is DownstreamCall::true_gradient()
// (serial:k -> k per direction, parallel:k -> 1, async/none -> 0; the reasons
// are in tier_config.hh), multiplied along the call chain from the client; the
// client's own hop to the entry tier has factor 1 for every type.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nabla/tier/tier_config.hh"

namespace nabla::tier {

struct TierUrl {
  std::string path;                   // "/view", or "*" for every other path
  std::string service = "fixed:0ns";  // nabla-tier service distribution
  std::vector<DownstreamCall> calls;
};

struct TierDef {
  std::string name;  // tier name (used in calls), e.g. "app", "audit"
  std::string host;  // testbed host it runs on
  int port = 0;
  int workers = 32;
  std::vector<TierUrl> urls;
};

struct ServiceModel {
  std::string client_host = "client";
  std::string entry_tier = "web";
  // Transaction types (entry-tier URL paths) with their mix weights.
  std::vector<std::pair<std::string, double>> mix;
  std::vector<TierDef> tiers;
  // Every tier's --wait-slice (TierConfig::wait_slice_ns); 0 leaves it out.
  std::int64_t wait_slice_ns = 0;

  const TierDef& tier(std::string_view name) const;  // throws std::out_of_range
  std::vector<std::string> hosts() const;            // client first, then tier hosts, unique
};

// One hop of one transaction type's call chain: `src_host` calls `callee`,
// and the type's true gradient on that hop (each direction) is `gradient`.
struct HopGradient {
  std::string type;  // a path of the mix
  std::string src_host;
  const TierDef* callee = nullptr;  // points into the model
  double gradient = 0;
};

// Every hop of every type of the mix, in mix order: first the client's hop
// to the entry tier (gradient 1), then the calls depth first in the order
// the tiers list them. A link called twice on one chain appears twice (the
// caller adds them up). Throws std::out_of_range for an unknown entry tier
// and std::invalid_argument for a call to an unknown tier or a cycle.
std::vector<HopGradient> chain_gradients(const ServiceModel& model);

// nabla-tier's argv for one tier: `tier_binary --listen ADDR:PORT --workers W
// --seed S --tier NAME=ADDR:PORT ... --url 'PATH service=... mode=sleep
// call=...'`; `address_of` maps a host name to its address.
std::vector<std::string> tier_argv(const ServiceModel& model, const TierDef& tier,
                                   const std::string& tier_binary,
                                   const std::map<std::string, std::string>& address_of,
                                   std::uint64_t seed);

}  // namespace nabla::tier
