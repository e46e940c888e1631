#include "nabla/common/resolve.hh"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "fake_resolver.hh"

namespace nabla::common {
namespace {

class Resolve : public ::testing::Test {
 protected:
  testing::FakeResolver fake{
      {{"web01", {"fd00::2", "10.0.0.2", "10.0.0.3"}}, {"v6only", {"fd00::9"}}, {"empty", {}}}};
  Resolver resolver = fake;
};

TEST_F(Resolve, LiteralsPassThroughWithoutALookup) {
  EXPECT_EQ(resolve_host("10.0.0.7", resolver, "--node").address, "10.0.0.7");
  EXPECT_EQ(resolve_host("fd00::7", resolver, "--node").address, "fd00::7");
  EXPECT_EQ(resolve_host("10.0.0.7", resolver, "--node").name, "");
  EXPECT_EQ(fake.lookups(), 0);
}

TEST_F(Resolve, NamesPreferTheFirstIpv4Address) {
  const ResolvedHost r = resolve_host("web01", resolver, "--node");
  EXPECT_EQ(r.name, "web01");
  EXPECT_EQ(r.address, "10.0.0.2");
  EXPECT_EQ(fake.lookups("web01"), 1);
  EXPECT_EQ(resolved_line(r), "resolved web01 -> 10.0.0.2");
}

TEST_F(Resolve, Ipv6OnlyWhenThereIsNoIpv4UnlessIpv4IsRequired) {
  EXPECT_EQ(resolve_host("v6only", resolver, "--node").address, "fd00::9");
  try {
    resolve_host("v6only", resolver, "--target", AddressFamily::kIpv4);
    FAIL() << "expected ResolveError";
  } catch (const ResolveError& e) {
    EXPECT_STREQ(e.what(), "--target: cannot resolve 'v6only': has no IPv4 address (only IPv6)");
  }
}

TEST_F(Resolve, FailuresNameTheKeyTheNameAndTheResolversMessage) {
  try {
    resolve_host("nosuch", resolver, "node[1].sniffd");
    FAIL() << "expected ResolveError";
  } catch (const ResolveError& e) {
    EXPECT_STREQ(e.what(), "node[1].sniffd: cannot resolve 'nosuch': Name or service not known");
  }
  EXPECT_THROW(resolve_host("empty", resolver, "--node"), ResolveError);
  // A malformed name is refused before any lookup.
  EXPECT_THROW(resolve_host("-web", resolver, "--node"), ResolveError);
  EXPECT_THROW(resolve_host("bad name", resolver, "--node"), ResolveError);
  EXPECT_EQ(fake.lookups("-web") + fake.lookups("bad name"), 0);
}

TEST(HostName, Syntax) {
  EXPECT_TRUE(is_host_name("web01"));
  EXPECT_TRUE(is_host_name("web-01.example.org"));
  EXPECT_TRUE(is_host_name("svc_a"));
  EXPECT_FALSE(is_host_name(""));
  EXPECT_FALSE(is_host_name("10.0.0.1"));
  EXPECT_FALSE(is_host_name("fd00::1"));
  EXPECT_FALSE(is_host_name("a..b"));
  EXPECT_FALSE(is_host_name("web-"));
  EXPECT_FALSE(is_host_name("-web"));
  EXPECT_FALSE(is_host_name("web 01"));
  EXPECT_FALSE(is_host_name(std::string(64, 'a')));
}

TEST_F(Resolve, HostPortKeepsTheNameAndLogsOnce) {
  HostPort a = parse_host_port("web01:7312", 1);
  std::ostringstream log;
  resolve_host_port(a, resolver, "--node", log);
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.name, "web01");
  EXPECT_EQ(a.port, 7312);
  EXPECT_EQ(log.str(), "resolved web01 -> 10.0.0.2\n");
  HostPort literal = parse_host_port("[fd00::3]:9", 1);
  resolve_host_port(literal, resolver, "--node", log);
  EXPECT_EQ(literal.host, "fd00::3");
  EXPECT_EQ(literal.name, "");
  EXPECT_EQ(log.str(), "resolved web01 -> 10.0.0.2\n");
  EXPECT_EQ(fake.lookups(), 1);
}

TEST(SystemResolver, ResolvesLocalhostFromTheHostsFile) {
  // /etc/hosts names localhost on every supported system.
  const ResolvedHost r = resolve_host("localhost", system_resolver(), "--node");
  EXPECT_EQ(r.name, "localhost");
  EXPECT_TRUE(IpAddress::parse(r.address).value().is_loopback()) << r.address;
}

}  // namespace
}  // namespace nabla::common
