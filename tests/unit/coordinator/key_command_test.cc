// `nabla key new PATH` through the built binary: a loadable 0600 key, never
// an overwrite (exit 1, one line), and usage errors exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
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

TEST(KeyCommand, NewWritesAPrivateKeyAndNeverOverwrites) {
  char tmpl[] = "/tmp/nabla-key-cmd-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string path = (dir / "nabla.key").string();

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
  fs::remove_all(dir);
}

}  // namespace
