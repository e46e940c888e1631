// Host names end to end with real glibc resolution: a two-host Testbed
// (client, web; one namespace each, removed on exit, even on failure) and a
// test-only hosts file naming both. Each `nabla` runs in the client's network
// namespace inside its own mount namespace (`unshare -m`, private
// propagation) where that file is bind-mounted over /etc/hosts; the real
// /etc/hosts is never touched and the mount dies with the process.
//   - `nabla discover --node web=web01:7312 --node cli=client01` reaches the
//     sniffers by name, prints one "resolved" line per name and reports the
//     address next to the name;
//   - `nabla load --target http://web01:9001/` loads nabla-tier by name and
//     stores the resolved address next to the target in the run's config;
//   - a name missing from the hosts file is one error line naming the flag
//     and the name, exit 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/db/store.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace {

using nabla::common::CommandResult;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nlohmann::json;

// A file removed when the object dies.
class TempFile {
 public:
  TempFile(const std::string& tag, const std::string& text)
      : path_(::testing::TempDir() + tag + "-" + std::to_string(::getpid())) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `nabla ARGS` in `ns`, seeing `hosts` as its /etc/hosts.
CommandResult nabla_with_hosts(const nabla::common::NetNamespace& ns, const TempFile& hosts,
                               const std::vector<std::string>& args) {
  std::vector<std::string> argv{"unshare",
                                "--mount",
                                "--propagation",
                                "private",
                                "sh",
                                "-c",
                                "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
                                hosts.path(),
                                NABLA_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return nabla::common::run_command(argv, &ns, std::chrono::seconds(30));
}

// The JSON document at the end of `text` (stdout), or a discarded value.
json parse_json(const std::string& text) {
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

TEST(Hostnames, DiscoverAndLoadResolveTestNamesOnceAndReportThem) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  for (const char* name : {"client", "web"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& client = tb.host("client");
  const std::string web = tb.host("web").address;
  const TempFile hosts("hostnames-hosts",
                       "127.0.0.1 localhost\n" + web + " web01\n" + client.address + " client01\n");

  tb.start("web", {NABLA_TIER_PATH, "--listen", web + ":9001", "--workers", "2", "--url",
                   "* service=fixed:100us"});
  nabla::testing::connect_in(client.ns, web, 9001);
  const nabla::testing::KeyFile key("hostnames");
  nabla::testing::start_sniffers(tb, NABLA_SNIFFD_PATH, key, "100ms", client.ns);

  // discover: both nodes by name; the names resolve to the testbed addresses.
  auto r = nabla_with_hosts(client.ns, hosts,
                            {"discover", "--key-file", key.path(), "--for", "0s", "--json",
                             "--node", "web=web01:7312", "--node", "cli=client01"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved web01 -> " + web), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved client01 -> " + client.address), std::string::npos)
      << r.stderr_text;
  const json discovered = parse_json(r.stdout_text);
  ASSERT_FALSE(discovered.is_discarded()) << r.stdout_text;
  EXPECT_EQ(discovered["nodes"][0],
            (json{{"name", "web"}, {"address", web + ":7312"}, {"host_name", "web01"}}));
  EXPECT_EQ(discovered["nodes"][1]["address"], client.address + ":7312");

  // load: the target by name; the stored config has both.
  const TempFile db("hostnames-db", "");
  ::unlink(db.path().c_str());
  r = nabla_with_hosts(client.ns, hosts,
                       {"load", "--target", "http://web01:9001/", "--rate", "200", "--connections",
                        "2", "--max-duration", "1s", "--db", db.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved web01 -> " + web), std::string::npos) << r.stderr_text;
  const json load = parse_json(r.stdout_text);
  ASSERT_FALSE(load.is_discarded()) << r.stdout_text;
  EXPECT_GT(load["rounds"][0]["completed"].get<int>(), 0) << r.stdout_text;
  auto store = nabla::db::Store::open(db.path(), 0);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  const json config = json::parse(store.get_run(runs[0].id)->config_json);
  EXPECT_EQ(config["target"], "http://web01:9001/");
  EXPECT_EQ(config["target_address"], web);

  // A name the hosts file does not have: one line naming the flag, exit 1.
  r = nabla_with_hosts(client.ns, hosts, {"discover", "--for", "0s", "--node", "db=db01:7312"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--node db: cannot resolve 'db01': "), std::string::npos)
      << r.stderr_text;
  // One line (run_command may or may not keep the final newline).
  const size_t nl = r.stderr_text.find('\n');
  EXPECT_TRUE(nl == std::string::npos || nl == r.stderr_text.size() - 1) << r.stderr_text;
}

}  // namespace
