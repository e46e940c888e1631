#include "nabla/memlat/events.hh"

#include <sstream>

namespace nabla::memlat {
namespace {

// perf's generic hardware events (linux/perf_event.h PERF_COUNT_HW_*).
constexpr std::uint64_t kHwCpuCycles = 0;
constexpr std::uint64_t kHwRefCpuCycles = 9;

// A raw x86 core event: event select in bits 0-7, unit mask in bits 8-15.
constexpr std::uint64_t raw_event(std::uint64_t event, std::uint64_t umask) {
  return event | (umask << 8);
}

EventTable intel_table(std::string microarch, std::uint64_t outstanding_event,
                       std::uint64_t requests_event, std::string source) {
  EventTable t;
  t.microarch = std::move(microarch);
  t.source = std::move(source);
  t.cycles = {"CPU_CLK_UNHALTED.THREAD", "hardware", kHwCpuCycles};
  t.ref_cycles = {"CPU_CLK_UNHALTED.REF_TSC", "hardware", kHwRefCpuCycles};
  t.outstanding = {"OFFCORE_REQUESTS_OUTSTANDING.L3_MISS_DEMAND_DATA_RD", "cpu",
                   raw_event(outstanding_event, 0x10)};
  t.requests = {"OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD", "cpu", raw_event(requests_event, 0x10)};
  return t;
}

// APERF counts at the actual frequency, MPERF at the fixed P0 frequency
// (the msr PMU's events aperf = 1, mperf = 2).
EventTable amd_table(std::string microarch, CounterEvent latency, CounterEvent requests,
                     double scale, std::string source) {
  EventTable t;
  t.microarch = std::move(microarch);
  t.source = std::move(source);
  t.cycles = {"APERF", "msr", 1};
  t.ref_cycles = {"MPERF", "msr", 2};
  t.outstanding = std::move(latency);
  t.requests = std::move(requests);
  t.outstanding_scale = scale;
  t.per_thread = false;
  // The L3 latency events start at the L3 miss; an L3 hit takes about 50
  // core cycles on Zen 2-4 (AMD's software optimization guides).
  t.default_cache_cycles = 50;
  return t;
}

bool in(int model, int low, int high) {
  return model >= low && model <= high;
}

std::optional<EventTable> intel_entry(int family, int model) {
  if (family != 6) return std::nullopt;
  if (model == 0x55) {
    return intel_table("Intel Skylake-SP / Cascade Lake-SP", 0x60, 0xB0,
                       "Intel perfmon event list skylakex_core.json / cascadelakex_core.json "
                       "(github.com/intel/perfmon); Intel SDM Vol. 3B, chapter 19");
  }
  if (model == 0x6A || model == 0x6C || model == 0x8F || model == 0xCF) {
    return intel_table("Intel Ice Lake-SP / Sapphire Rapids / Emerald Rapids", 0x20, 0x21,
                       "Intel perfmon event lists icelakex_core.json / sapphirerapids_core.json "
                       "(github.com/intel/perfmon)");
  }
  return std::nullopt;
}

std::optional<EventTable> amd_entry(int family, int model) {
  const bool zen2 = family == 0x17 && in(model, 0x30, 0xFF);
  const bool zen3 = family == 0x19 && (in(model, 0x00, 0x0F) || in(model, 0x20, 0x5F));
  const bool zen4 =
      family == 0x19 && (in(model, 0x10, 0x1F) || in(model, 0x60, 0x7F) || in(model, 0xA0, 0xAF));
  if (zen2 || zen3) {
    return amd_table(
        zen2 ? "AMD Zen 2" : "AMD Zen 3",
        {"L3PMCx90 XiSysFillLatency (cycles / 16)", "amd_l3", raw_event(0x90, 0x00)},
        {"L3PMCx9A XiCcxSdpReq1 (all L3 miss request types)", "amd_l3", raw_event(0x9A, 0x3F)}, 16,
        "AMD Processor Programming Reference for Family 17h Model 31h (Zen 2) and "
        "Family 19h Model 01h (Zen 3), L3 cache PMC events L3PMCx90 and L3PMCx9A");
  }
  if (zen4) {
    return amd_table("AMD Zen 4",
                     {"L3PMCxAC XiSampledLatency (cycles / 10)", "amd_l3", raw_event(0xAC, 0x3F)},
                     {"L3PMCxAD XiSampledLatencyRequests", "amd_l3", raw_event(0xAD, 0x3F)}, 10,
                     "AMD Processor Programming Reference for Family 19h Model 11h (Zen 4), L3 "
                     "cache PMC events L3PMCxAC and L3PMCxAD");
  }
  return std::nullopt;
}

int number_after_colon(const std::string& line) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return 0;
  try {
    return std::stoi(line.substr(colon + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

CpuId parse_cpuinfo(const std::string& text) {
  CpuId id;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() && !id.vendor.empty()) break;  // end of the first processor
    const auto key = line.substr(0, line.find(':'));
    if (key.rfind("vendor_id", 0) == 0) {
      const auto colon = line.find(':');
      id.vendor =
          colon == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", colon + 1));
    } else if (key.rfind("cpu family", 0) == 0) {
      id.family = number_after_colon(line);
    } else if (key.rfind("model", 0) == 0 && key.rfind("model name", 0) != 0) {
      id.model = number_after_colon(line);
    }
  }
  return id;
}

std::optional<EventTable> event_table_for(const CpuId& cpu) {
  if (cpu.vendor == "GenuineIntel") return intel_entry(cpu.family, cpu.model);
  if (cpu.vendor == "AuthenticAMD") return amd_entry(cpu.family, cpu.model);
  return std::nullopt;
}

}  // namespace nabla::memlat
