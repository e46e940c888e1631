// `nabla report` as the binary runs it: bad input gets one line and the
// documented exit code and writes no file (a missing database, an empty one,
// an unknown run, a run id that is not a positive integer); a run that
// failed half-way gets a page saying what is missing; no RUN reports the
// newest run; without Graphviz's dot the page is still written and one
// line on stderr says what to install.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/netns.hh"
#include "nabla/db/store.hh"
#include "stored_runs.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::CommandResult;

CommandResult nabla(std::vector<std::string> args) {
  args.insert(args.begin(), NABLA_BINARY);
  return nabla::common::run_command(args);
}

// run_command drops the output's final newline.
bool one_line(const std::string& text) {
  return !text.empty() && text.find('\n') == std::string::npos;
}

class ReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-report-cmd-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = (dir_ / "runs.db").string();
    page_ = (dir_ / "page.html").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string db_;
  std::string page_;
};

TEST_F(ReportCommand, BadInputGetsOneLineAndNoFile) {
  const CommandResult missing = nabla({"report", "1", "--db", db_, "-o", page_});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.stderr_text, "nabla: error: no database at '" + db_ + "' (give --db FILE)");

  nabla::db::Store::open(db_, nabla::common::realtime_ns());  // an empty database
  const CommandResult empty = nabla({"report", "--db", db_, "-o", page_});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(one_line(empty.stderr_text)) << empty.stderr_text;
  EXPECT_EQ(
      empty.stderr_text.rfind("nabla: error: the database '" + db_ + "' holds no runs yet", 0), 0u)
      << empty.stderr_text;

  const CommandResult unknown = nabla({"report", "42", "--db", db_, "-o", page_});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.stderr_text, "nabla: error: no run 42 in '" + db_ + "'");

  for (const char* bad : {"0", "-3", "abc"}) {
    SCOPED_TRACE(bad);
    const CommandResult usage = nabla({"report", bad, "--db", db_, "-o", page_});
    EXPECT_EQ(usage.exit_code, 2);
    EXPECT_EQ(usage.stderr_text.rfind("nabla report: ", 0), 0u) << usage.stderr_text;
  }
  EXPECT_FALSE(fs::exists(page_));
}

TEST_F(ReportCommand, FailedRunGetsAPageSayingWhatIsMissing) {
  const std::int64_t run = nabla::report::testing::store_failed_campaign_run(db_);
  const CommandResult r = nabla({"report", std::to_string(run), "--db", db_, "-o", page_});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.rfind("wrote " + page_ + " (run " + std::to_string(run) + ", ", 0), 0u)
      << r.stdout_text;
  std::ifstream in(page_);
  const std::string html{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(html.find("node app: inject.start refused"), std::string::npos);
  EXPECT_NE(html.find("no training phase"), std::string::npos);
}

TEST_F(ReportCommand, WithoutRunTheNewestRunIsReported) {
  nabla::report::testing::store_failed_campaign_run(db_);
  const std::int64_t newest = nabla::report::testing::store_load_sweep_run(db_);
  const CommandResult r = nabla({"report", "--db", db_, "-o", page_});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("(run " + std::to_string(newest) + ","), std::string::npos)
      << r.stdout_text;
}

TEST_F(ReportCommand, WithoutDotThePageIsWrittenAndOneLineSaysWhatToInstall) {
  const std::int64_t run = nabla::report::testing::store_fake_campaign_run(db_);
  const fs::path no_programs = dir_ / "empty-path";
  fs::create_directories(no_programs);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", no_programs.c_str(), 1);  // the child inherits it: no dot
  const CommandResult r = nabla({"report", std::to_string(run), "--db", db_, "-o", page_});
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stderr_text,
            "nabla report: no link graph: Graphviz's `dot` is not on PATH (Debian: apt-get "
            "install graphviz)");
  EXPECT_TRUE(fs::exists(page_));
}

}  // namespace
