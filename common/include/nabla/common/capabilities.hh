#pragma once
// The Linux capabilities a daemon needs, checked once at start.
//
// The daemons run as root with their capability bounding set cut down to
// what they use (the systemd units in packaging/, docs/deploy.md). A daemon
// started without one of them would fail later and less clearly (an
// iptables error on the first injection, flows without owners), so each
// states what it needs for its options and refuses to start, naming the
// first capability it lacks and what that capability is for.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nabla::common {

// One capability a program needs: its number (linux/capability.h), its
// name as the kernel and setpriv/capsh spell it, and what it is needed for.
struct RequiredCapability {
  int number = 0;
  std::string name;
  std::string needed_for;
};

// The capabilities the daemons name. Numbers are the kernel ABI's.
RequiredCapability cap_net_admin(std::string needed_for);
RequiredCapability cap_net_raw(std::string needed_for);
RequiredCapability cap_sys_nice(std::string needed_for);
RequiredCapability cap_sys_ptrace(std::string needed_for);
RequiredCapability cap_dac_read_search(std::string needed_for);
RequiredCapability cap_sys_admin(std::string needed_for);

// The calling thread's effective set as a bit mask (bit n = capability n).
// Throws std::system_error when capget fails.
uint64_t effective_capabilities();

// Those of `required` whose bit is clear in `effective_mask`, in order.
std::vector<RequiredCapability> missing_capabilities(
    const std::vector<RequiredCapability>& required, uint64_t effective_mask);

// "CAP_X (needed for ...)": the capability and what it is for.
std::string describe_capability(const RequiredCapability& cap);

// "PROGRAM: missing capability CAP_X (needed for ...)", the line a daemon
// prints before it exits 1.
std::string missing_capability_message(const std::string& program,
                                       const RequiredCapability& missing);

// Bit n set for each capability n of `caps`.
uint64_t capability_mask(const std::vector<RequiredCapability>& caps);

// Least privilege for a daemon started outside systemd (by hand, by a test
// or by the demo): keeps the capabilities of `keep` it holds and gives up
// every other one for good, as the unit's CapabilityBoundingSet= and
// NoNewPrivileges=yes would. In order: no_new_privs (nothing it executes
// gains privileges: iptables runs with at most what is kept); every
// capability not kept leaves the bounding set (when CAP_SETPCAP allows it,
// which root has; without it no_new_privs already caps what children get);
// the ambient set is cleared; permitted and effective become `keep` (of what
// was permitted), inheritable empty. A process already in that state (a
// systemd unit put it there) is left as it is, without a single change.
// Capabilities are per thread, so call it before the process starts a
// thread; later threads inherit the result. Returns the capabilities kept.
// Throws std::system_error when a step fails.
uint64_t drop_capabilities_except(const std::vector<RequiredCapability>& keep);

// "CAP_NET_ADMIN, CAP_NET_RAW": the names of `caps` whose bit is set in
// `mask`, for the log line after a drop ("none" when there is none).
std::string describe_kept_capabilities(const std::vector<RequiredCapability>& caps, uint64_t mask);

// Checks `required` against this process's effective set. Empty when all
// are held, else the message for the first one missing.
std::optional<std::string> check_capabilities(const std::string& program,
                                              const std::vector<RequiredCapability>& required);

}  // namespace nabla::common
