// TEMPORARY: minimal stand-ins for loadgen/rounds.hh and loadgen/wire.hh
// so that nabla-loadd and its tests link before the real rounds.cc and
// wire.cc land from their own branch. Drop this file when merging them.
// Covers only what loadd/ calls, with only the fields its tests use.
#include <algorithm>
#include <stdexcept>

#include "nabla/loadgen/rounds.hh"
#include "nabla/loadgen/wire.hh"

namespace nabla::loadgen {

using nlohmann::json;

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
  for (auto k : {AgentKind::kSymmetric, AgentKind::kThroughput, AgentKind::kLatency}) {
    if (text == to_string(k)) return k;
  }
  return std::nullopt;
}

std::vector<double> split_rate(double total_rate, const std::vector<AgentKind>& kinds,
                               double /*latency_share*/) {
  if (kinds.empty()) throw std::invalid_argument("no agent");
  return std::vector<double>(kinds.size(), total_rate / static_cast<double>(kinds.size()));
}

EngineConfig agent_engine(const EngineConfig& whole, AgentKind kind, double share,
                          std::size_t agent_index) {
  EngineConfig c = whole;
  c.schedule.rate_per_s = share;
  c.record_samples = kind != AgentKind::kThroughput;
  c.seed = whole.seed + 1000003 * agent_index;
  return c;
}

void merge_into(EngineResult& into, EngineResult part) {
  into.scheduled += part.scheduled;
  into.sent += part.sent;
  into.completed += part.completed;
  into.late += part.late;
  into.errors.add(part.errors);
  into.samples.insert(into.samples.end(), part.samples.begin(), part.samples.end());
}

void sort_samples(EngineResult& result) {
  std::sort(result.samples.begin(), result.samples.end(),
            [](const Sample& a, const Sample& b) { return a.intended_ns < b.intended_ns; });
}

json engine_config_to_json(const EngineConfig& c) {
  return {{"host", c.host},
          {"port", c.port},
          {"threads", c.threads},
          {"connections", c.connections},
          {"max_outstanding", c.max_outstanding},
          {"rate_per_s", c.schedule.rate_per_s},
          {"schedule_kind", static_cast<int>(c.schedule.kind)},
          {"duration_ns", c.duration_ns},
          {"max_requests", c.max_requests},
          {"record_samples", c.record_samples},
          {"seed", c.seed}};
}

EngineConfig engine_config_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("engine: must be an object");
  EngineConfig c;
  for (const auto& [key, value] : j.items()) {
    try {
      if (key == "host") {
        c.host = value.get<std::string>();
      } else if (key == "port") {
        c.port = value.get<uint16_t>();
      } else if (key == "threads") {
        c.threads = value.get<int>();
      } else if (key == "connections") {
        c.connections = value.get<int>();
        if (c.connections < 1 || c.connections > 65536) {
          throw std::invalid_argument("engine.connections: must be 1 .. 65536");
        }
      } else if (key == "max_outstanding") {
        c.max_outstanding = value.get<int>();
      } else if (key == "rate_per_s") {
        c.schedule.rate_per_s = value.get<double>();
      } else if (key == "schedule_kind") {
        c.schedule.kind = static_cast<ScheduleKind>(value.get<int>());
      } else if (key == "duration_ns") {
        c.duration_ns = value.get<int64_t>();
      } else if (key == "max_requests") {
        c.max_requests = value.get<uint64_t>();
      } else if (key == "record_samples") {
        c.record_samples = value.get<bool>();
      } else if (key == "seed") {
        c.seed = value.get<uint64_t>();
      } else {
        throw std::invalid_argument("engine." + key + ": unknown key");
      }
    } catch (const json::exception&) {
      throw std::invalid_argument("engine." + key + ": wrong type");
    }
  }
  return c;
}

json round_summary_to_json(const EngineResult& r, const CalibrationCheck& check) {
  return {{"scheduled", r.scheduled},
          {"sent", r.sent},
          {"completed", r.completed},
          {"late", r.late},
          {"errors_total", r.errors.total()},
          {"errors_connect", r.errors.connect},
          {"first_intended_ns", r.first_intended_ns},
          {"last_intended_ns", r.last_intended_ns},
          {"reasons", check.reasons}};
}

RoundSummary round_summary_from_json(const json& j) {
  RoundSummary s;
  s.result.scheduled = j.at("scheduled").get<uint64_t>();
  s.result.sent = j.at("sent").get<uint64_t>();
  s.result.completed = j.at("completed").get<uint64_t>();
  s.result.late = j.at("late").get<uint64_t>();
  s.result.errors.connect = j.at("errors_connect").get<uint64_t>();
  s.result.first_intended_ns = j.at("first_intended_ns").get<int64_t>();
  s.result.last_intended_ns = j.at("last_intended_ns").get<int64_t>();
  s.check.reasons = j.at("reasons").get<std::vector<std::string>>();
  return s;
}

json samples_to_json(std::span<const Sample> samples) {
  json intended = json::array(), latency = json::array();
  for (const Sample& s : samples) {
    intended.push_back(s.intended_ns);
    latency.push_back(s.latency_ns);
  }
  return {{"intended_ns", intended}, {"latency_ns", latency}};
}

std::vector<Sample> samples_from_json(const json& j) {
  const auto& intended = j.at("intended_ns");
  const auto& latency = j.at("latency_ns");
  if (intended.size() != latency.size()) throw std::invalid_argument("samples: ragged columns");
  std::vector<Sample> out(intended.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].intended_ns = intended[i].get<int64_t>();
    out[i].latency_ns = latency[i].get<int64_t>();
  }
  return out;
}

}  // namespace nabla::loadgen
