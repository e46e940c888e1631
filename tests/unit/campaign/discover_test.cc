// The discovery join on literal flows.list records.
#include "nabla/campaign/discover.hh"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace nabla::campaign {
namespace {

using nlohmann::json;

FlowEnd flow(const std::string& proto, const std::string& la, uint16_t lp, int32_t pid,
             const std::string& comm, const std::string& ra, uint16_t rp, uint64_t so, uint64_t si,
             uint64_t bo, uint64_t bi, bool control = false) {
  json j = {
      {"proto", proto},
      {"local", {{"addr", la}, {"port", lp}, {"pid", pid}, {"comm", comm}}},
      {"remote", {{"addr", ra}, {"port", rp}}},
      {"direction", lp == 0 ? "outbound" : "inbound"},
      {"control", control},
      {"total", {{"segments_out", so}, {"segments_in", si}, {"bytes_out", bo}, {"bytes_in", bi}}}};
  return parse_flow(j);
}

const Link* find(const std::vector<Link>& links, const std::string& src, const std::string& dst) {
  for (const Link& l : links) {
    if (l.src.host == src && l.dst.host == dst) return &l;
  }
  return nullptr;
}

// client(10.0.0.1, no sniffer) → web(10.0.0.2:80) → app(10.0.0.3:81).
std::vector<NodeFlows> chain() {
  NodeFlows web{"web", {}, {}};
  web.flows.push_back(flow("tcp", "10.0.0.2", 80, 100, "nginx", "10.0.0.1", 0, 20, 10, 2000, 500));
  web.flows.push_back(flow("tcp", "10.0.0.2", 0, 100, "nginx", "10.0.0.3", 81, 10, 10, 400, 900));
  // nabla's own control connection to web's sniffd.
  web.flows.push_back(
      flow("tcp", "10.0.0.2", 7312, 7, "nabla-sniffd", "10.0.0.1", 0, 5, 5, 50, 50, true));
  NodeFlows app{"app", {"10.0.0.3"}, {}};
  app.flows.push_back(flow("tcp", "10.0.0.3", 81, 200, "java", "10.0.0.2", 0, 10, 10, 900, 400));
  return {web, app};
}

TEST(DiscoverJoin, TcpConnectionGivesTwoOneWayLinksWithBothProcesses) {
  const auto links = join_flows(chain());
  // web→app, app→web, web→client, client→web; no control link.
  ASSERT_EQ(links.size(), 4u);
  const Link* wa = find(links, "web", "app");
  ASSERT_NE(wa, nullptr);
  EXPECT_EQ(wa->src.pid, 100);
  EXPECT_EQ(wa->src.port, 0);
  EXPECT_EQ(wa->dst.pid, 200);
  EXPECT_EQ(wa->dst.comm, "java");
  EXPECT_EQ(wa->dst.port, 81);
  EXPECT_TRUE(wa->dst.known);
  // Each direction counted once, from its sender's side.
  EXPECT_EQ(wa->segments, 10u);
  EXPECT_EQ(wa->bytes, 400u);
  const Link* aw = find(links, "app", "web");
  ASSERT_NE(aw, nullptr);
  EXPECT_EQ(aw->bytes, 900u);
  EXPECT_EQ(aw->src.port, 81);
  EXPECT_EQ(aw->dst.port, 0);
}

TEST(DiscoverJoin, UnsniffedPeerKeepsUnknownProcess) {
  const auto links = join_flows(chain());
  const Link* cw = find(links, "10.0.0.1", "web");
  const Link* wc = find(links, "web", "10.0.0.1");
  ASSERT_NE(cw, nullptr);
  ASSERT_NE(wc, nullptr);
  EXPECT_FALSE(cw->src.known);
  EXPECT_EQ(cw->src.pid, 0);
  EXPECT_EQ(cw->dst.port, 80);
  EXPECT_EQ(cw->segments, 10u);  // web's segments_in
  EXPECT_EQ(cw->bytes, 500u);
  EXPECT_EQ(wc->segments, 20u);
  EXPECT_EQ(wc->bytes, 2000u);
  // A node known by name only: its host label is used, its process unknown.
  auto nodes = chain();
  nodes.push_back({"client", {"10.0.0.1"}, {}});
  const auto named = join_flows(nodes);
  const Link* named_cw = find(named, "client", "web");
  ASSERT_NE(named_cw, nullptr);
  EXPECT_FALSE(named_cw->src.known);
}

TEST(DiscoverJoin, ControlConnectionsOnlyOnRequest) {
  JoinOptions o;
  o.include_control = true;
  const auto links = join_flows(chain(), o);
  EXPECT_EQ(links.size(), 6u);
  bool saw = false;
  for (const Link& l : links) saw = saw || l.src.comm == "nabla-sniffd";
  EXPECT_TRUE(saw);
}

TEST(DiscoverJoin, MinMessagesDropsQuietDirections) {
  JoinOptions o;
  o.min_messages = 15;
  const auto links = join_flows(chain(), o);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].src.host, "web");
  EXPECT_EQ(links[0].dst.host, "10.0.0.1");
}

TEST(DiscoverJoin, LoopbackPeerIsOnTheSameNode) {
  NodeFlows n{"box", {}, {}};
  n.flows.push_back(flow("tcp", "127.0.0.1", 0, 1, "a", "127.0.0.1", 9, 3, 3, 30, 30));
  n.flows.push_back(flow("tcp", "127.0.0.1", 9, 2, "b", "127.0.0.1", 0, 3, 3, 30, 30));
  const auto links = join_flows({n});
  ASSERT_EQ(links.size(), 2u);
  for (const Link& l : links) {
    EXPECT_EQ(l.src.host, "box");
    EXPECT_EQ(l.dst.host, "box");
    EXPECT_TRUE(l.src.known && l.dst.known);
    EXPECT_NE(l.src.pid, l.dst.pid);
  }
}

TEST(DiscoverJoin, UdpWithoutCountersFollowsDirection) {
  NodeFlows rx{"rx", {"10.0.0.5"}, {}};
  rx.flows.push_back(flow("udp", "10.0.0.5", 9999, 5, "recv", "10.0.0.6", 0, 0, 0, 0, 0));
  const auto links = join_flows({rx});
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].src.host, "10.0.0.6");
  EXPECT_EQ(links[0].dst.host, "rx");
  EXPECT_EQ(links[0].dst.port, 9999);
}

TEST(DiscoverJoin, UncountedEndGivesWayToCountedPeer) {
  // A short TCP connection: the client end known only from conntrack (no
  // counts), the server end counted by a scan.
  NodeFlows c{"c", {"10.0.0.7"}, {}};
  c.flows.push_back(flow("tcp", "10.0.0.7", 0, 70, "curl", "10.0.0.8", 80, 0, 0, 0, 0));
  NodeFlows s{"s", {"10.0.0.8"}, {}};
  s.flows.push_back(flow("tcp", "10.0.0.8", 80, 80, "srv", "10.0.0.7", 0, 1, 1, 90, 40));
  auto links = join_flows({c, s});
  ASSERT_EQ(links.size(), 2u);
  const Link* cs = find(links, "c", "s");
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->segments, 1u);
  EXPECT_EQ(cs->bytes, 40u);
  EXPECT_EQ(cs->src.pid, 70);
  // Both ends uncounted: one client→server link, kept at min_messages 1.
  s.flows[0] = flow("tcp", "10.0.0.8", 80, 80, "srv", "10.0.0.7", 0, 0, 0, 0, 0);
  links = join_flows({c, s});
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].src.pid, 70);
  EXPECT_EQ(links[0].dst.pid, 80);
  EXPECT_EQ(links[0].dst.port, 80);
}

TEST(DiscoverJoin, ManyServersAndMergedPolls) {
  // 2000 server ports on s, each called from c: 4000 one-way links, each
  // direction counted once; a second poll replaces every record.
  constexpr int kServers = 2000;
  NodeFlows c{"c", {"10.1.0.1"}, {}};
  NodeFlows s{"s", {"10.1.0.2"}, {}};
  std::vector<FlowEnd> update;
  for (int i = 0; i < kServers; ++i) {
    const auto port = static_cast<uint16_t>(10000 + i);
    c.flows.push_back(flow("tcp", "10.1.0.1", 0, 1, "cli", "10.1.0.2", port, 1, 1, 10, 20));
    s.flows.push_back(flow("tcp", "10.1.0.2", port, 2, "srv", "10.1.0.1", 0, 1, 1, 20, 10));
    update.push_back(flow("tcp", "10.1.0.1", 0, 1, "cli", "10.1.0.2", port, 2, 2, 30, 40));
  }
  merge_flows(c.flows, update);
  ASSERT_EQ(c.flows.size(), static_cast<size_t>(kServers));
  const auto links = join_flows({c, s});
  ASSERT_EQ(links.size(), static_cast<size_t>(2 * kServers));
  uint64_t bytes = 0;
  for (const Link& l : links) bytes += l.bytes;
  EXPECT_EQ(bytes, static_cast<uint64_t>(kServers) * (30 + 20));
}

TEST(DiscoverJoin, MergeReplacesCumulativeRecords) {
  std::vector<FlowEnd> flows = chain()[0].flows;
  merge_flows(flows, {flow("tcp", "10.0.0.2", 80, 100, "nginx", "10.0.0.1", 0, 99, 10, 2, 5),
                      flow("udp", "10.0.0.2", 53, 100, "nginx", "10.0.0.9", 0, 0, 0, 0, 0)});
  ASSERT_EQ(flows.size(), 4u);
  EXPECT_EQ(flows[0].segments_out, 99u);
}

// nabla-sniffd folds a tuple's pid-0 record into its owner's record once the
// owner is known; a later poll's owner record then carries both counts, and
// the earlier pid-0 record must not count them again.
TEST(DiscoverJoin, MergeDropsAPidZeroRecordOnceItsOwnerIsReported) {
  NodeFlows c{"c", {"10.1.0.1"}, {}};
  NodeFlows s{"s", {"10.1.0.2"}, {}};
  c.flows.push_back(flow("tcp", "10.1.0.1", 0, 0, "", "10.1.0.2", 80, 3, 3, 300, 900));
  s.flows.push_back(flow("tcp", "10.1.0.2", 80, 2, "srv", "10.1.0.1", 0, 5, 5, 1500, 500));
  merge_flows(c.flows, {flow("tcp", "10.1.0.1", 0, 7, "cli", "10.1.0.2", 80, 5, 5, 500, 1500)});
  ASSERT_EQ(c.flows.size(), 1u);
  EXPECT_EQ(c.flows[0].pid, 7);
  const auto links = join_flows({c, s});
  ASSERT_EQ(links.size(), 2u);
  for (const Link& l : links) EXPECT_EQ(l.segments, 5u) << l.src.comm << " -> " << l.dst.comm;
  // Another tuple's pid-0 record stays.
  merge_flows(c.flows, {flow("tcp", "10.1.0.1", 0, 0, "", "10.1.0.2", 81, 1, 1, 10, 10)});
  merge_flows(c.flows, {flow("tcp", "10.1.0.1", 0, 7, "cli", "10.1.0.2", 80, 6, 6, 600, 1600)});
  EXPECT_EQ(c.flows.size(), 2u);
}

TEST(DiscoverJoin, ParseNamesMissingField) {
  json j = {{"proto", "tcp"},
            {"local", {{"addr", "1.2.3.4"}}},
            {"remote", {{"addr", "1.2.3.5"}, {"port", 80}}}};
  try {
    parse_flow(j);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("local.port"), std::string::npos) << e.what();
  }
}

TEST(DiscoverJoin, JsonAndDotOutput) {
  const auto links = join_flows(chain());
  const json j = links_to_json(links);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["src"].contains("comm"), true);
  EXPECT_TRUE(j[0].contains("segments"));
  const std::string dot = links_to_dot(links);
  EXPECT_NE(dot.find("\"web/nginx[100]\" -> \"app/java[200]\" [label=\"tcp 81 10 msgs\"]"),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("\"10.0.0.1/?\""), std::string::npos);
}

// One node's sniffer sees two containers: a client in one (10.1.0.2) and a
// server in the other (10.1.0.3:80), each flow labelled with its namespace.
NodeFlows two_containers() {
  NodeFlows node{"node", {}, {}};
  FlowEnd client = flow("tcp", "10.1.0.2", 0, 300, "curl", "10.1.0.3", 80, 5, 5, 100, 900);
  client.netns = {4026532301, "", "3f2a9c1d0b7e", false};
  FlowEnd server = flow("tcp", "10.1.0.3", 80, 812, "nginx", "10.1.0.2", 0, 5, 5, 900, 100);
  server.netns = {4026532302, "db-ns", "", false};
  node.flows = {client, server};
  return node;
}

TEST(DiscoverJoin, EndsInTwoNamespacesOfOneNodeKeepTheirNamespaces) {
  const auto links = join_flows({two_containers()});
  ASSERT_EQ(links.size(), 2u);
  const Link& request = links[0].src.comm == "curl" ? links[0] : links[1];
  EXPECT_EQ(request.dst.comm, "nginx");
  EXPECT_EQ(request.segments, 5u);
  EXPECT_EQ(netns_tag(request.src), "ctr-3f2a9c1d0b7e");
  EXPECT_EQ(netns_tag(request.dst), "db-ns");
  LinkEnd own;
  EXPECT_EQ(netns_tag(own), "");
  LinkEnd unnamed;
  unnamed.own_netns = false;
  unnamed.netns_inode = 42;
  EXPECT_EQ(netns_tag(unnamed), "netns-42");
  const std::string dot = links_to_dot(links);
  EXPECT_NE(dot.find("\"node/curl[300]@ctr-3f2a9c1d0b7e\" -> \"node/nginx[812]@db-ns\""),
            std::string::npos)
      << dot;
  const json j = links_to_json(links);
  const json& src = j[0]["src"]["comm"] == "curl" ? j[0]["src"] : j[1]["src"];
  EXPECT_EQ(src["netns"]["container"], "3f2a9c1d0b7e");
  EXPECT_EQ(src["netns"]["inode"], 4026532301u);
  EXPECT_FALSE(links_to_json(join_flows(chain()))[0]["src"].contains("netns"));  // the node's own
}

TEST(DiscoverJoin, ANodeThatIsOneNamespaceKeepsOnlyItsRecords) {
  const NodeFlows node = two_containers();
  const FlowEnd& client = node.flows[0];
  const FlowEnd& server = node.flows[1];
  EXPECT_TRUE(flow_in_node_namespace(client, std::nullopt, std::nullopt));
  EXPECT_TRUE(flow_in_node_namespace(client, std::nullopt, "3f2a9c1d0b7e"));
  EXPECT_TRUE(flow_in_node_namespace(
      client, std::nullopt, "3f2a9c1d0b7e5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a09"));
  EXPECT_FALSE(flow_in_node_namespace(server, std::nullopt, "3f2a9c1d0b7e"));
  EXPECT_TRUE(flow_in_node_namespace(server, "db-ns", std::nullopt));
  EXPECT_FALSE(flow_in_node_namespace(client, "db-ns", std::nullopt));
  EXPECT_TRUE(flow_in_node_namespace(client, "pid:812", std::nullopt));  // not matched by name
}

}  // namespace
}  // namespace nabla::campaign
