// `nabla run` failure paths without privileges: a bad spec exits 2 and
// stores nothing; an unreachable daemon exits 1 with one error line naming
// the node, and the run is stored as 'failed' with that error (the --json
// outcome still starts with run_id).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nabla/common/netns.hh"
#include "nabla/common/text_file.hh"
#include "nabla/db/sqlite.hh"

namespace {

using nabla::common::ChildProcess;

class CampaignRun : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = ::testing::TempDir() + "campaign-run-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    db_ = base_ + ".db";
    out_ = base_ + ".out";
    spec_ = base_ + ".toml";
  }
  void TearDown() override {
    for (const std::string& f : {db_, db_ + "-wal", db_ + "-shm", out_, spec_}) {
      ::unlink(f.c_str());
    }
  }
  int run(const std::string& toml, std::vector<std::string> extra = {}) {
    std::ofstream(spec_) << toml;
    std::vector<std::string> argv = {NABLA_BINARY, "run", spec_, "--db", db_, "--quiet"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess child(argv, nullptr, out_);
    return child.wait(std::chrono::seconds(20));
  }
  std::string base_, db_, out_, spec_;
};

// Port 1 on loopback: nothing listens, the connection is refused at once.
constexpr const char* kUnreachable = R"(
name = "unreachable"
seed = 5
[[node]]
name = "web"
address = "127.0.0.1"
injectd = "127.0.0.1:1"
sniffd = "127.0.0.1:1"
[workload]
target = "http://127.0.0.1:1"
rate = 10
)";

TEST_F(CampaignRun, UnreachableDaemonFailsTheStoredRun) {
  EXPECT_EQ(run(kUnreachable, {"--json"}), 1);
  const std::string out = nabla::common::read_text_file(out_);
  EXPECT_NE(out.find("nabla: error: run 1 failed: node web: cannot reach nabla-injectd at "
                     "127.0.0.1:1"),
            std::string::npos)
      << out;
  const std::size_t at = out.find("{\n  \"run_id\": 1,");
  ASSERT_NE(at, std::string::npos) << out;
  const nlohmann::json j = nlohmann::json::parse(out.substr(at, out.rfind('}') - at + 1));
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["seed"], 5);

  nabla::db::Database db = nabla::db::Database::open(db_, nabla::db::OpenMode::kReadOnly);
  nabla::db::Statement st(db,
                          "SELECT r.status, r.error, r.seed, r.ended_ns IS NOT NULL, c.name, "
                          "(SELECT COUNT(*) FROM nodes n WHERE n.run_id = r.id) "
                          "FROM runs r JOIN campaigns c ON c.id = r.campaign_id");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.column_text(0), "failed");
  EXPECT_NE(st.column_text(1).find("node web: cannot reach nabla-injectd"), std::string::npos);
  EXPECT_EQ(st.column_int64(2), 5);
  EXPECT_EQ(st.column_int64(3), 1);
  EXPECT_EQ(st.column_text(4), "unreachable");
  EXPECT_EQ(st.column_int64(5), 1);
  EXPECT_FALSE(st.step());  // exactly one run
}

TEST_F(CampaignRun, BadSpecExitsTwoAndStoresNothing) {
  EXPECT_EQ(run(std::string(kUnreachable) + "[gradient]\nbinz = 3\n"), 2);
  EXPECT_NE(nabla::common::read_text_file(out_).find("unknown key gradient.binz"),
            std::string::npos);
  EXPECT_NE(::access(db_.c_str(), F_OK), 0);  // not even created
  EXPECT_EQ(run(kUnreachable, {"--kind", "bogus"}), 2);
}

}  // namespace
