// `nabla discover` end to end on a Testbed of four hosts (client, web, app,
// db: one namespace each, bridged in a switch namespace, 10.213.0.0/24
// inside them only; all removed on exit, even on failure):
//   client (this test) → web nabla-tier (serial:1) → app (serial:3) → db,
// a nabla-sniffd on every host listening on its testbed address with a key,
// 200 requests on one keep-alive connection, then `nabla discover --json`
// run inside the client namespace must return exactly the 6 one-way links
// with the right processes at both ends, ephemeral ports folded to 0,
// segment counts that follow the call patterns, and no control connection.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::ChildProcess;
using nabla::common::FileDescriptor;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kRequests = 200;

const json* find_link(const json& links, const std::string& src, const std::string& dst) {
  for (const json& l : links) {
    if (l["src"]["host"] == src && l["dst"]["host"] == dst) return &l;
  }
  return nullptr;
}

TEST(DiscoverTestbed, FindsExactlyTheSixOneWayLinksOfTheChain) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  const auto t0 = Clock::now();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  for (const char* name : {"client", "web", "app", "db"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& client = tb.host("client");
  const std::string web = tb.host("web").address;
  const std::string app = tb.host("app").address;
  const std::string db = tb.host("db").address;

  const std::string tier = NABLA_TIER_PATH;
  ChildProcess& db_tier = tb.start(
      "db", {tier, "--listen", db + ":9003", "--workers", "2", "--url", "* service=fixed:100us"});
  ChildProcess& app_tier =
      tb.start("app", {tier, "--listen", app + ":9002", "--workers", "2", "--tier",
                       "db=" + db + ":9003", "--url", "* call=db:serial:3"});
  ChildProcess& web_tier =
      tb.start("web", {tier, "--listen", web + ":9001", "--workers", "2", "--tier",
                       "app=" + app + ":9002", "--url", "* call=app:serial:1"});
  // Readiness, downstream first, from the caller's host, before any sniffer
  // runs (these probe connections carry no data, so they are no links).
  nabla::testing::connect_in(tb.host("app").ns, db, 9003);
  nabla::testing::connect_in(tb.host("web").ns, app, 9002);
  nabla::testing::connect_in(client.ns, web, 9001);

  const nabla::testing::KeyFile key("discover");
  nabla::testing::start_sniffers(tb, NABLA_SNIFFD_PATH, key, "100ms", client.ns);

  FileDescriptor conn = nabla::testing::connect_in(client.ns, web, 9001);
  for (int i = 0; i < kRequests; ++i)
    ASSERT_TRUE(nabla::testing::http_get_ok(conn)) << "request " << i;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a scan after the load

  std::vector<std::string> args = {"--key-file", key.path(), "--for", "1s", "--json"};
  for (const auto& h : tb.hosts()) {
    args.push_back("--node");
    args.push_back(h->name + "=" + h->address + ":" + std::to_string(nabla::testing::kSniffdPort));
  }
  const auto result = nabla::testing::run_discover(NABLA_PATH, client.ns, args, "discover-out");
  ASSERT_TRUE(result.has_value());
  const json& links = (*result)["links"];
  ASSERT_EQ(links.size(), 6u) << links.dump(2);

  struct Expect {
    const char* src;
    const char* dst;
    pid_t src_pid, dst_pid;
    int src_port, dst_port;
  };
  const pid_t me = ::getpid();
  const Expect expected[] = {
      {"client", "web", me, web_tier.pid(), 0, 9001},
      {"web", "client", web_tier.pid(), me, 9001, 0},
      {"web", "app", web_tier.pid(), app_tier.pid(), 0, 9002},
      {"app", "web", app_tier.pid(), web_tier.pid(), 9002, 0},
      {"app", "db", app_tier.pid(), db_tier.pid(), 0, 9003},
      {"db", "app", db_tier.pid(), app_tier.pid(), 9003, 0},
  };
  for (const Expect& e : expected) {
    const json* l = find_link(links, e.src, e.dst);
    ASSERT_NE(l, nullptr) << e.src << "->" << e.dst << " missing in " << links.dump(2);
    EXPECT_EQ((*l)["proto"], "tcp");
    EXPECT_EQ((*l)["src"]["pid"], e.src_pid) << e.src << "->" << e.dst;
    EXPECT_EQ((*l)["dst"]["pid"], e.dst_pid) << e.src << "->" << e.dst;
    EXPECT_EQ((*l)["src"]["port"], e.src_port) << e.src << "->" << e.dst;
    EXPECT_EQ((*l)["dst"]["port"], e.dst_port) << e.src << "->" << e.dst;
    EXPECT_TRUE((*l)["src"]["known"].get<bool>() && (*l)["dst"]["known"].get<bool>());
  }
  EXPECT_EQ((*find_link(links, "web", "app"))["src"]["comm"], "nabla-tier");
  EXPECT_EQ((*find_link(links, "db", "app"))["src"]["comm"], "nabla-tier");
  // Message counts follow the patterns: each request and each response is one
  // small data segment, so requests are counted exactly; the bound allows
  // for a rare retransmission on a loaded machine (data_segs_out counts them).
  auto segments = [&](const char* s, const char* d) {
    return (*find_link(links, s, d))["segments"].get<uint64_t>();
  };
  auto expect_about = [&](const char* s, const char* d, uint64_t n) {
    EXPECT_GE(segments(s, d), n) << s << "->" << d;
    EXPECT_LE(segments(s, d), n + n / 20) << s << "->" << d;
  };
  expect_about("client", "web", kRequests);
  expect_about("web", "client", kRequests);
  expect_about("web", "app", kRequests);
  expect_about("app", "web", kRequests);
  expect_about("app", "db", 3 * kRequests);
  expect_about("db", "app", 3 * kRequests);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
}

}  // namespace
