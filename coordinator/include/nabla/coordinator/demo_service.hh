#pragma once
// The service `nabla demo` measures: nabla-tier tiers modelled on the
// link-gradient paper's RUBiS mix, described as data so that the same
// description yields the tiers' command lines AND their true link gradients.
//
//   client ──► web:8080 ──serial:1──► app:8081 ──► db:8082   (/view serial:3,
//                                               │            /bid serial:1,
//                                               │            /browse parallel:4,
//                                               │            /auth none)
//                                               └─► db:8083 audit (/bid async)
//
// True gradients (true_gradients): a call pattern's factor is
//   serial:k -> k per direction, parallel:k -> 1 (the k calls share the one
//   link and wait for the slowest, which a delay on it moves once),
//   async -> 0, none -> 0,
// multiplied along the call chain from the client; the client's own link to
// the entry tier has factor 1 for every type. Every link of the service gets
// a value for every type, 0 where the type does not depend on it (e.g. /auth
// on app -> db). Links are keyed by their campaign labels
// ("tcp web -> app:8081", "tcp app:8081 -> web"; campaign_spec.hh).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nabla::coordinator {

enum class CallPattern { kSerial, kParallel, kAsync, kNone };

struct TierCall {
  std::string tier;  // name of the called tier
  CallPattern pattern = CallPattern::kSerial;
  int count = 1;     // k of serial:k / parallel:k
  std::string path;  // empty: the incoming path
};

// "db:serial:3", "db:parallel:4", "audit:async:/audit", "db:none" (nabla-tier
// syntax); throws std::invalid_argument naming the text.
TierCall parse_tier_call(std::string_view text);
std::string to_string(const TierCall& call);
// serial:k -> k, parallel:k -> 1, async/none -> 0.
double gradient_factor(const TierCall& call);

struct TierUrl {
  std::string path;                   // "/view", or "*" for every other path
  std::string service = "fixed:0ns";  // nabla-tier service distribution
  std::vector<TierCall> calls;
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

  const TierDef& tier(std::string_view name) const;  // throws std::out_of_range
  std::vector<std::string> hosts() const;            // client first, then tier hosts, unique
};

// The RUBiS-like demo service (the tier table in the header comment).
ServiceModel rubis_demo_service();

// link label -> type -> true gradient (see the header comment). Throws
// std::invalid_argument for a call to an unknown tier or a cycle.
using TruthTable = std::map<std::string, std::map<std::string, double>>;
TruthTable true_gradients(const ServiceModel& model);

// nabla-tier's argv for one tier: `tier_binary --listen ADDR:PORT --workers W
// --seed S --tier NAME=ADDR:PORT ... --url 'PATH service=... mode=sleep
// call=...'`; `address_of` maps a host name to its address.
std::vector<std::string> tier_argv(const ServiceModel& model, const TierDef& tier,
                                   const std::string& tier_binary,
                                   const std::map<std::string, std::string>& address_of,
                                   std::uint64_t seed);

}  // namespace nabla::coordinator
