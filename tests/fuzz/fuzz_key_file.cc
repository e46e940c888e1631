// libFuzzer target: the key-file parser, which a root daemon runs on its key
// file at start and whenever the file changes. Any text must either give at
// least one key of at least kMinKeyBytes bytes, each read back unchanged from
// its hex, or throw std::runtime_error naming the file; nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/rpc_auth.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<nabla::common::Key> keys;
  try {
    keys = nabla::common::parse_key_text("FUZZ", text);
  } catch (const std::runtime_error& e) {
    check(std::string_view(e.what()).rfind("key file FUZZ", 0) == 0);
    return 0;
  }
  check(!keys.empty());
  std::size_t lines = 1;
  for (const char c : text) lines += c == '\n';
  check(keys.size() <= lines);
  std::string written;
  for (const nabla::common::Key& key : keys) {
    check(key.bytes().size() >= nabla::common::kMinKeyBytes);
    written += nabla::common::to_hex(key.bytes().data(), key.bytes().size()) + "\n";
  }
  const std::vector<nabla::common::Key> again = nabla::common::parse_key_text("FUZZ", written);
  check(again.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) check(again[i].bytes() == keys[i].bytes());
  return 0;
}
