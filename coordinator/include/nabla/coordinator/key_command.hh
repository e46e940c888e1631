#pragma once
// `nabla key new PATH`: writes a fresh control key (32 random bytes as hex,
// mode 0600) to a new file. An existing file is never overwritten; rotation
// adds a key line instead (docs/protocol.md, "Key files").
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace nabla::coordinator {

int run_key_new(const std::string& path, std::ostream& out);

void register_key_command(CLI::App& app);

}  // namespace nabla::coordinator
