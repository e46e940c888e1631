#pragma once
// Reading the estimator's counters with perf_event_open(2), for a process
// (with its threads), a cgroup, or the whole system. Where the counters
// cannot be had, open_counters() says why in one line: no PMU exposed (a VM
// without a virtual PMU), perf_event_paranoid forbidding it, or an event the
// processor or kernel lacks.
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nabla/memlat/estimator.hh"
#include "nabla/memlat/events.hh"

namespace nabla::memlat {

struct ImcPmus;
struct Unavailable;

struct Target {
  enum class Kind { kSystem, kPid, kCgroup };
  Kind kind = Kind::kSystem;
  int pid = 0;
  std::string cgroup_path;  // a cgroup v2 directory
};

// The open counters; read_delta() gives the counts since the previous call
// (or since opening), scaled up when the kernel multiplexed them.
class CounterSet {
 public:
  struct Event;
  CounterSet(std::vector<std::unique_ptr<Event>> events);
  CounterSet(CounterSet&&) noexcept;
  CounterSet& operator=(CounterSet&&) noexcept;
  ~CounterSet();
  CounterSample read_delta(std::int64_t interval_ns);

  // Also counts the memory controllers (system-wide: they serve every
  // core), so read_delta() fills `imc`; the reason, and the set unchanged,
  // when the kernel refuses one of them.
  std::optional<Unavailable> add_imc(const ImcPmus& pmus);

 private:
  std::vector<std::unique_ptr<Event>> events_;
  // clockticks, rpq_inserts, rpq_occupancy; empty without add_imc().
  std::vector<std::unique_ptr<Event>> imc_events_;
};

// The reason counters are unavailable, one line without a trailing newline.
struct Unavailable {
  std::string reason;
};

// The processor's table entry, or why there is none (checks the PMU first:
// no PMU means no counters whatever the table says).
std::variant<EventTable, Unavailable> detect_event_table(
    const std::string& sysfs_pmus = "/sys/bus/event_source/devices",
    const std::string& cpuinfo_path = "/proc/cpuinfo");

std::variant<CounterSet, Unavailable> open_counters(const EventTable& table, const Target& target);

// f_base in GHz from cpufreq's base_frequency or the "@ 2.10GHz" of the
// model name; nullopt when neither says.
std::optional<double> detect_base_ghz();

}  // namespace nabla::memlat
