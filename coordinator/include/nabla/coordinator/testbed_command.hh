#pragma once
// `nabla testbed up SPEC.toml [--state F] [--for D]`: builds the testbed
// (nabla/testbed/testbed.hh), prints its hosts and addresses, records them in the state
// file (default /run/nabla/testbed.json) and holds it until SIGINT/SIGTERM
// (or --for), then tears it down.
// `nabla testbed down [--state F]`: stops a running `up` (SIGTERM to the pid
// in the state file, only if that pid is still a `nabla` process), then
// deletes the namespaces the state file names and every stale nb-*
// namespace of a crashed run.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace nabla::coordinator {

inline constexpr const char* kDefaultTestbedState = "/run/nabla/testbed.json";

int run_testbed_up(const std::string& spec_path, const std::string& state_path,
                   std::optional<std::int64_t> for_ns, std::ostream& out);
int run_testbed_down(const std::string& state_path, std::ostream& out);

void register_testbed_command(CLI::App& app);

}  // namespace nabla::coordinator
