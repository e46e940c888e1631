// IPv6 end to end on a Testbed of three hosts (client, web, app: one
// namespace each, bridged in a switch namespace, removed on exit even on
// failure), each given an IPv6 address fd00:213::N/64 (nodad: usable at
// once) beside its testbed IPv4 one. Everything the test does goes over
// IPv6: the tiers listen on their IPv6 addresses (web calls app serial:2),
// and a keyed nabla-sniffd and nabla-injectd on every host listen on
// [fd00:213::N]:7312 and :7311.
//   - `nabla discover --node web=[fd00:213::2]:7312 ...` finds the link
//     web -> app:9002 with nabla-tier at both ends;
//   - `nabla inject` delays that link through ip6tables + NFQUEUE: requests
//     through web take at least the delay while the injection runs and less
//     after it, and no rule is left in either table after it;
//   - a one-link campaign (short phases) on nodes written as IPv6 addresses
//     and an http://[...]:9001 target completes and stores the link's
//     gradient and its flows with their IPv6 addresses.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla/db/sqlite.hh"
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

constexpr std::int64_t kDelayMs = 50;

std::string v6_of(const Testbed& tb, const std::string& host) {
  for (std::size_t i = 0; i < tb.hosts().size(); ++i) {
    if (tb.hosts()[i]->name == host) return "fd00:213::" + std::to_string(i + 1);
  }
  ADD_FAILURE() << "no host " << host;
  return "";
}

std::string bracketed(const std::string& v6, int port) {
  return "[" + v6 + "]:" + std::to_string(port);
}

// Lines of the injector's own chains in a namespace's ip6tables and
// iptables, "-A NABLA-..." only (an injection's rules).
int injection_rules(const nabla::common::NetNamespace& ns, const char* save) {
  int n = 0;
  std::istringstream lines(ns.run({save}).stdout_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("-A NABLA-", 0) == 0) ++n;
  }
  return n;
}

// Milliseconds each of `count` GET /a requests on one connection took.
std::vector<double> request_ms(const FileDescriptor& conn, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i) {
    const auto t = Clock::now();
    if (!nabla::testing::http_get_ok(conn, "/a")) {
      ADD_FAILURE() << "request " << i << " failed";
      break;
    }
    out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::int64_t count(nabla::db::Database& db, const std::string& sql) {
  nabla::db::Statement st(db, sql);
  EXPECT_TRUE(st.step()) << sql;
  return st.column_int64(0);
}

class Ipv6EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    NABLA_REQUIRE_ROOT_OR_SKIP();
    nabla::common::sweep_stale_namespaces();
    TestbedSpec spec;
    for (const char* name : {"client", "web", "app"}) spec.hosts.push_back({name, {}});
    tb_ = std::make_unique<Testbed>(spec);
    for (const auto& h : tb_->hosts()) {
      h->ns.run_checked(
          {"ip", "-6", "addr", "add", v6_of(*tb_, h->name) + "/64", "dev", "eth0", "nodad"});
    }
    web_ = v6_of(*tb_, "web");
    app_ = v6_of(*tb_, "app");
    client_ = v6_of(*tb_, "client");
    const std::string tier = NABLA_TIER_PATH;
    web_tier_ = &tb_->start("web", {tier, "--listen", bracketed(web_, 9001), "--workers", "8",
                                    "--tier", "app=" + bracketed(app_, 9002), "--url",
                                    "/a service=fixed:200us mode=sleep call=app:serial:2"});
    app_tier_ = &tb_->start("app", {tier, "--listen", bracketed(app_, 9002), "--workers", "4",
                                    "--url", "* service=fixed:200us mode=sleep"});
    nabla::testing::connect_in(tb_->host("web").ns, app_, 9002);
    nabla::testing::connect_in(client().ns, web_, 9001);
    for (const auto& h : tb_->hosts()) {
      const std::string v6 = v6_of(*tb_, h->name);
      tb_->start(h->name, {NABLA_SNIFFD_PATH, "--listen", bracketed(v6, 7312), "--key-file",
                           key_.path(), "--interval", "100ms"});
      tb_->start(h->name,
                 {NABLA_INJECTD_PATH, "--listen", bracketed(v6, 7311), "--key-file", key_.path()});
    }
    for (const auto& h : tb_->hosts()) {
      nabla::testing::connect_in(client().ns, v6_of(*tb_, h->name), 7312);
      nabla::testing::connect_in(client().ns, v6_of(*tb_, h->name), 7311);
    }
  }

  const nabla::testbed::TestbedHost& client() const { return tb_->host("client"); }

  // Runs `nabla ARGS` in the client namespace; its exit code (-1: killed
  // after `limit`) and output.
  std::pair<int, std::string> run_nabla(const std::vector<std::string>& args,
                                        std::chrono::seconds limit) {
    const std::string out = tmp_ + ".out";
    std::vector<std::string> argv{NABLA_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    int code = -1;
    {
      ChildProcess p(argv, &client().ns, out);
      code = p.wait(limit);
      if (code == -1) p.signal(SIGKILL);
    }
    std::string text = nabla::common::read_text_file(out);
    ::unlink(out.c_str());
    return {code, text};
  }

  std::string campaign_toml() const {
    std::ostringstream toml;
    toml << "name = \"ipv6\"\nseed = 3\nkey_file = \"" << key_.path() << "\"\n";
    for (const auto& h : tb_->hosts()) {
      const std::string v6 = v6_of(*tb_, h->name);
      toml << "[[node]]\nname = \"" << h->name << "\"\naddress = \"" << v6 << "\"\ninjectd = \""
           << bracketed(v6, 7311) << "\"\nsniffd = \"" << bracketed(v6, 7312) << "\"\n";
    }
    // One link, web -> app:9002: the client's links and the response
    // direction are excluded; short phases keep the run to seconds.
    toml << "[workload]\ntarget = \"http://" << bracketed(web_, 9001) << "\"\nrate = 400\n"
         << "connections = 8\nmix = { \"/a\" = 1 }\nwarmup = \"300ms\"\n"
         << "[links]\ndiscover_for = \"1s\"\nexclude = [\"tcp [" << client_ << "] -> "
         << bracketed(web_, 9001) << "\", \"tcp " << bracketed(web_, 9001) << " -> [" << client_
         << "]\", \"tcp " << bracketed(app_, 9002) << " -> [" << web_ << "]\"]\n"
         << "[gradient]\nschedule = \"sequential\"\nbins = 32\nchunks = 2\nmax_amplitude = \"4ms\"\n"
         << "lease = \"3s\"\n"
         << "repeats = 0\n";
    return toml.str();
  }

  nabla::testing::KeyFile key_{"ipv6"};
  std::string tmp_ = ::testing::TempDir() + "ipv6-" + std::to_string(::getpid());
  std::unique_ptr<Testbed> tb_;
  std::string web_, app_, client_;
  ChildProcess* web_tier_ = nullptr;
  ChildProcess* app_tier_ = nullptr;
};

TEST_F(Ipv6EndToEnd, DiscoverInjectAndACampaignOverIpv6) {
  const auto t0 = Clock::now();
  FileDescriptor conn = nabla::testing::connect_in(client().ns, web_, 9001);
  ASSERT_TRUE(conn.valid());
  ASSERT_EQ(request_ms(conn, 100).size(), 100u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a scan after the load

  // ---- discover
  std::vector<std::string> args = {"--key-file", key_.path(), "--for", "500ms", "--json"};
  for (const auto& h : tb_->hosts()) {
    args.insert(args.end(), {"--node", h->name + "=" + bracketed(v6_of(*tb_, h->name), 7312)});
  }
  const auto found = nabla::testing::run_discover(NABLA_PATH, client().ns, args, "ipv6-discover");
  ASSERT_TRUE(found.has_value());
  const json* web_app = nullptr;
  for (const json& l : (*found)["links"]) {
    if (l["src"]["host"] == "web" && l["dst"]["host"] == "app") web_app = &l;
  }
  ASSERT_NE(web_app, nullptr) << (*found)["links"].dump(2);
  EXPECT_EQ((*web_app)["dst"]["port"], 9002);
  EXPECT_EQ((*web_app)["src"]["pid"], web_tier_->pid());
  EXPECT_EQ((*web_app)["dst"]["pid"], app_tier_->pid());
  EXPECT_EQ((*web_app)["src"]["comm"], "nabla-tier");
  EXPECT_EQ((*web_app)["dst"]["comm"], "nabla-tier");
  EXPECT_GE((*web_app)["segments"].get<std::uint64_t>(), 200u);  // 100 requests x serial:2

  // ---- inject: a constant delay on web -> app through web's nabla-injectd
  const auto& web_ns = tb_->host("web").ns;
  const std::string link = "tcp [" + web_ + "] -> " + bracketed(app_, 9002);
  std::vector<double> delayed;
  {
    ChildProcess inject(
        {NABLA_PATH, "inject", "--node", bracketed(web_, 7311), "--key-file", key_.path(), "--link",
         link, "--delay", std::to_string(kDelayMs) + "ms", "--for", "4s"},
        &client().ns, tmp_ + ".inject");
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    while (injection_rules(web_ns, "ip6tables-save") == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_GT(injection_rules(web_ns, "ip6tables-save"), 0)
        << nabla::common::read_text_file(tmp_ + ".inject");
    EXPECT_EQ(injection_rules(web_ns, "iptables-save"), 0);  // an IPv6 link: ip6tables only
    delayed = request_ms(conn, 10);
    EXPECT_EQ(inject.wait(std::chrono::seconds(10)), 0)
        << nabla::common::read_text_file(tmp_ + ".inject");
  }
  ::unlink((tmp_ + ".inject").c_str());
  EXPECT_EQ(injection_rules(web_ns, "ip6tables-save"), 0);
  const std::vector<double> undelayed = request_ms(conn, 10);
  // Each /a request makes two calls to app, each delayed on its way out; the
  // injector never releases a packet early, so every request takes at least
  // one delay, and once the injection is gone the median is far below it.
  ASSERT_EQ(delayed.size(), 10u);
  EXPECT_GE(*std::min_element(delayed.begin(), delayed.end()), static_cast<double>(kDelayMs));
  EXPECT_LT(median(undelayed), static_cast<double>(kDelayMs)) << "undelayed requests";
  conn = FileDescriptor();

  // ---- a one-link campaign over IPv6
  const std::string campaign = tmp_ + ".toml";
  const std::string db_path = tmp_ + ".db";
  std::ofstream(campaign) << campaign_toml();
  const auto [code, text] =
      run_nabla({"run", campaign, "--db", db_path, "--json"}, std::chrono::seconds(45));
  ASSERT_EQ(code, 0) << text;
  const std::size_t json_at = text.find("{\n  \"run_id\"");
  ASSERT_NE(json_at, std::string::npos) << text;
  const json out = json::parse(text.substr(json_at));
  EXPECT_EQ(out["status"], "complete");
  ASSERT_EQ(out["gradients"].size(), 1u) << out.dump(2);
  EXPECT_EQ(out["gradients"][0]["link"], "tcp web -> app:9002");
  EXPECT_EQ(out["gradients"][0]["type"], "/a");
  EXPECT_GT(out["gradients"][0]["actual_amplitude_ns"].get<double>(), 0.0);
  {
    nabla::db::Database db = nabla::db::Database::open(db_path, nabla::db::OpenMode::kReadOnly);
    const std::string run = std::to_string(out["run_id"].get<std::int64_t>());
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM gradients WHERE run_id = " + run), 1);
    // The link's sending side as web's sniffer saw it: IPv6 at both ends.
    EXPECT_GT(
        count(db,
              "SELECT COUNT(*) FROM flows f JOIN links l ON l.id = f.link_id WHERE "
              "f.run_id = " +
                  run + " AND l.src_host = 'web' AND l.dst_host = 'app' AND f.local_addr = '" +
                  web_ + "' AND f.remote_addr = '" + app_ + "' AND f.remote_port = 9002"),
        0);
  }
  for (const std::string& f : {campaign, db_path, db_path + "-wal", db_path + "-shm"}) {
    ::unlink(f.c_str());
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(60));
}

}  // namespace
