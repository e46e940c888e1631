#pragma once
// `nabla inject`: one manual injection on one link for a while.
//
//   connect + authenticate → inject.start → loop { lease.renew every
//   lease/3; on a TTY, inject.stats once a second as a live line } until
//   --for elapses or SIGINT/SIGTERM → inject.stop → final statistics.
//
// Safety: the injection carries a lease (default 10 s). If this process dies
// or loses the daemon, the daemon stops the injection and removes its rules
// when the lease lapses; on any error after the start, the command first
// tries to stop the injection itself.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "nabla/common/host_port.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/coordinator/fault_flags.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct InjectOptions {
  common::HostPort node;
  std::optional<std::string> key_file;
  std::string link;
  std::string direction = "out";
  FaultFlags faults;                   // --delay, --wave, --loss, ...
  std::optional<std::int64_t> for_ns;  // run until Ctrl-C when absent
  double lease_s = 10.0;
  std::optional<std::uint64_t> seed;
  bool json = false;
  bool dry_run = false;              // print the inject.start request, send nothing
  std::optional<std::string> netns;  // NAME, /path or pid:N on the node
  std::string release = "spin";      // spin | sleep (common::protocol::Release)
};

// The inject.start params for these options (a trace file is read with
// `read_file`). Throws std::invalid_argument naming the flag for a bad
// value of any flag (--netns included).
common::protocol::InjectStartParams build_inject_params(
    const InjectOptions& options, const FileReader& read_file = read_trace_file);

// Runs the injection; returns the process exit code.
int run_inject(const InjectOptions& options, std::ostream& out, std::ostream& err);

void register_inject_command(CLI::App& app);

}  // namespace nabla::coordinator
