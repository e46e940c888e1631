#include "nabla/common/graphviz.hh"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nabla/common/netns.hh"

namespace nabla::common {
namespace {

// The DOT text in a file of its own for `dot` to read (run_command has no
// stdin); removed when it goes out of scope.
class DotFile {
 public:
  explicit DotFile(const std::string& text) {
    std::string path = (std::filesystem::temp_directory_path() / "nabla-graph-XXXXXX.gv").string();
    const int fd = ::mkstemps(path.data(), 3);
    if (fd < 0) throw std::runtime_error("cannot create a temporary file for dot");
    ::close(fd);
    path_ = path;
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path_);
  }
  ~DotFile() { std::filesystem::remove(path_); }
  DotFile(const DotFile&) = delete;
  DotFile& operator=(const DotFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string dot_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string dot_to_svg(const std::string& dot_text) {
  if (find_program("dot").empty()) {
    throw GraphvizMissing("Graphviz's `dot` is not on PATH (Debian: apt-get install graphviz)");
  }
  const DotFile file(dot_text);
  const CommandResult r =
      run_command({"dot", "-Tsvg", file.path()}, nullptr, std::chrono::seconds(30));
  if (r.exit_code != 0) {
    throw std::runtime_error("dot -Tsvg failed (exit " + std::to_string(r.exit_code) +
                             "): " + r.stderr_text);
  }
  const auto svg = r.stdout_text.find("<svg");
  if (svg == std::string::npos) throw std::runtime_error("dot -Tsvg wrote no <svg> element");
  return r.stdout_text.substr(svg);
}

}  // namespace nabla::common
