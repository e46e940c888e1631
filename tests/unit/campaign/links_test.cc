// The campaign's link set: labels, injector specs from the flow records'
// addresses and fixed ports, measurability, excludes and includes; a
// dual-stack pair joins into one link that covers both families; the
// campaign's connections to its load agents are no link, their load is.
#include "nabla/campaign/links.hh"

#include <gtest/gtest.h>

#include "nabla/campaign/spec.hh"

namespace {

using namespace nabla::campaign;

constexpr const char* kSpec = R"(
name = "links"
[[node]]
name = "web"
addresses = ["10.9.0.2", "10.213.0.2"]
injectd = "10.213.0.2"
sniffd = "10.213.0.2"
[[node]]
name = "app"
address = "10.213.0.3"
sniffd = "10.213.0.3"
[workload]
target = "http://10.213.0.2:9001"
rate = 10
[links]
exclude = ["tcp 10.213.0.1 -> 10.213.0.2:9001"]
include = ["udp 10.213.0.2:5000 -> 10.213.0.7:53"]
)";

FlowEnd flow(const std::string& local, uint16_t lport, const std::string& remote, uint16_t rport) {
  FlowEnd f;
  f.proto = "tcp";
  f.local_addr = local;
  f.local_port = lport;
  f.remote_addr = remote;
  f.remote_port = rport;
  return f;
}

Link link(const std::string& src, uint16_t sport, const std::string& dst, uint16_t dport) {
  Link l;
  l.proto = "tcp";
  l.src.host = src;
  l.src.port = sport;
  l.dst.host = dst;
  l.dst.port = dport;
  return l;
}

const CampaignLink* find(const std::vector<CampaignLink>& v, const std::string& label) {
  for (const CampaignLink& c : v) {
    if (c.label == label) return &c;
  }
  return nullptr;
}

TEST(CampaignLinks, SpecsLabelsAndMeasurability) {
  const CampaignSpec spec = parse_campaign_spec(kSpec);
  // web talks to app from its second address; the record says which.
  std::vector<NodeFlows> nodes = {
      {"web", {"10.9.0.2", "10.213.0.2"}, {flow("10.9.0.2", 0, "10.213.0.3", 9002)}},
      {"app", {"10.213.0.3"}, {flow("10.213.0.3", 9002, "10.9.0.2", 0)}}};
  const std::vector<Link> discovered = {
      link("web", 0, "app", 9002), link("app", 9002, "web", 0),
      link("10.213.0.1", 0, "web", 9001),  // the client: no node, excluded anyway
  };
  const auto links = assemble_links(spec, nodes, discovered);
  ASSERT_EQ(links.size(), 3u);

  const CampaignLink* req = find(links, "tcp web -> app:9002");
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->spec, "tcp 10.9.0.2:* -> 10.213.0.3:9002");
  EXPECT_TRUE(req->measurable);
  EXPECT_EQ(req->src_node, "web");

  const CampaignLink* resp = find(links, "tcp app:9002 -> web");
  ASSERT_NE(resp, nullptr);
  EXPECT_EQ(resp->spec, "tcp 10.213.0.3:9002 -> 10.9.0.2:*");
  EXPECT_FALSE(resp->measurable);
  EXPECT_EQ(resp->note, "node app has no injectd");

  // The include: addresses mapped to nodes where they belong, fixed ports kept.
  const CampaignLink* inc = find(links, "udp web:5000 -> 10.213.0.7:53");
  ASSERT_NE(inc, nullptr);
  EXPECT_EQ(inc->spec, "udp 10.213.0.2:5000 -> 10.213.0.7:53");
  EXPECT_TRUE(inc->measurable);
}

TEST(CampaignLinks, IncludeFoundByDiscoveryIsListedOnce) {
  std::string text = kSpec;
  text.replace(text.find("udp 10.213.0.2:5000 -> 10.213.0.7:53"), 36,
               "tcp 10.9.0.2:* -> 10.213.0.3:9002");
  const CampaignSpec spec = parse_campaign_spec(text);
  std::vector<NodeFlows> nodes = {
      {"web", {"10.9.0.2", "10.213.0.2"}, {flow("10.9.0.2", 0, "10.213.0.3", 9002)}},
      {"app", {"10.213.0.3"}, {}}};
  const auto links = assemble_links(spec, nodes, {link("web", 0, "app", 9002)});
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].label, "tcp web -> app:9002");
}

TEST(CampaignLinks, LabelWritesOnlyFixedPorts) {
  EXPECT_EQ(link_label(link("web", 0, "app", 9002)), "tcp web -> app:9002");
  EXPECT_EQ(link_label(link("app", 9002, "web", 0)), "tcp app:9002 -> web");
}

constexpr const char* kDualStackSpec = R"(
name = "dual"
[[node]]
name = "web"
addresses = ["10.213.0.2", "fd00::2"]
injectd = "10.213.0.2"
[[node]]
name = "app"
addresses = ["10.213.0.3", "fd00::3"]
sniffd = "10.213.0.3"
[workload]
target = "http://10.213.0.2:9001"
rate = 10
)";

FlowEnd counted(FlowEnd f, uint64_t segments_out, uint64_t segments_in) {
  f.segments_out = segments_out;
  f.segments_in = segments_in;
  return f;
}

TEST(CampaignLinks, DualStackPairIsOneLinkCoveringBothFamilies) {
  const CampaignSpec spec = parse_campaign_spec(kDualStackSpec);
  // web's client talks to app:9002 over IPv4 and (busier) over IPv6.
  const std::vector<NodeFlows> nodes = {
      {"web",
       {"10.213.0.2", "fd00::2"},
       {counted(flow("10.213.0.2", 0, "10.213.0.3", 9002), 10, 10),
        counted(flow("fd00::2", 0, "fd00::3", 9002), 30, 30)}},
      {"app",
       {"10.213.0.3", "fd00::3"},
       {counted(flow("10.213.0.3", 9002, "10.213.0.2", 0), 10, 10),
        counted(flow("fd00::3", 9002, "fd00::2", 0), 30, 30)}}};
  const std::vector<Link> joined = join_flows(nodes);
  ASSERT_EQ(joined.size(), 2u);  // one link each way, both families in each
  const auto links = assemble_links(spec, nodes, joined);
  const CampaignLink* req = find(links, "tcp web -> app:9002");
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->link.segments, 40u);
  EXPECT_EQ(req->spec, "tcp [fd00::2]:* -> [fd00::3]:9002");
  EXPECT_EQ(req->family_specs, std::vector<std::string>{"tcp 10.213.0.2:* -> 10.213.0.3:9002"});
  EXPECT_TRUE(req->measurable);

  // Excluding one family's addresses leaves the link the other.
  std::string text = kDualStackSpec;
  text += "[links]\nexclude = [\"tcp 10.213.0.2 -> 10.213.0.3\"]\n";
  const auto narrowed = assemble_links(parse_campaign_spec(text), nodes, joined);
  req = find(narrowed, "tcp web -> app:9002");
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->spec, "tcp [fd00::2]:* -> [fd00::3]:9002");
  EXPECT_TRUE(req->family_specs.empty());
}

TEST(CampaignLinks, ConnectionsToTheLoadAgentsAreNoLinkTheirLoadIs) {
  const CampaignSpec spec = parse_campaign_spec(R"(
name = "agents"
[[node]]
name = "client"
address = "10.213.0.1"
injectd = "10.213.0.1"
sniffd = "10.213.0.1"
[[node]]
name = "web"
address = "10.213.0.2"
injectd = "10.213.0.2"
sniffd = "10.213.0.2"
[workload]
target = "http://10.213.0.2:9001"
rate = 10
agents = ["10.213.0.1:7400", "web/throughput"]
)");
  const std::vector<Link> discovered = {
      link("client", 0, "client", 7400),  // the campaign polls the agent on its own node
      link("client", 7400, "client", 0),
      link("client", 0, "web", 7313),  // web's agent, at the default port
      link("web", 7313, "client", 0),
      link("client", 0, "web", 9001),  // the agent's load
      link("client", 0, "web", 7400),  // web's 7400 is no agent's
  };
  const auto links = assemble_links(spec, {}, discovered);
  ASSERT_EQ(links.size(), 2u);
  const CampaignLink* load = find(links, "tcp client -> web:9001");
  ASSERT_NE(load, nullptr);
  EXPECT_TRUE(load->measurable);
  EXPECT_NE(find(links, "tcp client -> web:7400"), nullptr);
}

}  // namespace
