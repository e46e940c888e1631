// The campaign's link set: discovered links joined from the sniffers plus
// the spec's includes, minus its excludes, each with the injector link spec
// that matches exactly its packets. See campaign.hh.
#include "nabla/campaign/links.hh"

#include <algorithm>
#include <stdexcept>

#include "nabla/common/ip_address.hh"
#include "nabla/common/link_label.hh"
#include "nabla/common/link_spec.hh"

namespace nabla::campaign {
namespace {

std::string endpoint(const std::string& address, std::uint16_t port) {
  const std::string a = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  return a + ":" + (port == 0 ? std::string("*") : std::to_string(port));
}

bool is_ipv6(const std::string& address) {
  return address.find(':') != std::string::npos;
}

// One address family's addresses of a link's two ends, and the segments its
// flow records carried.
struct FamilyEnds {
  std::string src;
  std::string dst;
  std::uint64_t segments = 0;
};

// The addresses of a link's two ends in each address family the flow
// records that produced it show (a dual-stack pair talks over both), the
// busier family first.
std::vector<FamilyEnds> flow_addresses(const CampaignSpec& spec,
                                       const std::vector<NodeFlows>& nodes, const Link& l) {
  std::vector<FamilyEnds> out;
  auto add = [&out](const std::string& src, const std::string& dst, const FlowEnd& f) {
    const std::uint64_t segments = f.segments_out + f.segments_in;
    for (FamilyEnds& e : out) {
      if (is_ipv6(e.src) == is_ipv6(src)) {
        e.segments += segments;
        return;
      }
    }
    out.push_back({src, dst, segments});
  };
  for (const NodeFlows& n : nodes) {
    for (const FlowEnd& f : n.flows) {
      if (f.proto != l.proto) continue;
      if (n.name == l.src.host && f.local_port == l.src.port && f.remote_port == l.dst.port &&
          node_owns_address(spec, l.dst.host, f.remote_addr)) {
        add(f.local_addr, f.remote_addr, f);
      } else if (n.name == l.dst.host && f.local_port == l.dst.port &&
                 f.remote_port == l.src.port &&
                 node_owns_address(spec, l.src.host, f.remote_addr)) {
        add(f.remote_addr, f.local_addr, f);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const FamilyEnds& a, const FamilyEnds& b) {
    return a.segments > b.segments;
  });
  return out;
}

// The addresses of a link's two ends: the busier family's from the flow
// records that produced it (`from_flows` true), else the nodes' first
// addresses.
bool find_addresses(const CampaignSpec& spec, const std::vector<FamilyEnds>& families,
                    const Link& l, std::string& src, std::string& dst, bool& from_flows) {
  from_flows = !families.empty();
  if (from_flows) {
    src = families.front().src;
    dst = families.front().dst;
    return true;
  }
  const CampaignNode* s = spec.node_by_name(l.src.host);
  const CampaignNode* d = spec.node_by_name(l.dst.host);
  src = s != nullptr ? s->addresses.front() : l.src.host;
  dst = d != nullptr ? d->addresses.front() : l.dst.host;
  return common::IpAddress::parse(src).has_value() && common::IpAddress::parse(dst).has_value();
}

// Every address an end may have: the node's addresses, or the bare address.
std::vector<std::string> addresses_of(const CampaignSpec& spec, const std::string& host) {
  const CampaignNode* n = spec.node_by_name(host);
  return n != nullptr ? n->addresses : std::vector<std::string>{host};
}

// Excluded when an exclude matches the link's addresses; when the flow
// records did not name them, any address of the end's node counts.
bool excluded(const std::vector<common::LinkSpec>& excludes, const std::string& proto,
              const std::vector<std::string>& srcs, std::uint16_t sport,
              const std::vector<std::string>& dsts, std::uint16_t dport) {
  const common::Protocol p = proto == "udp" ? common::Protocol::kUdp : common::Protocol::kTcp;
  for (const std::string& src : srcs) {
    for (const std::string& dst : dsts) {
      const auto s = common::IpAddress::parse(src);
      const auto d = common::IpAddress::parse(dst);
      if (!s || !d) continue;
      for (const common::LinkSpec& e : excludes) {
        if (common::matches(e, p, *s, sport, *d, dport)) return true;
      }
    }
  }
  return false;
}

// The node a load agent of the workload listens on (by address or name),
// else its host as given.
std::string agent_host(const CampaignSpec& spec, const loadd::AgentAddress& agent) {
  if (const CampaignNode* n = spec.node_by_address(agent.host)) return n->name;
  if (const CampaignNode* n = spec.node_by_name(agent.host)) return n->name;
  return agent.host;
}

// A connection to a load agent's port: the campaign's own calls to the
// agent (nabla-loadd's methods), no link of the service's, as the sniffers
// leave out the daemons' control connections.
bool to_load_agent(const CampaignSpec& spec, const Link& l) {
  if (l.proto != "tcp") return false;
  for (const loadd::AgentAddress& a : spec.workload.agents) {
    const std::string host = agent_host(spec, a);
    if ((l.dst.host == host && l.dst.port == a.port) ||
        (l.src.host == host && l.src.port == a.port)) {
      return true;
    }
  }
  return false;
}

std::string host_for(const CampaignSpec& spec, const std::string& address) {
  const CampaignNode* n = spec.node_by_address(address);
  return n != nullptr ? n->name : address;
}

}  // namespace

bool node_owns_address(const CampaignSpec& spec, const std::string& host,
                       const std::string& address) {
  const CampaignNode* n = spec.node_by_address(address);
  return n != nullptr ? n->name == host : address == host;
}

std::string link_label(const Link& l) {
  return common::campaign_link_label(l.proto, l.src.host, l.src.port, l.dst.host, l.dst.port);
}

std::vector<CampaignLink> assemble_links(const CampaignSpec& spec,
                                         const std::vector<NodeFlows>& nodes,
                                         const std::vector<Link>& discovered) {
  std::vector<common::LinkSpec> excludes;
  for (const std::string& e : spec.links.exclude) excludes.push_back(common::parse_link_spec(e));
  std::vector<CampaignLink> out;
  auto finish = [&](CampaignLink c) {
    const CampaignNode* src = spec.node_by_name(c.link.src.host);
    c.label = link_label(c.link);
    for (const CampaignLink& o : out) {
      if (o.spec == c.spec) return;  // an include that discovery also found
    }
    if (src == nullptr) {
      c.note = "source " + c.link.src.host + " is no node of the campaign";
    } else if (!src->injectd) {
      c.note = "node " + src->name + " has no injectd";
    } else {
      c.src_node = src->name;
      c.measurable = true;
    }
    out.push_back(std::move(c));
  };
  for (const Link& l : discovered) {
    if (to_load_agent(spec, l)) continue;
    CampaignLink c;
    c.link = l;
    std::string src, dst;
    bool from_flows = false;
    const std::vector<FamilyEnds> families = flow_addresses(spec, nodes, l);
    const bool have = find_addresses(spec, families, l, src, dst, from_flows);
    if (excluded(excludes, l.proto,
                 from_flows ? std::vector<std::string>{src} : addresses_of(spec, l.src.host),
                 l.src.port,
                 from_flows ? std::vector<std::string>{dst} : addresses_of(spec, l.dst.host),
                 l.dst.port)) {
      continue;
    }
    if (l.proto != "tcp" && l.proto != "udp") continue;
    c.spec = l.proto + " " + endpoint(src, l.src.port) + " -> " + endpoint(dst, l.dst.port);
    // A dual-stack pair: the link covers its other family too.
    for (std::size_t i = 1; i < families.size(); ++i) {
      const FamilyEnds& f = families[i];
      if (excluded(excludes, l.proto, {f.src}, l.src.port, {f.dst}, l.dst.port)) continue;
      c.family_specs.push_back(l.proto + " " + endpoint(f.src, l.src.port) + " -> " +
                               endpoint(f.dst, l.dst.port));
    }
    if (!have) {
      c.note = "addresses of its ends unknown";
      c.label = link_label(l);
      out.push_back(std::move(c));
      continue;
    }
    finish(std::move(c));
  }
  for (const std::string& text : spec.links.include) {
    const common::LinkSpec ls = common::parse_link_spec(text);
    CampaignLink c;
    c.spec = common::to_string(ls);
    c.link.proto = std::string(common::to_string(ls.protocol));
    if (c.link.proto == "any") {
      throw std::invalid_argument("links.include: \"" + text +
                                  "\": give tcp or udp (a link has one protocol)");
    }
    auto fixed = [](const common::PortRange& p) -> std::uint16_t {
      return p.low == p.high ? p.low : 0;
    };
    c.link.src.host = host_for(spec, ls.src.address.to_string());
    c.link.src.port = fixed(ls.src.ports);
    c.link.dst.host = host_for(spec, ls.dst.address.to_string());
    c.link.dst.port = fixed(ls.dst.ports);
    finish(std::move(c));
  }
  return out;
}

}  // namespace nabla::campaign
