#pragma once
// The service `nabla demo` measures: nabla-tier tiers modelled on the
// link-gradient paper's RUBiS mix, described as a tier::ServiceModel so that
// the same description yields the tiers' command lines (tier::tier_argv) AND
// their true link gradients.
//
//   client ──► web:8080 ──serial:1──► app:8081 ──► db:8082   (/view serial:3,
//                                               │            /bid serial:1,
//                                               │            /browse parallel:4,
//                                               │            /auth none)
//                                               └─► db:8083 audit (/bid async)
//
// True gradients (true_gradients): the rule is tier's (tier::chain_gradients:
// serial:k -> k per direction, parallel:k -> 1, async/none -> 0, multiplied
// along the call chain from the client; the client's own link to the entry
// tier has factor 1 for every type). Every link of the service gets a value
// for every type, 0 where the type does not depend on it (e.g. /auth on
// app -> db). Links are keyed by their campaign labels ("tcp web ->
// app:8081", "tcp app:8081 -> web"; common/link_label.hh).
#include <map>
#include <string>

#include "nabla/tier/service_model.hh"

namespace nabla::testbed {

// The demo describes its service in tier's terms.
using tier::ServiceModel;
using tier::TierDef;
using tier::TierUrl;

// The RUBiS-like demo service (the tier table in the header comment).
ServiceModel rubis_demo_service();

// link label -> type -> true gradient (see the header comment). Throws
// std::invalid_argument for a call to an unknown tier or a cycle.
using TruthTable = std::map<std::string, std::map<std::string, double>>;
TruthTable true_gradients(const ServiceModel& model);

}  // namespace nabla::testbed
