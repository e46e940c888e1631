#pragma once
// `nabla discover`: connects to the nabla-sniffd of every named node, polls
// flows.list with a cursor for --for, joins both ends of every flow into
// one-way links (discover.hh) and prints them as a table, JSON or Graphviz.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/host_port.hh"
#include "nabla/common/resolve.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct DiscoverNode {
  std::string name;  // host label
  common::HostPort address;
};

struct DiscoverOptions {
  std::vector<DiscoverNode> nodes;
  std::optional<std::string> key_file;
  std::int64_t for_ns = 5'000'000'000;
  std::int64_t poll_ns = 500'000'000;
  std::uint64_t min_messages = 1;
  bool include_control = false;
  enum class Format { kTable, kJson, kDot } format = Format::kTable;
};

// "NAME=HOST[:PORT]" (port 7312 by default); throws std::invalid_argument.
DiscoverNode parse_discover_node(const std::string& text);

// Throws std::invalid_argument naming the flag: no node, a node name given
// twice, a negative --for.
void check_discover_options(const DiscoverOptions& options);

// Resolves every node's host once (a name becomes its address, the name kept
// in HostPort::name) and writes "resolved NAME -> ADDRESS" lines to `log`.
// Throws common::ResolveError naming "--node NODE" for a name that fails.
void resolve_discover_nodes(std::vector<DiscoverNode>& nodes, const common::Resolver& resolver,
                            std::ostream& log);

// Runs discovery; returns the exit code. Errors name the failing node.
int run_discover(const DiscoverOptions& options, std::ostream& out);

void register_discover_command(CLI::App& app);

}  // namespace nabla::coordinator
