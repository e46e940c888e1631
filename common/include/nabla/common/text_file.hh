#pragma once
// Reading a small text file whole (logs, a child's --json output, /proc
// entries).
#include <string>

namespace nabla::common {

// The file's contents; "" when it cannot be read (callers print it as
// context or parse it, where an empty text is its own clear error).
std::string read_text_file(const std::string& path);

}  // namespace nabla::common
