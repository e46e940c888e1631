#include "nabla/memlat/counters.hh"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "nabla/memlat/uncore.hh"
#include "text_file.hh"

namespace nabla::memlat {
namespace {

// The perf type number of a PMU, or -1 when the kernel does not expose it.
int pmu_type(const std::string& sysfs_pmus, const std::string& pmu) {
  if (pmu == "hardware") return PERF_TYPE_HARDWARE;
  if (pmu == "cpu") return PERF_TYPE_RAW;
  std::ifstream in(sysfs_pmus + "/" + pmu + "/type");
  int type = -1;
  if (!(in >> type)) return -1;
  return type;
}

std::vector<int> online_cpus() {
  std::vector<int> cpus;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n; ++i) cpus.push_back(static_cast<int>(i));
  return cpus;
}

std::string paranoid_reason(const CounterEvent& e, int error) {
  std::string level = read_text_file("/proc/sys/kernel/perf_event_paranoid");
  while (!level.empty() && (level.back() == '\n' || level.back() == ' ')) level.pop_back();
  return "perf_event_paranoid is " + (level.empty() ? std::string("unknown") : level) +
         ": opening " + e.name + " was refused (" + std::strerror(error) +
         "); run as root, with CAP_PERFMON, or with perf_event_paranoid <= 0";
}

}  // namespace

struct CounterSet::Event {
  std::vector<int> fds;
  double last = 0;
  ~Event() {
    for (int fd : fds) ::close(fd);
  }
  // The sum over the event's fds, each scaled by enabled/running time.
  double total() const {
    double sum = 0;
    for (int fd : fds) {
      std::uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
      if (::read(fd, v, sizeof v) != static_cast<ssize_t>(sizeof v)) continue;
      sum += v[2] > 0
                 ? static_cast<double>(v[0]) * static_cast<double>(v[1]) / static_cast<double>(v[2])
                 : 0.0;
    }
    return sum;
  }
};

CounterSet::CounterSet(std::vector<std::unique_ptr<Event>> events) : events_(std::move(events)) {}
CounterSet::CounterSet(CounterSet&&) noexcept = default;
CounterSet& CounterSet::operator=(CounterSet&&) noexcept = default;
CounterSet::~CounterSet() = default;

CounterSample CounterSet::read_delta(std::int64_t interval_ns) {
  double delta[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < events_.size() && i < 4; ++i) {
    const double now = events_[i]->total();
    delta[i] = now - events_[i]->last;
    events_[i]->last = now;
  }
  CounterSample sample{interval_ns, delta[0], delta[1], delta[2], delta[3]};
  if (imc_events_.size() == 3) {
    double imc[3] = {0, 0, 0};
    for (std::size_t i = 0; i < 3; ++i) {
      const double now = imc_events_[i]->total();
      imc[i] = now - imc_events_[i]->last;
      imc_events_[i]->last = now;
    }
    // Every channel counts its own clock: the mean is the controllers' clock.
    const auto channels = static_cast<double>(imc_events_[0]->fds.size());
    sample.imc = ImcCounts{imc[2], imc[1], channels > 0 ? imc[0] / channels : 0.0};
  }
  return sample;
}

std::variant<EventTable, Unavailable> detect_event_table(const std::string& sysfs_pmus,
                                                         const std::string& cpuinfo_path) {
  if (!std::filesystem::exists(sysfs_pmus + "/cpu")) {
    return Unavailable{"no PMU exposed: " + sysfs_pmus +
                       "/cpu is missing (a virtual machine without a virtual PMU?)"};
  }
  const CpuId cpu = parse_cpuinfo(read_text_file(cpuinfo_path));
  std::optional<EventTable> table = event_table_for(cpu);
  if (!table) {
    return Unavailable{"missing event: no counter table for " + cpu.vendor + " family " +
                       hex_text(static_cast<std::uint64_t>(cpu.family)) + " model " +
                       hex_text(static_cast<std::uint64_t>(cpu.model)) +
                       " (docs/memlat.md lists the supported processors)"};
  }
  for (const CounterEvent* e :
       {&table->cycles, &table->ref_cycles, &table->outstanding, &table->requests}) {
    if (pmu_type(sysfs_pmus, e->pmu) < 0) {
      return Unavailable{"missing event: " + e->name + " needs the " + e->pmu +
                         " PMU, which this kernel does not expose"};
    }
  }
  return *table;
}

namespace {

// One perf fd; -errno on failure.
int open_one(int type, std::uint64_t config, pid_t pid, int cpu, unsigned long flags,
             bool inherit) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = static_cast<std::uint32_t>(type);
  attr.config = config;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.inherit = inherit ? 1 : 0;
  const long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

}  // namespace

std::variant<CounterSet, Unavailable> open_counters(const EventTable& table, const Target& target) {
  const std::string sysfs = "/sys/bus/event_source/devices";
  int cgroup_fd = -1;
  if (target.kind == Target::Kind::kCgroup) {
    cgroup_fd = ::open(target.cgroup_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgroup_fd < 0) {
      return Unavailable{"cannot open cgroup '" + target.cgroup_path +
                         "': " + std::strerror(errno)};
    }
  }
  std::vector<std::unique_ptr<CounterSet::Event>> events;
  for (const CounterEvent* e :
       {&table.cycles, &table.ref_cycles, &table.outstanding, &table.requests}) {
    auto event = std::make_unique<CounterSet::Event>();
    const int type = pmu_type(sysfs, e->pmu);
    // Events that count a whole CCX (AMD L3), and system or cgroup targets,
    // are opened on every CPU; a process's per-thread events follow it.
    const bool per_process = target.kind == Target::Kind::kPid && e->pmu != "amd_l3";
    const std::vector<int> cpus = per_process ? std::vector<int>{-1} : online_cpus();
    for (int cpu : cpus) {
      pid_t pid = -1;
      unsigned long flags = 0;
      if (per_process) pid = target.pid;
      if (target.kind == Target::Kind::kCgroup && e->pmu != "amd_l3") {
        pid = cgroup_fd;
        flags = PERF_FLAG_PID_CGROUP;
      }
      const int fd = open_one(type, e->config, pid, cpu, flags, per_process);
      if (fd == -EACCES || fd == -EPERM) {
        if (cgroup_fd >= 0) ::close(cgroup_fd);
        return Unavailable{paranoid_reason(*e, -fd)};
      }
      if (fd < 0) {
        if (cgroup_fd >= 0) ::close(cgroup_fd);
        return Unavailable{"missing event: " + e->name + " (" + e->pmu + " config " +
                           hex_text(e->config) + "): " + std::strerror(-fd)};
      }
      event->fds.push_back(fd);
    }
    events.push_back(std::move(event));
  }
  if (cgroup_fd >= 0) ::close(cgroup_fd);
  CounterSet set(std::move(events));
  set.read_delta(0);  // the baseline for the first interval
  return set;
}

std::optional<Unavailable> CounterSet::add_imc(const ImcPmus& pmus) {
  std::vector<std::unique_ptr<Event>> events;
  for (std::uint64_t ImcPmu::*config :
       {&ImcPmu::clockticks, &ImcPmu::rpq_inserts, &ImcPmu::rpq_occupancy}) {
    auto event = std::make_unique<Event>();
    for (const ImcPmu& pmu : pmus.pmus) {
      for (int cpu : pmu.cpus) {
        const int fd = open_one(pmu.type, pmu.*config, -1, cpu, 0, false);
        if (fd < 0) {
          return Unavailable{"uncore iMC PMU " + pmu.name + " (config " + hex_text(pmu.*config) +
                             ", cpu " + std::to_string(cpu) + "): " + std::strerror(-fd)};
        }
        event->fds.push_back(fd);
      }
    }
    events.push_back(std::move(event));
  }
  imc_events_ = std::move(events);
  for (auto& e : imc_events_) e->last = e->total();  // the baseline for the first interval
  return std::nullopt;
}

std::optional<double> detect_base_ghz() {
  std::ifstream base("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
  double khz = 0;
  if (base >> khz && khz > 0) return khz / 1e6;
  const std::string cpuinfo = read_text_file("/proc/cpuinfo");
  const auto at = cpuinfo.find("GHz");
  if (at == std::string::npos) return std::nullopt;
  const auto start = cpuinfo.rfind('@', at);
  if (start == std::string::npos || at - start > 12) return std::nullopt;
  try {
    return std::stod(cpuinfo.substr(start + 1, at - start - 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace nabla::memlat
