// A campaign's names resolved once before the run: in place, printed, listed
// in the stored config; failures name the key.
#include "nabla/campaign/hosts.hh"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fake_resolver.hh"

namespace nabla::campaign {
namespace {

using nabla::testing::FakeResolver;
using Table = FakeResolver::Table;

constexpr const char* kNamed = R"(
name = "named"
[[node]]
name = "web"
address = "web01"
injectd = "web01:7311"
sniffd = "web01"
[[node]]
name = "app"
addresses = ["10.213.0.3", "app01"]
sniffd = "10.213.0.3:7312"
[workload]
target = "http://web01:8080"
rate = 100
)";

class CampaignHosts : public ::testing::Test {
 protected:
  std::ostringstream log;
  std::string error_of(CampaignSpec spec, const common::Resolver& r) {
    try {
      resolve_campaign_hosts(spec, r, log);
    } catch (const common::ResolveError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(CampaignHosts, NamesParseAndAreResolvedOnceInPlace) {
  CampaignSpec spec = parse_campaign_spec(kNamed);
  EXPECT_EQ(spec.nodes[0].addresses.front(), "web01");
  EXPECT_TRUE(spec.resolved.empty());
  const FakeResolver fake({{"web01", {"fd00::2", "10.213.0.2"}}, {"app01", {"10.9.0.3"}}});
  resolve_campaign_hosts(spec, fake, log);
  // web01 is written four times (twice as a daemon, once as the IPv4-only
  // target): one lookup, one line.
  EXPECT_EQ(fake.lookups("web01"), 1);
  EXPECT_EQ(fake.lookups("app01"), 1);
  EXPECT_EQ(log.str(), "resolved web01 -> 10.213.0.2\nresolved app01 -> 10.9.0.3\n");
  EXPECT_EQ(spec.nodes[0].addresses, (std::vector<std::string>{"10.213.0.2"}));
  EXPECT_EQ(spec.nodes[0].injectd->to_string(), "10.213.0.2:7311");
  EXPECT_EQ(spec.nodes[0].injectd->name, "web01");
  EXPECT_EQ(spec.nodes[0].sniffd->to_string(), "10.213.0.2:7312");
  EXPECT_EQ(spec.nodes[1].addresses, (std::vector<std::string>{"10.213.0.3", "10.9.0.3"}));
  EXPECT_EQ(spec.nodes[1].sniffd->name, "");
  EXPECT_EQ(spec.workload.host, "10.213.0.2");
  EXPECT_EQ(spec.workload.host_name, "web01");
  EXPECT_EQ(spec.node_by_address("10.213.0.2"), &spec.nodes[0]);

  const nlohmann::json resolved = to_json(spec).at("resolved");
  ASSERT_EQ(resolved.size(), 5u);
  EXPECT_EQ(
      resolved[0],
      (nlohmann::json{{"key", "node[0].address"}, {"name", "web01"}, {"address", "10.213.0.2"}}));
  EXPECT_EQ(resolved[3]["key"], "node[1].address");
  EXPECT_EQ(
      resolved[4],
      (nlohmann::json{{"key", "workload.target"}, {"name", "web01"}, {"address", "10.213.0.2"}}));
  // The name as written stays in the target.
  EXPECT_EQ(to_json(spec)["workload"]["target"], "http://web01:8080");
}

TEST_F(CampaignHosts, LiteralsNeedNoLookupAndAddNothing) {
  CampaignSpec spec = parse_campaign_spec(R"(
name = "lit"
[[node]]
name = "web"
address = "10.213.0.2"
sniffd = "10.213.0.2"
[workload]
target = "http://10.213.0.2:8080"
rate = 100
)");
  const FakeResolver fake({});
  resolve_campaign_hosts(spec, fake, log);
  EXPECT_EQ(fake.lookups(), 0);
  EXPECT_TRUE(spec.resolved.empty());
  EXPECT_FALSE(to_json(spec).contains("resolved"));
  EXPECT_EQ(log.str(), "");
}

TEST_F(CampaignHosts, FailuresNameTheKeyAndTheName) {
  const CampaignSpec spec = parse_campaign_spec(kNamed);
  EXPECT_EQ(error_of(spec, FakeResolver(Table{{"web01", {"10.213.0.2"}}})),
            "node[1].address: cannot resolve 'app01': Name or service not known");
  // Two names of two nodes that turn out to be one address.
  EXPECT_NE(error_of(spec, FakeResolver(Table{{"web01", {"10.213.0.3"}}, {"app01", {"10.9.0.3"}}}))
                .find("belongs to two nodes (web and app)"),
            std::string::npos);
}

// The load engine speaks IPv6 too: a name with only an IPv6 address is
// used (an IPv4 one is preferred when there is one).
TEST_F(CampaignHosts, ANameWithOnlyIpv6ResolvesToIt) {
  CampaignSpec spec = parse_campaign_spec(kNamed);
  const FakeResolver fake(Table{{"web01", {"fd00::2"}}, {"app01", {"fd00::3", "10.9.0.3"}}});
  resolve_campaign_hosts(spec, fake, log);
  EXPECT_EQ(spec.workload.host, "fd00::2");
  EXPECT_EQ(spec.workload.host_name, "web01");
  EXPECT_EQ(spec.nodes[0].addresses, std::vector<std::string>{"fd00::2"});
  EXPECT_EQ(spec.nodes[1].addresses, (std::vector<std::string>{"10.213.0.3", "10.9.0.3"}));
  EXPECT_EQ(spec.nodes[0].injectd->to_string(), "[fd00::2]:7311");
}

TEST(CampaignSpecNames, MalformedNamesAreSpecErrors) {
  std::string text = kNamed;
  text.replace(text.find("address = \"web01\""), 17, "address = \"web..01\"");
  try {
    parse_campaign_spec(text);
    FAIL() << "accepted a malformed name";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node[0].address"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nabla::campaign
