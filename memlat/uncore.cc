#include "nabla/memlat/uncore.hh"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "text_file.hh"

namespace nabla::memlat {
namespace {

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  s.erase(0, first);
  s.erase(s.find_last_not_of(" \t\n") + 1);
  return s;
}

std::uint64_t parse_number(const std::string& text, const std::string& what) {
  try {
    std::size_t used = 0;
    const std::uint64_t v = std::stoull(text, &used, 0);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(what + ": not a number: '" + text + "'");
}

// Bit ranges of one format file: "config:0-7,32-35" -> {{0, 7}, {32, 35}}.
std::vector<std::pair<int, int>> format_ranges(const std::string& format_dir,
                                               const std::string& term) {
  const std::string text = trimmed(read_text_file(format_dir + "/" + term));
  const auto colon = text.find(':');
  if (text.empty() || colon == std::string::npos) {
    throw std::invalid_argument("no format for '" + term + "' in " + format_dir);
  }
  if (text.substr(0, colon) != "config") {
    throw std::invalid_argument("format of '" + term + "' is in " + text.substr(0, colon) +
                                ", not config");
  }
  std::vector<std::pair<int, int>> ranges;
  std::istringstream in(text.substr(colon + 1));
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    const int low = static_cast<int>(parse_number(part.substr(0, dash), term));
    const int high = dash == std::string::npos
                         ? low
                         : static_cast<int>(parse_number(part.substr(dash + 1), term));
    if (low < 0 || high < low || high > 63) {
      throw std::invalid_argument("format of '" + term + "': bad bit range '" + part + "'");
    }
    ranges.emplace_back(low, high);
  }
  return ranges;
}

}  // namespace

std::optional<ImcEventTable> imc_event_table_for(const CpuId& cpu) {
  if (cpu.vendor != "GenuineIntel" || cpu.family != 6 || cpu.model != 0x55) return std::nullopt;
  // Skylake-SP and Cascade Lake-SP: the paper's platform.
  return ImcEventTable{
      "Intel Skylake-SP / Cascade Lake-SP",
      "Intel perfmon event lists skylakex_uncore.json / cascadelakex_uncore.json "
      "(github.com/intel/perfmon); Intel Xeon Processor Scalable Memory Family Uncore "
      "Performance Monitoring Reference Manual, iMC events",
      {"UNC_M_CLOCKTICKS", "clockticks", 0x00, 0x00},
      {"UNC_M_RPQ_INSERTS", "", 0x10, 0x00},
      {"UNC_M_RPQ_OCCUPANCY", "", 0x80, 0x00}};
}

std::uint64_t encode_config(const std::string& format_dir,
                            const std::map<std::string, std::uint64_t>& terms) {
  std::uint64_t config = 0;
  for (const auto& [term, value] : terms) {
    std::uint64_t rest = value;
    for (const auto& [low, high] : format_ranges(format_dir, term)) {
      const int width = high - low + 1;
      const std::uint64_t mask = width == 64 ? ~0ULL : ((1ULL << width) - 1);
      config |= (rest & mask) << low;
      rest = width == 64 ? 0 : rest >> width;
    }
    if (rest != 0) {
      throw std::invalid_argument("value of '" + term + "' does not fit its format");
    }
  }
  return config;
}

std::map<std::string, std::uint64_t> parse_event_terms(const std::string& text) {
  std::map<std::string, std::uint64_t> terms;
  std::istringstream in(trimmed(text));
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto eq = part.find('=');
    const std::string name = trimmed(part.substr(0, eq));
    if (name.empty()) continue;
    // A term without a value is a flag set to 1 (the kernel's convention).
    terms[name] = eq == std::string::npos ? 1 : parse_number(trimmed(part.substr(eq + 1)), name);
  }
  return terms;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::istringstream in(trimmed(text));
  std::string part;
  while (std::getline(in, part, ',')) {
    part = trimmed(part);
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const auto low = static_cast<int>(parse_number(part.substr(0, dash), "cpumask"));
    const auto high = dash == std::string::npos
                          ? low
                          : static_cast<int>(parse_number(part.substr(dash + 1), "cpumask"));
    for (int cpu = low; cpu <= high; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

namespace {

// The config of one event on one PMU: the kernel's own description when it
// has one, else the table's codes.
std::uint64_t event_config(const std::string& pmu_dir, const ImcEventCode& code) {
  const std::string format_dir = pmu_dir + "/format";
  if (!code.sysfs_alias.empty()) {
    const std::string described = read_text_file(pmu_dir + "/events/" + code.sysfs_alias);
    if (!trimmed(described).empty()) {
      return encode_config(format_dir, parse_event_terms(described));
    }
  }
  return encode_config(format_dir, {{"event", code.event}, {"umask", code.umask}});
}

ImcPmu read_pmu(const std::filesystem::path& dir, const ImcEventTable& table) {
  ImcPmu pmu;
  pmu.name = dir.filename().string();
  const std::string type = trimmed(read_text_file((dir / "type").string()));
  if (type.empty()) throw std::invalid_argument("no type file");
  pmu.type = static_cast<int>(parse_number(type, "type"));
  pmu.cpus = parse_cpu_list(read_text_file((dir / "cpumask").string()));
  if (pmu.cpus.empty()) throw std::invalid_argument("empty cpumask");
  pmu.clockticks = event_config(dir.string(), table.clockticks);
  pmu.rpq_inserts = event_config(dir.string(), table.rpq_inserts);
  pmu.rpq_occupancy = event_config(dir.string(), table.rpq_occupancy);
  return pmu;
}

}  // namespace

std::variant<ImcPmus, Unavailable> detect_imc_pmus(const std::string& sysfs_pmus,
                                                   const std::string& cpuinfo_path) {
  std::vector<std::filesystem::path> dirs;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(sysfs_pmus, error)) {
    if (entry.path().filename().string().rfind("uncore_imc_", 0) == 0) dirs.push_back(entry.path());
  }
  if (dirs.empty()) {
    return Unavailable{"no uncore iMC PMU (no " + sysfs_pmus + "/uncore_imc_*)"};
  }
  std::sort(dirs.begin(), dirs.end());
  const CpuId cpu = parse_cpuinfo(read_text_file(cpuinfo_path));
  const std::optional<ImcEventTable> table = imc_event_table_for(cpu);
  if (!table) {
    return Unavailable{"no uncore iMC event table for " + cpu.vendor + " family " +
                       hex_text(static_cast<std::uint64_t>(cpu.family)) + " model " +
                       hex_text(static_cast<std::uint64_t>(cpu.model)) +
                       " (docs/memlat.md lists the supported processors)"};
  }
  ImcPmus found{table->microarch, {}};
  for (const auto& dir : dirs) {
    try {
      found.pmus.push_back(read_pmu(dir, *table));
    } catch (const std::invalid_argument& e) {
      return Unavailable{"uncore iMC PMU " + dir.filename().string() + ": " + e.what()};
    }
  }
  return found;
}

std::variant<std::string, Unavailable> count_imc(CounterSet& counters,
                                                 const std::string& sysfs_pmus,
                                                 const std::string& cpuinfo_path) {
  auto detected = detect_imc_pmus(sysfs_pmus, cpuinfo_path);
  if (auto* u = std::get_if<Unavailable>(&detected)) return *u;
  const ImcPmus& pmus = std::get<ImcPmus>(detected);
  if (auto refused = counters.add_imc(pmus)) return *refused;
  return pmus.microarch;
}

}  // namespace nabla::memlat
