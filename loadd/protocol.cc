// nabla-loadd's messages; see protocol.hh.
#include "nabla/loadd/protocol.hh"

#include <cmath>
#include <initializer_list>
#include <optional>
#include <stdexcept>

namespace nabla::loadd::protocol {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw std::invalid_argument(field + ": " + why);
}

// One JSON object read field by field; every error names the field.
class Fields {
 public:
  Fields(const json& object, const char* what) : object_(object) {
    if (!object.is_object()) bad(what, "must be an object");
  }
  void only(std::initializer_list<const char*> known) const {
    for (const auto& [key, value] : object_.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) bad(key, "unknown field");
    }
  }
  const json* find(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& require(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) bad(key, "required");
    return *v;
  }
  std::string string(const char* key) const {
    const json& v = require(key);
    if (!v.is_string()) bad(key, "must be a string");
    return v.get<std::string>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    return find(key) ? string(key) : fallback;
  }
  double number(const char* key) const {
    const json& v = require(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) bad(key, "must be a number");
    return v.get<double>();
  }
  int64_t integer(const char* key) const {
    const json& v = require(key);
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad(key, "too large");
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (!v.is_number_integer()) bad(key, "must be an integer");
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const char* key) const {
    const int64_t v = integer(key);
    if (v < 0) bad(key, "must not be negative");
    return static_cast<uint64_t>(v);
  }
  bool boolean(const char* key) const {
    const json& v = require(key);
    if (!v.is_boolean()) bad(key, "must be true or false");
    return v.get<bool>();
  }
  const json& object(const char* key) const {
    const json& v = require(key);
    if (!v.is_object()) bad(key, "must be an object");
    return v;
  }

 private:
  const json& object_;
};

std::string read_owner(const Fields& f) {
  std::string owner = f.string("owner");
  if (owner.empty() || owner.size() > kMaxOwnerChars) bad("owner", "must be 1 .. 64 characters");
  for (const char c : owner) {
    if (c < 0x21 || c > 0x7e) bad("owner", "must be printable ASCII without spaces");
  }
  return owner;
}

// The agent kinds' wire names (as loadgen::to_string(AgentKind)), here so
// the messages need nothing of loadgen's implementation.
const char* kind_name(loadgen::AgentKind kind) {
  switch (kind) {
    case loadgen::AgentKind::kThroughput:
      return "throughput";
    case loadgen::AgentKind::kLatency:
      return "latency";
    case loadgen::AgentKind::kSymmetric:
      break;
  }
  return "symmetric";
}

std::optional<loadgen::AgentKind> kind_of(const std::string& text) {
  for (const auto k : {loadgen::AgentKind::kSymmetric, loadgen::AgentKind::kThroughput,
                       loadgen::AgentKind::kLatency}) {
    if (text == kind_name(k)) return k;
  }
  return std::nullopt;
}

std::string read_id(const Fields& f) {
  std::string id = f.string("id");
  if (id.empty() || id.size() > 64) bad("id", "must be 1 .. 64 characters");
  return id;
}

}  // namespace

std::string_view to_string(RoundState state) noexcept {
  switch (state) {
    case RoundState::kRunning:
      return "running";
    case RoundState::kDone:
      return "done";
    case RoundState::kFailed:
      return "failed";
    case RoundState::kStopped:
      return "stopped";
    case RoundState::kLapsed:
      return "lapsed";
  }
  return "running";
}

RoundState parse_round_state(std::string_view text, const std::string& path) {
  for (const RoundState s : {RoundState::kRunning, RoundState::kDone, RoundState::kFailed,
                             RoundState::kStopped, RoundState::kLapsed}) {
    if (text == to_string(s)) return s;
  }
  bad(path, "must be running, done, failed, stopped or lapsed, not '" + std::string(text) + "'");
}

json LoadStartParams::to_json() const {
  return {{"owner", owner},
          {"lease_s", lease_s},
          {"lead_ns", lead_ns},
          {"kind", kind_name(kind)},
          {"engine", engine}};
}

LoadStartParams LoadStartParams::from_json(const json& params) {
  const Fields f(params, "params");
  f.only({"owner", "lease_s", "lead_ns", "kind", "engine"});
  LoadStartParams p;
  p.owner = read_owner(f);
  if (f.find("lease_s")) {
    p.lease_s = f.number("lease_s");
    if (!(p.lease_s > 0 && p.lease_s <= kMaxLeaseS)) bad("lease_s", "must be within (0, 3600]");
  }
  if (f.find("lead_ns")) {
    p.lead_ns = f.integer("lead_ns");
    if (p.lead_ns < 0 || p.lead_ns > kMaxLeadNs) bad("lead_ns", "must be within 0 .. 60 s");
  }
  if (f.find("kind")) {
    const std::string kind = f.string("kind");
    const auto parsed = kind_of(kind);
    if (!parsed) bad("kind", "must be symmetric, throughput or latency, not '" + kind + "'");
    p.kind = *parsed;
  }
  p.engine = f.object("engine");
  return p;
}

json RoundRef::to_json() const {
  return {{"id", id}, {"owner", owner}};
}

RoundRef RoundRef::from_json(const json& params) {
  const Fields f(params, "params");
  f.only({"id", "owner"});
  return {read_id(f), read_owner(f)};
}

json LoadSamplesParams::to_json() const {
  return {{"id", id}, {"owner", owner}, {"offset", offset}, {"limit", limit}};
}

LoadSamplesParams LoadSamplesParams::from_json(const json& params) {
  const Fields f(params, "params");
  f.only({"id", "owner", "offset", "limit"});
  LoadSamplesParams p;
  p.id = read_id(f);
  p.owner = read_owner(f);
  if (f.find("offset")) p.offset = f.unsigned_integer("offset");
  if (f.find("limit")) {
    p.limit = f.unsigned_integer("limit");
    if (p.limit < 1 || p.limit > kMaxSamplesPage) bad("limit", "must be within 1 .. 8192");
  }
  return p;
}

json LoadStartResult::to_json() const {
  return {{"id", id}, {"start_ns", start_ns}};
}

LoadStartResult LoadStartResult::from_json(const json& result) {
  const Fields f(result, "result");
  return {read_id(f), f.integer("start_ns")};
}

json LoadStatusResult::to_json() const {
  json j = {{"id", id}, {"state", to_string(state)}, {"lease_remaining_s", lease_remaining_s}};
  if (!error.empty()) j["error"] = error;
  return j;
}

LoadStatusResult LoadStatusResult::from_json(const json& result) {
  const Fields f(result, "result");
  LoadStatusResult r;
  r.id = read_id(f);
  r.state = parse_round_state(f.string("state"));
  r.error = f.string_or("error", "");
  r.lease_remaining_s = f.number("lease_remaining_s");
  return r;
}

json LoadResultResult::to_json() const {
  return {{"id", id},
          {"state", to_string(state)},
          {"start_ns", start_ns},
          {"samples", samples},
          {"summary", summary}};
}

LoadResultResult LoadResultResult::from_json(const json& result) {
  const Fields f(result, "result");
  LoadResultResult r;
  r.id = read_id(f);
  r.state = parse_round_state(f.string("state"));
  r.start_ns = f.integer("start_ns");
  r.samples = f.unsigned_integer("samples");
  r.summary = f.object("summary");
  return r;
}

json LoadSamplesResult::to_json() const {
  return {{"id", id}, {"offset", offset}, {"total", total}, {"samples", samples}};
}

LoadSamplesResult LoadSamplesResult::from_json(const json& result) {
  const Fields f(result, "result");
  LoadSamplesResult r;
  r.id = read_id(f);
  r.offset = f.unsigned_integer("offset");
  r.total = f.unsigned_integer("total");
  r.samples = f.object("samples");
  return r;
}

json LoadStopResult::to_json() const {
  return {{"id", id}, {"state", to_string(state)}};
}

LoadStopResult LoadStopResult::from_json(const json& result) {
  const Fields f(result, "result");
  return {read_id(f), parse_round_state(f.string("state"))};
}

json LoaddInfo::to_json() const {
  return {{"name", name},
          {"kind", kind},
          {"version", version},
          {"protocol_version", protocol_version},
          {"pid", pid},
          {"busy", busy},
          {"round", round},
          {"owner", owner},
          {"limits",
           {{"max_rate", max_rate},
            {"max_connections", max_connections},
            {"max_threads", max_threads},
            {"max_round_s", max_round_s},
            {"max_samples", max_samples},
            {"allow_target", allow_target}}},
          {"uptime_s", uptime_s}};
}

LoaddInfo LoaddInfo::from_json(const json& result) {
  const Fields f(result, "result");
  LoaddInfo i;
  i.name = f.string("name");
  i.kind = f.string("kind");
  i.version = f.string("version");
  i.protocol_version = f.integer("protocol_version");
  i.pid = f.integer("pid");
  i.busy = f.boolean("busy");
  i.round = f.string_or("round", "");
  i.owner = f.string_or("owner", "");
  const Fields limits(f.object("limits"), "limits");
  i.max_rate = limits.number("max_rate");
  i.max_connections = limits.integer("max_connections");
  i.max_threads = limits.integer("max_threads");
  i.max_round_s = limits.number("max_round_s");
  i.max_samples = limits.integer("max_samples");
  const json& allow = limits.require("allow_target");
  if (!allow.is_array()) bad("limits.allow_target", "must be an array");
  for (const json& a : allow) {
    if (!a.is_string()) bad("limits.allow_target", "must hold strings");
    i.allow_target.push_back(a.get<std::string>());
  }
  i.uptime_s = f.number("uptime_s");
  return i;
}

}  // namespace nabla::loadd::protocol
