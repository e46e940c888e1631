// `nabla key new`; see key_command.hh.
#include "nabla/coordinator/key_command.hh"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <iostream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <system_error>

#include "nabla/common/rpc_auth.hh"

namespace nabla::coordinator {

int run_key_new(const std::string& path, std::ostream& out) {
  try {
    common::generate_key_file(path);
  } catch (const std::system_error& e) {
    if (e.code().value() != EEXIST) throw;
    throw std::runtime_error(
        path +
        " already exists; nabla never overwrites a key file. To rotate, write the new key to "
        "another file, add its line to every daemon's key file, then put it first in the "
        "coordinator's (docs/protocol.md, \"Key files\")");
  }
  out << "wrote a new key to " << path
      << " (mode 0600); give it to the daemons and the coordinator as /etc/nabla/key or with "
         "--key-file\n";
  return 0;
}

void register_key_command(CLI::App& app) {
  auto* key =
      app.add_subcommand("key", "make the control key the daemons and nabla share (key new FILE)");
  key->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  auto* make = key->add_subcommand("new", "write a new random key to a new file (mode 0600)");
  make->add_option("path", *path, "the key file to create")->required();
  make->callback([path] {
    const int code = run_key_new(*path, std::cout);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
