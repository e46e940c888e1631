#include "nabla/common/sched_slice.hh"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace nabla::common {
namespace {

// struct sched_attr of <linux/sched/types.h>, first version (48 bytes):
// glibc 2.36 declares no wrapper for these two system calls.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

}  // namespace

SliceRequest request_short_slice(int64_t slice_ns) {
  SliceRequest out;
  SchedAttr attr{};
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_OTHER;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  attr.sched_nice = errno == 0 ? nice : 0;
  attr.sched_runtime = static_cast<uint64_t>(slice_ns > 0 ? slice_ns : 0);
  if (::syscall(SYS_sched_setattr, 0, &attr, 0U) != 0) {
    out.note = std::strerror(errno);
    return out;
  }
  SchedAttr now{};
  if (::syscall(SYS_sched_getattr, 0, &now, static_cast<unsigned>(sizeof now), 0U) != 0) {
    out.note = std::strerror(errno);
    return out;
  }
  out.slice_ns = static_cast<int64_t>(now.sched_runtime);
  // The kernel keeps the request clamped to its range; an older kernel
  // reports 0 or its base slice instead.
  const int64_t expected = std::clamp<int64_t>(slice_ns, 100'000, 100'000'000);
  out.granted = out.slice_ns == expected;
  if (!out.granted) out.note = "not supported by this kernel (EEVDF custom slices need 6.12)";
  return out;
}

}  // namespace nabla::common
