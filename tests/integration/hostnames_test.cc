// Host names end to end with real glibc resolution: a two-host Testbed
// (client, web; one namespace each, removed on exit, even on failure), a
// nabla-tier and a keyed nabla-sniffd on web and client, and a test-only
// hosts file naming both hosts. Each `nabla` runs in the client's network
// namespace inside its own mount namespace (`unshare --mount`, private
// propagation) where that file is bind-mounted over /etc/hosts; the real
// /etc/hosts is never touched and the mount dies with the process.
//   - `nabla discover --node web=web01:7312 --node cli=client01` reaches the
//     sniffers by name, prints one "resolved" line per name and reports the
//     address next to the name; a name missing from the file is one error
//     line naming the flag and the name, exit 1;
//   - `nabla load --target http://web01:9001/` loads nabla-tier by name and
//     stores the resolved address next to the target in the run's config;
//   - `nabla run` on a campaign file of names stores them with their
//     addresses in the run's config (the run then fails on an injectd port
//     nothing listens on, which ends it right after the run row is written).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
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

constexpr int kTierPort = 9001;

// A path under the test's temp dir, removed (if it exists) when this dies.
class TempPath {
 public:
  explicit TempPath(const std::string& tag)
      : path_(::testing::TempDir() + "hostnames-" + tag + "-" + std::to_string(::getpid())) {}
  ~TempPath() { ::unlink(path_.c_str()); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The config JSON of the only run in the history at `db_path`.
json only_run_config(const std::string& db_path) {
  auto store = nabla::db::Store::open(db_path, 0);
  const auto runs = store.list_runs();
  EXPECT_EQ(runs.size(), 1u);
  if (runs.empty()) return json();
  return json::parse(store.get_run(runs[0].id)->config_json);
}

class Hostnames : public ::testing::Test {
 protected:
  void SetUp() override {
    NABLA_REQUIRE_ROOT_OR_SKIP();
    nabla::common::sweep_stale_namespaces();
    TestbedSpec spec;
    for (const char* name : {"client", "web"}) spec.hosts.push_back({name, {}});
    tb_ = std::make_unique<Testbed>(spec);
    web_ = tb_->host("web").address;
    client_ = tb_->host("client").address;
    std::ofstream(hosts_.path()) << "127.0.0.1 localhost\n"
                                 << web_ << " web01\n"
                                 << client_ << " client01\n";
    tb_->start("web", {NABLA_TIER_PATH, "--listen", web_ + ":" + std::to_string(kTierPort),
                       "--workers", "2", "--url", "* service=fixed:100us"});
    nabla::testing::connect_in(client_ns(), web_, kTierPort);
    key_ = std::make_unique<nabla::testing::KeyFile>("hostnames");
    nabla::testing::start_sniffers(*tb_, NABLA_SNIFFD_PATH, *key_, "100ms", client_ns());
  }

  const nabla::common::NetNamespace& client_ns() const { return tb_->host("client").ns; }

  // `nabla ARGS` in the client namespace, seeing the test's hosts file as
  // its /etc/hosts.
  CommandResult nabla_with_hosts(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"unshare",
                                  "--mount",
                                  "--propagation",
                                  "private",
                                  "sh",
                                  "-c",
                                  "mount --bind \"$0\" /etc/hosts && exec \"$@\"",
                                  hosts_.path(),
                                  NABLA_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return nabla::common::run_command(argv, &client_ns(), std::chrono::seconds(30));
  }

  TempPath hosts_{"hosts"};
  std::unique_ptr<Testbed> tb_;
  std::unique_ptr<nabla::testing::KeyFile> key_;
  std::string web_;
  std::string client_;
};

TEST_F(Hostnames, DiscoverReachesTheSniffersByName) {
  const CommandResult r =
      nabla_with_hosts({"discover", "--key-file", key_->path(), "--for", "0s", "--json", "--node",
                        "web=web01:7312", "--node", "cli=client01"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved web01 -> " + web_), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved client01 -> " + client_), std::string::npos)
      << r.stderr_text;
  const json out = json::parse(r.stdout_text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(out.is_discarded()) << r.stdout_text;
  EXPECT_EQ(out["nodes"][0],
            (json{{"name", "web"}, {"address", web_ + ":7312"}, {"host_name", "web01"}}));
  EXPECT_EQ(out["nodes"][1]["address"], client_ + ":7312");

  // A name the hosts file does not have: one line naming the flag, exit 1.
  const CommandResult missing =
      nabla_with_hosts({"discover", "--for", "0s", "--node", "db=db01:7312"});
  EXPECT_EQ(missing.exit_code, 1) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("nabla: error: --node db: cannot resolve 'db01': "),
            std::string::npos)
      << missing.stderr_text;
  // One line (run_command may or may not keep the final newline).
  const size_t nl = missing.stderr_text.find('\n');
  EXPECT_TRUE(nl == std::string::npos || nl == missing.stderr_text.size() - 1)
      << missing.stderr_text;
}

TEST_F(Hostnames, LoadReachesTheTargetByNameAndStoresItsAddress) {
  const TempPath db("load-db");
  const CommandResult r = nabla_with_hosts(
      {"load", "--target", "http://web01:" + std::to_string(kTierPort) + "/", "--rate", "200",
       "--connections", "2", "--max-duration", "1s", "--db", db.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved web01 -> " + web_), std::string::npos) << r.stderr_text;
  const json out = json::parse(r.stdout_text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(out.is_discarded()) << r.stdout_text;
  EXPECT_GT(out["rounds"][0]["completed"].get<int>(), 0) << r.stdout_text;
  const json config = only_run_config(db.path());
  EXPECT_EQ(config["target"], "http://web01:" + std::to_string(kTierPort) + "/");
  EXPECT_EQ(config["target_address"], web_);
}

TEST_F(Hostnames, ACampaignOfNamesStoresEachWithItsAddress) {
  const TempPath campaign("campaign");
  const TempPath db("campaign-db");
  std::ofstream(campaign.path())
      << "name = \"named\"\nseed = 1\nkey_file = \"" << key_->path() << "\"\n"
      << "[[node]]\nname = \"web\"\naddress = \"web01\"\nsniffd = \"web01\"\n"
      // Nothing listens on 7399: the run fails once its row is written.
      << "injectd = \"web01:7399\"\n"
      << "[[node]]\nname = \"client\"\naddress = \"client01\"\nsniffd = \"client01:7312\"\n"
      << "[workload]\ntarget = \"http://web01:" << kTierPort << "\"\nrate = 100\n";
  const CommandResult r = nabla_with_hosts({"run", campaign.path(), "--db", db.path()});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved web01 -> " + web_), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resolved client01 -> " + client_), std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(web_ + ":7399"), std::string::npos) << r.stderr_text;
  const json config = only_run_config(db.path());
  const json resolved = config["resolved"];
  ASSERT_EQ(resolved.size(), 6u) << config.dump(2);
  EXPECT_EQ(resolved[0], (json{{"key", "node[0].address"}, {"name", "web01"}, {"address", web_}}));
  EXPECT_EQ(resolved[4]["key"], "node[1].sniffd");
  EXPECT_EQ(resolved[4]["address"], client_);
  EXPECT_EQ(resolved[5], (json{{"key", "workload.target"}, {"name", "web01"}, {"address", web_}}));
  EXPECT_EQ(config["nodes"][0]["sniffd"], web_ + ":7312");
  EXPECT_EQ(config["workload"]["target"], "http://web01:" + std::to_string(kTierPort));
}

}  // namespace
