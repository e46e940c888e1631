#include "nabla/db/records.hh"

#include <array>
#include <stdexcept>
#include <string>

namespace nabla::db {
namespace {

constexpr std::array<std::string_view, 7> kRunKinds = {"run",    "load",  "demo",  "analyze",
                                                       "inject", "accel", "memlat"};
constexpr std::array<std::string_view, 3> kRunStatuses = {"running", "complete", "failed"};
constexpr std::array<std::string_view, 6> kPhaseKinds = {"training", "adaptive",     "active",
                                                         "baseline", "simultaneous", "step"};
constexpr std::array<std::string_view, 3> kSources = {"user", "software", "hardware"};

template <typename Enum, std::size_t N>
Enum parse(const std::array<std::string_view, N>& names, std::string_view text, const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  throw std::invalid_argument(std::string("unknown ") + what + " '" + std::string(text) + "'");
}

}  // namespace

std::string_view to_string(RunKind kind) {
  return kRunKinds.at(static_cast<std::size_t>(kind));
}
std::string_view to_string(RunStatus status) {
  return kRunStatuses.at(static_cast<std::size_t>(status));
}
std::string_view to_string(PhaseKind kind) {
  return kPhaseKinds.at(static_cast<std::size_t>(kind));
}
std::string_view to_string(TimestampSource source) {
  return kSources.at(static_cast<std::size_t>(source));
}

RunKind parse_run_kind(std::string_view text) {
  return parse<RunKind>(kRunKinds, text, "run kind");
}
RunStatus parse_run_status(std::string_view text) {
  return parse<RunStatus>(kRunStatuses, text, "run status");
}
PhaseKind parse_phase_kind(std::string_view text) {
  return parse<PhaseKind>(kPhaseKinds, text, "phase kind");
}

}  // namespace nabla::db
