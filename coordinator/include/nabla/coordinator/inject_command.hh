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

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct InjectOptions {
  common::HostPort node;
  std::optional<std::string> key_file;
  std::string link;
  std::string direction = "out";
  std::optional<std::string> delay;          // e.g. "20ms"
  std::optional<std::string> square_period;  // makes the delay a square wave
  double duty = 0.5;
  std::optional<std::string> jitter;   // e.g. "1ms", uniform
  std::optional<std::string> loss;     // e.g. "5%", Bernoulli
  std::optional<std::int64_t> for_ns;  // run until Ctrl-C when absent
  double lease_s = 10.0;
  std::optional<std::uint64_t> seed;
  bool json = false;
  std::optional<std::string> netns;  // NAME, /path or pid:N on the node
};

// The inject.start params for these options. Throws std::invalid_argument
// naming the flag for a bad duration, percentage, --dir, --lease, --duty or
// --netns.
common::protocol::InjectStartParams build_inject_params(const InjectOptions& options);

// Runs the injection; returns the process exit code.
int run_inject(const InjectOptions& options, std::ostream& out, std::ostream& err);

void register_inject_command(CLI::App& app);

}  // namespace nabla::coordinator
