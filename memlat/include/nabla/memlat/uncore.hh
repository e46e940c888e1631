#pragma once
// The memory controllers' counters (the paper's alternative estimate,
// docs/memlat.md): the uncore iMC PMUs the kernel exposes as
// <sysfs PMUs>/uncore_imc_<n>, one per memory channel, each counted on one
// CPU of every socket its cpumask names. Their events come from the kernel
// (the PMU's events/ directory) where it names them, otherwise from a
// per-microarchitecture table that cites its source; either way they are
// encoded into perf_event_attr.config through the PMU's format/ files.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nabla/memlat/counters.hh"
#include "nabla/memlat/events.hh"

namespace nabla::memlat {

struct ImcEventCode {
  std::string name;         // the vendor's name, e.g. UNC_M_RPQ_INSERTS
  std::string sysfs_alias;  // the kernel's name in events/, "" when it has none
  std::uint64_t event = 0, umask = 0;
};

struct ImcEventTable {
  std::string microarch;
  std::string source;  // the public vendor document the codes come from
  ImcEventCode clockticks, rpq_inserts, rpq_occupancy;
};

// nullopt for a processor without an entry.
std::optional<ImcEventTable> imc_event_table_for(const CpuId& cpu);

// One channel's PMU, ready to open: the perf type, the CPUs to count on (one
// per socket) and the three configs.
struct ImcPmu {
  std::string name;  // uncore_imc_0
  int type = 0;
  std::vector<int> cpus;
  std::uint64_t clockticks = 0, rpq_inserts = 0, rpq_occupancy = 0;
};

struct ImcPmus {
  std::string microarch;
  std::vector<ImcPmu> pmus;  // sorted by name
};

// The iMC PMUs under `sysfs_pmus` (/sys/bus/event_source/devices), or why
// there are none: no uncore_imc_* PMU, no table entry for the processor, or
// a PMU whose type, cpumask, format or event files cannot be read.
std::variant<ImcPmus, Unavailable> detect_imc_pmus(
    const std::string& sysfs_pmus = "/sys/bus/event_source/devices",
    const std::string& cpuinfo_path = "/proc/cpuinfo");

// Detects the iMC PMUs and adds them to `counters` (CounterSet::add_imc):
// the iMC table's microarchitecture, or why the controllers are not counted.
std::variant<std::string, Unavailable> count_imc(
    CounterSet& counters, const std::string& sysfs_pmus = "/sys/bus/event_source/devices",
    const std::string& cpuinfo_path = "/proc/cpuinfo");

// Encodes `terms` (e.g. {"event": 0x10, "umask": 0}) into a config value by
// the PMU's format files ("config:0-7", "config:8-15,32-35"). Throws
// std::invalid_argument naming a term without a format or one that is not
// in `config`.
std::uint64_t encode_config(const std::string& format_dir,
                            const std::map<std::string, std::uint64_t>& terms);

// A kernel event description ("event=0x04,umask=0x03") as terms.
std::map<std::string, std::uint64_t> parse_event_terms(const std::string& text);

// A cpumask or CPU list ("0,28", "0-3,8") as CPU numbers.
std::vector<int> parse_cpu_list(const std::string& text);

}  // namespace nabla::memlat
