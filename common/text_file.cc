// See text_file.hh.
#include "nabla/common/text_file.hh"

#include <fstream>
#include <sstream>

namespace nabla::common {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace nabla::common
