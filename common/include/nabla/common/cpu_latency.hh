#pragma once
// CpuLatencyRequest: a PM QoS CPU latency limit held while the object lives.
//
// Writing a 32-bit limit in µs to /dev/cpu_dma_latency and keeping the file
// open asks the kernel's cpuidle governor to pick only idle states whose
// exit latency is within the limit; 0 leaves only polling idle, so an idle
// CPU notices new work at once instead of halting. The request lasts exactly
// as long as the descriptor: close (destructor, exit, kill -9) drops it, so
// a crashed holder cannot leave the machine pinned out of idle.
// (Documentation/power/pm_qos_interface.rst; tuned's latency-performance
// profile and cyclictest use the same file.)
//
// Why nabla holds it: on a 2-vCPU VM (cpuidle "haltpoll", guest halt
// polling off) a halted vCPU takes ~100 µs to ~1 ms to run a woken task,
// and every cross-CPU wake-up of a halted vCPU is a VM exit. There, holding
// 0 µs while injections run cuts a timerfd wake-up's lateness from p50
// 53 µs to 21 µs and raises the injector's throughput against an unlimited
// no-rule baseline from 0.70-0.75 to 0.84-0.85 (bench/injector).
//
// The cost: power, host CPU on a VM (idle CPUs spin), and speed of the
// other hardware thread of a core whose idle thread polls. On the same VM
// the no-rule UDP sender runs 300-350k pps with the limit held against
// 350-420k without. Holders take it only while they need it
// (nabla-injectd: while an injection is active; nabla load: for the run).
#include <cstdint>
#include <optional>
#include <string>

#include "nabla/common/fd.hh"

namespace nabla::common {

inline constexpr const char* kCpuLatencyDevice = "/dev/cpu_dma_latency";

class CpuLatencyRequest {
 public:
  // Opens `path` and writes limit_us (>= 0). Never throws: when the file
  // cannot be opened or written (no root, no device), held() is false and
  // error() says why, naming the path.
  explicit CpuLatencyRequest(int32_t limit_us, const std::string& path = kCpuLatencyDevice);

  bool held() const { return fd_.valid(); }
  int32_t limit_us() const { return limit_us_; }
  const std::string& error() const { return error_; }

 private:
  int32_t limit_us_;
  FileDescriptor fd_;
  std::string error_;
};

// A limit as typed on a command line: "off" (nullopt) or whole µs in
// 0..2000000000. Throws std::invalid_argument "expected 0..2000000000 or
// 'off', got 'TEXT'" (the caller prefixes its flag).
std::optional<int32_t> parse_cpu_latency_limit(const std::string& text);

// The limit the kernel currently applies (the smallest of all held
// requests; 2000 s when none), read from `path`; nullopt when unreadable.
std::optional<int32_t> current_cpu_latency_us(const std::string& path = kCpuLatencyDevice);

}  // namespace nabla::common
