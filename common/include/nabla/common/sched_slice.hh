#pragma once
// A shorter scheduler slice for a latency-sensitive thread of the fair class
// (SCHED_OTHER), as a request to the kernel, without any privilege.
//
// Since Linux 6.6 the fair class is EEVDF: a task that wakes does not
// preempt the running one before that one's slice (about 3 ms on 2 CPUs)
// is used up, whatever their nice values. A load thread woken by its send
// timer then waits behind a compiler or the server under test for up to a
// slice. Since 6.12 a task may ask for its own shorter slice
// (sched_setattr's sched_runtime for SCHED_OTHER, 0.1–100 ms), and a
// waking task with a shorter slice preempts (PREEMPT_SHORT). Its CPU share
// stays what its nice value gives; only when it runs changes.
//
// Older kernels ignore the request; sched_getattr then reports no custom
// slice, which is how the result tells "granted" from "not supported".
#include <cstdint>
#include <string>

namespace nabla::common {

struct SliceRequest {
  bool granted = false;
  int64_t slice_ns = 0;  // what the kernel reports for the thread (0: unknown)
  std::string note;      // why not granted: errno text or "not supported by this kernel"
};

// Asks for `slice_ns` (clamped by the kernel to 0.1–100 ms) for the calling
// thread, keeping its policy SCHED_OTHER and its nice value. Never throws.
SliceRequest request_short_slice(int64_t slice_ns);

}  // namespace nabla::common
