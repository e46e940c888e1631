#pragma once
// Which counters give the estimator's four terms on which processor, with
// the vendor document each event comes from (docs/memlat.md lists them).
//
// Intel Xeon (Skylake-SP, Cascade Lake-SP, Ice Lake-SP, Sapphire Rapids):
// core events, counted per thread, so per process or cgroup:
//   cycles       CPU_CLK_UNHALTED.THREAD      (generic perf "cycles")
//   ref_cycles   CPU_CLK_UNHALTED.REF_TSC     (generic perf "ref-cycles")
//   outstanding  OFFCORE_REQUESTS_OUTSTANDING.L3_MISS_DEMAND_DATA_RD
//   requests     OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD
// AMD Zen 2/3/4: the L3 PMU's miss-latency events, counted per core complex
// (CCX), not per thread; frequency from the APERF/MPERF pair.
#include <cstdint>
#include <optional>
#include <string>

namespace nabla::memlat {

// Where an event is opened: a generic perf hardware event, a raw core event,
// or a PMU under /sys/bus/event_source/devices/<pmu>.
struct CounterEvent {
  std::string name;  // the vendor's name
  std::string pmu;   // "hardware", "cpu", "amd_l3", "msr"
  std::uint64_t config = 0;
};

struct EventTable {
  std::string microarch;
  std::string source;  // the public vendor document the codes come from
  CounterEvent cycles, ref_cycles, outstanding, requests;
  double outstanding_scale = 1;  // core cycles per unit of `outstanding`
  bool per_thread = true;        // false: the latency events count a whole CCX
  double default_cache_cycles = 44;
};

struct CpuId {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"
  int family = 0;
  int model = 0;
};

// From the text of /proc/cpuinfo (the first processor's block).
CpuId parse_cpuinfo(const std::string& text);

// nullopt for a processor without a table entry.
std::optional<EventTable> event_table_for(const CpuId& cpu);

}  // namespace nabla::memlat
