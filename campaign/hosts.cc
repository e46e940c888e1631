// Resolving a campaign's names once; see hosts.hh.
#include "nabla/campaign/hosts.hh"

#include <map>
#include <ostream>
#include <set>
#include <string>

namespace nabla::campaign {
namespace {

// One lookup per distinct name and one printed line, every use recorded.
class HostResolution {
 public:
  HostResolution(CampaignSpec& spec, const common::Resolver& resolver, std::ostream& log)
      : spec_(spec), log_(log), cached_([this, &resolver](const std::string& name) {
          auto it = lookups_.find(name);
          if (it == lookups_.end()) it = lookups_.emplace(name, resolver(name)).first;
          return it->second;
        }) {}
  // cached_ points at this object.
  HostResolution(const HostResolution&) = delete;
  HostResolution& operator=(const HostResolution&) = delete;

  void resolve(std::string& host, const std::string& key) {
    const common::ResolvedHost r = common::resolve_host(host, cached_, key);
    if (r.name.empty()) return;
    if (printed_.insert(r.name).second) log_ << common::resolved_line(r) << '\n';
    spec_.resolved.push_back({key, r.name, r.address});
    host = r.address;
  }

  void resolve(common::HostPort& daemon, const std::string& key) {
    const std::string given = daemon.host;
    resolve(daemon.host, key);
    if (daemon.host != given) daemon.name = given;
  }

 private:
  CampaignSpec& spec_;
  std::ostream& log_;
  std::map<std::string, common::Resolution> lookups_;
  std::set<std::string> printed_;
  common::Resolver cached_;
};

// Names checked unique as text may still resolve to one address.
void require_distinct_addresses(const CampaignSpec& spec) {
  std::map<std::string, std::string> owner;
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const CampaignNode& n = spec.nodes[i];
    for (const std::string& a : std::set<std::string>(n.addresses.begin(), n.addresses.end())) {
      const auto [it, fresh] = owner.emplace(a, n.name);
      if (!fresh) {
        throw common::ResolveError("node[" + std::to_string(i) + "].address: " + a +
                                   " belongs to two nodes (" + it->second + " and " + n.name +
                                   ") once names are resolved");
      }
    }
  }
}

}  // namespace

void resolve_campaign_hosts(CampaignSpec& spec, const common::Resolver& resolver,
                            std::ostream& log) {
  HostResolution names(spec, resolver, log);
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    CampaignNode& n = spec.nodes[i];
    const std::string node = "node[" + std::to_string(i) + "]";
    for (std::string& a : n.addresses) names.resolve(a, node + ".address");
    if (n.injectd) names.resolve(*n.injectd, node + ".injectd");
    if (n.sniffd) names.resolve(*n.sniffd, node + ".sniffd");
  }
  WorkloadSpec& w = spec.workload;
  const std::string target_name = w.host;
  names.resolve(w.host, "workload.target");
  if (w.host != target_name) w.host_name = target_name;
  require_distinct_addresses(spec);
}

}  // namespace nabla::campaign
