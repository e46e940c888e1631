// The `nabla` binary's exit codes for usage errors: every bad invocation
// (unknown command or flag, missing or malformed value, a value a command
// refuses) exits 2 with one line "nabla <command>: <what>" naming the flag or
// command, optionally followed by one hint line. None of these needs root or
// the network: they all fail before the command does anything.
// Also `nabla key new`: exit 0 with a 0600 key, exit 1 with one line when
// the file exists (never overwritten), exit 2 without the path.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/text_file.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::CommandResult;

CommandResult nabla(std::vector<std::string> args) {
  args.insert(args.begin(), NABLA_BINARY);
  return nabla::common::run_command(args);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s = "nabla";
  for (const auto& a : args) s += " " + a;
  return s;
}

struct UsageCase {
  std::vector<std::string> args;
  std::string command;  // the line's prefix before ": ", e.g. "nabla runs list"
  std::string names;    // the flag, argument or command the line must name
};

class CliExit : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-cli-exit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    db_ = (dir_ / "runs.db").string();
    std::ofstream(db_).flush();  // an empty file is an empty SQLite database
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string db_;
};

TEST_F(CliExit, UsageErrorsExitTwoWithOneLineNamingTheFlag) {
  const std::string target = "http://127.0.0.1:1/";
  const std::vector<UsageCase> cases = {
      {{"frobnicate"}, "nabla", "'frobnicate'"},
      {{"--bogus"}, "nabla", "--bogus"},
      {{"run"}, "nabla run", "campaign"},
      {{"run", "a.toml", "b.toml"}, "nabla run", "b.toml"},
      {{"demo", "--bogus"}, "nabla demo", "--bogus"},
      {{"demo", "--seed", "many"}, "nabla demo", "--seed"},
      {{"predict"}, "nabla predict", "--run"},
      {{"predict", "--run", "abc"}, "nabla predict", "--run"},
      {{"predict", "--run"}, "nabla predict", "--run"},
      {{"load", "--rate", "-5", "--target", target}, "nabla load", "--rate"},
      {{"load", "--spin", "bogus", "--target", target, "--rate", "10"}, "nabla load", "--spin"},
      {{"load", "--target", target, "--rate", "10", "--bogus"}, "nabla load", "--bogus"},
      {{"inject"}, "nabla inject", "--node"},
      {{"inject", "--node", "127.0.0.1", "--link", "udp 10.0.0.1 -> 10.0.0.2:9", "--lease", "x"},
       "nabla inject",
       "--lease"},
      {{"discover"}, "nabla discover", "--node"},
      {{"discover", "--node", "a=127.0.0.1", "--json", "--dot"}, "nabla discover", "--json"},
      {{"analyze"}, "nabla analyze", "tests"},
      {{"analyze", "tests", "/nonexistent/x.csv"}, "nabla analyze tests", "FILE"},
      {{"analyze", "tests"}, "nabla analyze tests", "FILE"},
      {{"testbed"}, "nabla testbed", "up"},
      {{"testbed", "sideways"}, "nabla testbed", "'sideways'"},
      {{"testbed", "up"}, "nabla testbed up", "spec"},
      {{"runs"}, "nabla runs", "list"},
      {{"runs", "frob"}, "nabla runs", "'frob'"},
      {{"runs", "list", "--bogus"}, "nabla runs list", "--bogus"},
      {{"runs", "list", "--limit"}, "nabla runs list", "--limit"},
      {{"runs", "list", "--limit", "many", "--db", db_}, "nabla runs list", "--limit"},
      {{"runs", "show", "--db", db_}, "nabla runs show", "ID"},
      {{"runs", "show", "first", "--db", db_}, "nabla runs show", "ID"},
      {{"runs", "export"}, "nabla runs export", "ID"},
      {{"sql"}, "nabla sql", "QUERY"},
      {{"sql", "SELECT 1", "--json", "--csv"}, "nabla sql", "--csv"},
  };
  for (const UsageCase& c : cases) {
    SCOPED_TRACE(joined(c.args));
    const CommandResult r = nabla(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_TRUE(r.stdout_text.empty()) << r.stdout_text;
    const std::vector<std::string> lines = lines_of(r.stderr_text);
    ASSERT_GE(lines.size(), 1u);
    ASSERT_LE(lines.size(), 2u) << r.stderr_text;
    EXPECT_EQ(lines[0].rfind(c.command + ": ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(c.names), std::string::npos) << lines[0];
    if (lines.size() == 2) {
      EXPECT_EQ(lines[1], "run '" + c.command + " --help' for usage");
    }
  }
}

TEST_F(CliExit, MissingDatabaseIsARuntimeErrorNotAUsageError) {
  // A well-formed command whose file is not there: exit 1, one line naming it.
  const CommandResult r = nabla({"runs", "list", "--db", "/nonexistent/dir/x.db"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  const std::vector<std::string> lines = lines_of(r.stderr_text);
  ASSERT_EQ(lines.size(), 1u) << r.stderr_text;
  EXPECT_NE(lines[0].find("/nonexistent/dir/x.db"), std::string::npos) << lines[0];
}

TEST_F(CliExit, KeyNewWritesAPrivateKeyAndNeverOverwrites) {
  const std::string path = (dir_ / "nabla.key").string();

  const CommandResult made = nabla({"key", "new", path});
  EXPECT_EQ(made.exit_code, 0) << made.stderr_text;
  EXPECT_NE(made.stdout_text.find("wrote a new key to " + path), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  const std::string before = nabla::common::read_text_file(path);
  EXPECT_EQ(nabla::common::load_key_file(path).bytes().size(), nabla::common::kMinKeyBytes);

  const CommandResult again = nabla({"key", "new", path});
  EXPECT_EQ(again.exit_code, 1);
  std::string line = again.stderr_text;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  EXPECT_EQ(line.find('\n'), std::string::npos) << "more than one line: " << line;
  EXPECT_NE(again.stderr_text.find(path + " already exists"), std::string::npos)
      << again.stderr_text;
  EXPECT_EQ(nabla::common::read_text_file(path), before);

  const CommandResult missing = nabla({"key", "new"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("path"), std::string::npos) << missing.stderr_text;
  EXPECT_EQ(nabla({"key"}).exit_code, 2);
}

TEST_F(CliExit, GroupOptionsAreAcceptedBeforeAndAfterTheSubcommand) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"runs", "list", "--db", db_},
           {"runs", "--db", db_, "list"},
           {"runs", "list", "--json", "--db", db_},
       }) {
    SCOPED_TRACE(joined(args));
    const CommandResult r = nabla(args);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_TRUE(r.stderr_text.empty()) << r.stderr_text;
  }
  // The demo's hint, `nabla runs show ID --db FILE`, parses: the run is
  // missing from this empty database, a runtime error (1), not a usage error.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"runs", "show", "1", "--db", db_},
           {"runs", "--db", db_, "show", "1"},
           {"runs", "export", "1", "--db", db_},
       }) {
    SCOPED_TRACE(joined(args));
    EXPECT_EQ(nabla(args).exit_code, 1);
  }
}

// `nabla` alone is where a newcomer starts: it names the three commands to
// run first, each of them a real command, points to `nabla --help` for the
// rest, and exits 0 (it is not a usage error).
TEST_F(CliExit, NablaAloneNamesTheThreeFirstCommands) {
  const CommandResult r = nabla({});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_TRUE(r.stderr_text.empty()) << r.stderr_text;
  std::vector<std::vector<std::string>> commands;
  for (const std::string& line : lines_of(r.stdout_text)) {
    std::istringstream words(line);
    std::string word;
    std::vector<std::string> command;
    bool after_nabla = false;
    while (words >> word) {
      if (after_nabla && (word.find('.') != std::string::npos || word[0] == '-')) break;
      if (after_nabla) command.push_back(word);
      after_nabla = after_nabla || word == "nabla";
    }
    if (line.rfind("  ", 0) == 0 && !command.empty()) commands.push_back(command);
  }
  const std::vector<std::vector<std::string>> expected{{"demo"}, {"key", "new"}, {"run"}};
  EXPECT_EQ(commands, expected) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("nabla --help"), std::string::npos) << r.stdout_text;
  for (std::vector<std::string> command : commands) {
    command.push_back("--help");
    EXPECT_EQ(nabla(command).exit_code, 0) << joined(command);
  }
}

TEST_F(CliExit, HelpAndVersionExitZero) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"runs", "--help"}, {"load", "--help"}, {"testbed", "up", "--help"}}) {
    SCOPED_TRACE(joined(args));
    const CommandResult r = nabla(args);
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    EXPECT_NE(r.stdout_text.find("Usage"), std::string::npos) << r.stdout_text;
  }
  const CommandResult list_help = nabla({"runs", "list", "--help"});
  EXPECT_EQ(list_help.exit_code, 0);
  EXPECT_NE(list_help.stdout_text.find("--db"), std::string::npos) << list_help.stdout_text;
  const CommandResult version = nabla({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_FALSE(version.stdout_text.empty());
}

}  // namespace
