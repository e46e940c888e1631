#pragma once
// Private to memlat/: the whole text of a small file (sysfs, procfs), and
// numbers written as the kernel and the vendors write them.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace nabla::memlat {

// Empty when the file cannot be read.
inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "0x55".
inline std::string hex_text(std::uint64_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << v;
  return out.str();
}

}  // namespace nabla::memlat
