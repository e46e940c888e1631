// docs/cli.md held to the programs' --help: in each command's section every
// flag its --help lists is documented, and every flag the section's tables
// document (the first cell of a row) is one that a command of the section
// has (a row that says "hidden" documents a flag --help does not list).
// Covers every nabla command, the daemons (the load agent nabla-loadd too)
// and nabla-tier. `nabla --help` lists the commands in the order of the
// document's command table.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "nabla/common/netns.hh"

namespace {

struct Section {
  std::string heading;                          // "## nabla runs and nabla sql"
  std::vector<std::vector<std::string>> argvs;  // the commands it documents
};

std::string read_docs() {
  std::ifstream in(NABLA_CLI_DOC);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The text from `heading` (a "## " line) to the next "## " line.
std::string section_text(const std::string& docs, const std::string& heading) {
  const auto start = docs.find("\n" + heading + "\n");
  if (start == std::string::npos) return {};
  const auto end = docs.find("\n## ", start + 1);
  return docs.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::set<std::string> flags_in(const std::string& text) {
  static const std::regex flag("--[a-z][a-z0-9-]*");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), flag); it != std::sregex_iterator();
       ++it) {
    out.insert(it->str());
  }
  out.erase("--help");
  out.erase("--help-all");
  return out;
}

// The flags a command's --help lists.
std::set<std::string> help_flags(std::vector<std::string> argv) {
  argv.push_back("--help");
  const nabla::common::CommandResult r = nabla::common::run_command(argv);
  EXPECT_EQ(r.exit_code, 0) << argv.front() << " " << r.stderr_text;
  return flags_in(r.stdout_text);
}

// The flags in the first cell of the section's table rows ("| `--db F` |"),
// except rows that document a hidden flag ("| `--kind …` | hidden: …").
std::set<std::string> table_flags(const std::string& text) {
  std::set<std::string> out;
  std::size_t at = 0;
  while ((at = text.find("\n| ", at)) != std::string::npos) {
    const auto end = text.find(" |", at + 3);
    if (end == std::string::npos) break;
    const bool hidden =
        text.compare(end + 2, 8, " hidden:") == 0 || text.compare(end + 2, 8, " hidden,") == 0;
    if (!hidden) {
      for (const std::string& f : flags_in(text.substr(at + 3, end - at - 3))) out.insert(f);
    }
    at = end;
  }
  return out;
}

std::vector<Section> sections() {
  const std::string n = NABLA_BINARY;
  return {
      {"## nabla demo", {{n, "demo"}}},
      {"## nabla run", {{n, "run"}}},
      {"## nabla nodes check", {{n, "nodes", "check"}}},
      {"## nabla predict", {{n, "predict"}}},
      {"## nabla accel", {{n, "accel"}}},
      {"## nabla memlat", {{n, "memlat"}}},
      {"## nabla load", {{n, "load"}}},
      {"## nabla analyze",
       {{n, "analyze", "tests"},
        {n, "analyze", "percentiles"},
        {n, "analyze", "gradient"},
        {n, "analyze", "spectrum"}}},
      {"## nabla inject", {{n, "inject"}}},
      {"## nabla discover", {{n, "discover"}}},
      {"## nabla testbed", {{n, "testbed", "up"}, {n, "testbed", "down"}}},
      {"## nabla key new", {{n, "key", "new"}}},
      {"## nabla runs and nabla sql",
       {{n, "runs", "list"}, {n, "runs", "show"}, {n, "runs", "export"}, {n, "sql"}}},
      {"## nabla report", {{n, "report"}}},
      {"## nabla-injectd", {{NABLA_INJECTD}}},
      {"## nabla-sniffd", {{NABLA_SNIFFD}}},
      {"## nabla-loadd", {{NABLA_LOADD}}},
      {"## nabla-tier", {{NABLA_TIER}}},
  };
}

TEST(CliDocs, EveryFlagIsDocumentedAndEveryDocumentedFlagExists) {
  const std::string docs = read_docs();
  ASSERT_FALSE(docs.empty()) << NABLA_CLI_DOC;
  for (const Section& s : sections()) {
    SCOPED_TRACE(s.heading);
    const std::string text = section_text(docs, s.heading);
    ASSERT_FALSE(text.empty()) << "docs/cli.md has no section " << s.heading;
    const std::set<std::string> documented = flags_in(text);
    std::set<std::string> existing;
    for (const auto& argv : s.argvs) {
      for (const std::string& f : help_flags(argv)) {
        existing.insert(f);
        EXPECT_TRUE(documented.count(f)) << argv.back() << ": " << f << " is not in docs/cli.md";
      }
    }
    for (const std::string& f : table_flags(text)) {
      EXPECT_TRUE(existing.count(f)) << f << " is documented but no command of the section has it";
    }
  }
}

// The commands of docs/cli.md's command table ("| [`nabla runs`, `nabla
// sql`](…) | …"), in its order: "runs", "sql", …; the daemons' rows name
// no nabla command.
std::vector<std::string> table_commands(const std::string& docs) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = docs.find("\n| [`nabla ", at)) != std::string::npos) {
    const auto end = docs.find(" |", at + 3);
    const std::string cell = docs.substr(at + 3, end - at - 3);
    static const std::regex command("`nabla ([a-z]+)");
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), command);
         it != std::sregex_iterator(); ++it) {
      out.push_back((*it)[1].str());
    }
    at = end;
  }
  return out;
}

// `nabla --help`'s command list: name and summary per line.
std::vector<std::pair<std::string, std::string>> help_commands() {
  const nabla::common::CommandResult r = nabla::common::run_command({NABLA_BINARY, "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(r.stdout_text);
  std::string line;
  bool in_list = false;
  while (std::getline(lines, line)) {
    if (line == "Subcommands:" || line == "SUBCOMMANDS:") {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty()) break;
    std::istringstream words(line);
    std::string name;
    words >> name;
    std::string summary;
    std::getline(words >> std::ws, summary);
    out.emplace_back(name, summary);
  }
  return out;
}

// `nabla --help` lists the commands in the order of the work, the order of
// docs/cli.md's table, each with a summary of one grammar: a lower-case
// verb phrase without a full stop.
TEST(CliDocs, HelpListsTheCommandsInTheTablesOrderWithOneStyleOfSummary) {
  const std::vector<std::pair<std::string, std::string>> commands = help_commands();
  std::vector<std::string> names;
  for (const auto& [name, summary] : commands) {
    names.push_back(name);
    SCOPED_TRACE(name);
    ASSERT_FALSE(summary.empty());
    EXPECT_TRUE(std::islower(static_cast<unsigned char>(summary.front()))) << summary;
    EXPECT_NE(summary.back(), '.') << summary;
    // A verb first, not a noun phrase or a question.
    const std::string first = summary.substr(0, summary.find(' '));
    for (const char* not_a_verb : {"the", "a", "an", "one", "what", "can", "memory", "offline"}) {
      EXPECT_NE(first, not_a_verb) << summary;
    }
  }
  EXPECT_EQ(names, table_commands(read_docs()));
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "demo");
}

}  // namespace
