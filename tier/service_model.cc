#include "nabla/tier/service_model.hh"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

namespace nabla::tier {

const TierDef& ServiceModel::tier(std::string_view name) const {
  for (const TierDef& t : tiers)
    if (t.name == name) return t;
  throw std::out_of_range("no tier '" + std::string(name) + "' in the service");
}

std::vector<std::string> ServiceModel::hosts() const {
  std::vector<std::string> out{client_host};
  for (const TierDef& t : tiers) {
    if (std::find(out.begin(), out.end(), t.host) == out.end()) out.push_back(t.host);
  }
  return out;
}

std::vector<HopGradient> chain_gradients(const ServiceModel& model) {
  std::vector<HopGradient> hops;
  const TierDef& entry = model.tier(model.entry_tier);
  std::function<void(const TierDef&, const std::string&, const std::string&, double, int)> walk =
      [&](const TierDef& tier, const std::string& path, const std::string& type, double factor,
          int depth) {
        if (depth > static_cast<int>(model.tiers.size())) {
          throw std::invalid_argument("the service's calls form a cycle through tier '" +
                                      tier.name + "'");
        }
        const TierUrl* url = nullptr;
        for (const TierUrl& u : tier.urls) {
          if (u.path == path) url = &u;
          if (u.path == "*" && url == nullptr) url = &u;
        }
        if (url == nullptr) return;  // 404: no calls
        for (const DownstreamCall& c : url->calls) {
          const TierDef* callee = nullptr;
          for (const TierDef& t : model.tiers)
            if (t.name == c.tier) callee = &t;
          if (callee == nullptr) {
            throw std::invalid_argument("tier '" + tier.name + "' calls unknown tier '" + c.tier +
                                        "'");
          }
          const double f = factor * c.true_gradient();
          hops.push_back({type, tier.host, callee, f});
          walk(*callee, c.path.empty() ? path : c.path, type, f, depth + 1);
        }
      };
  for (const auto& [type, weight] : model.mix) {
    hops.push_back({type, model.client_host, &entry, 1.0});
    walk(entry, type, type, 1.0, 0);
  }
  return hops;
}

std::vector<std::string> tier_argv(const ServiceModel& model, const TierDef& tier,
                                   const std::string& tier_binary,
                                   const std::map<std::string, std::string>& address_of,
                                   std::uint64_t seed) {
  auto address = [&](const std::string& host) {
    const auto it = address_of.find(host);
    if (it == address_of.end()) throw std::out_of_range("no address for host '" + host + "'");
    return it->second;
  };
  std::vector<std::string> argv = {tier_binary,
                                   "--listen",
                                   address(tier.host) + ":" + std::to_string(tier.port),
                                   "--workers",
                                   std::to_string(tier.workers),
                                   "--seed",
                                   std::to_string(seed)};
  std::set<std::string> called;
  for (const TierUrl& u : tier.urls)
    for (const DownstreamCall& c : u.calls) called.insert(c.tier);
  for (const std::string& name : called) {
    const TierDef& t = model.tier(name);
    argv.push_back("--tier");
    argv.push_back(name + "=" + address(t.host) + ":" + std::to_string(t.port));
  }
  if (model.wait_slice_ns > 0) {
    argv.push_back("--wait-slice");
    argv.push_back(std::to_string(model.wait_slice_ns) + "ns");
  }
  for (const TierUrl& u : tier.urls) {
    std::string spec = u.path + " service=" + u.service + " mode=sleep";
    for (const DownstreamCall& c : u.calls) spec += " call=" + to_string(c);
    argv.push_back("--url");
    argv.push_back(spec);
  }
  return argv;
}

}  // namespace nabla::tier
