// TEMP stub of the parts of rounds.hh this branch links against; the real
// rounds.cc is written on another branch.
#include <stdexcept>

#include "nabla/loadgen/rounds.hh"

namespace nabla::loadgen {

const char* to_string(AgentKind kind) {
  switch (kind) {
    case AgentKind::kThroughput:
      return "throughput";
    case AgentKind::kLatency:
      return "latency";
    case AgentKind::kSymmetric:
      break;
  }
  return "symmetric";
}

std::optional<AgentKind> parse_agent_kind(const std::string& text) {
  if (text == "symmetric") return AgentKind::kSymmetric;
  if (text == "throughput") return AgentKind::kThroughput;
  if (text == "latency") return AgentKind::kLatency;
  return std::nullopt;
}

void AgentSummary::add(const AgentRound& round) {
  ++rounds;
  rounds_failed += round.check.passed() ? 0 : 1;
  sent += round.sent;
  completed += round.completed;
  late += round.late;
  samples += round.samples;
}

}  // namespace nabla::loadgen
