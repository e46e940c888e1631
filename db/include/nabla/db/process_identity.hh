#pragma once
// Who owns a 'running' run row, in a form that survives pid reuse and
// reboots: (boot id, pid, process start time in clock ticks since boot).
// A pid alone is not enough: after a reboot or a wrap-around the same pid can
// belong to an unrelated process, and the run would look alive forever.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace nabla::db {

struct ProcessIdentity {
  pid_t pid = 0;
  std::int64_t start_ticks = 0;  // /proc/<pid>/stat field 22 (starttime)
  std::string boot_id;           // /proc/sys/kernel/random/boot_id

  bool operator==(const ProcessIdentity&) const = default;
};

// This process. Throws std::system_error naming the /proc file on failure.
ProcessIdentity current_process();

// The identity of `pid` now, or nullopt when no such process exists.
std::optional<ProcessIdentity> lookup_process(pid_t pid);

// True when the process described by `who` is still running: same boot, pid
// present and started at the same tick (so not a reused pid). A zombie counts
// as gone: it no longer writes anything.
bool is_alive(const ProcessIdentity& who);

}  // namespace nabla::db
