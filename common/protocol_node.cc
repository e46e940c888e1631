// The node facts of both daemons' daemon.info and clock.now; see
// protocol/node.hh.
#include "nabla/common/protocol/node.hh"
#include "protocol_fields.hh"

namespace nabla::common::protocol {

using nlohmann::json;

namespace {

json features_json(const std::map<std::string, FeatureState>& features) {
  json out = json::object();
  for (const auto& [name, state] : features) {
    out[name] = {{"available", state.available}, {"detail", state.detail}};
  }
  return out;
}

std::map<std::string, FeatureState> read_features(const ObjectReader& in) {
  const json& object = in.require("features");
  if (!object.is_object()) bad_field("features", "must be an object");
  std::map<std::string, FeatureState> out;
  for (const auto& [name, value] : object.items()) {
    const ObjectReader feature(value, "features." + name);
    out[name] = {feature.boolean("available"), feature.string("detail")};
  }
  return out;
}

std::vector<std::string> read_strings(const ObjectReader& in, const char* key) {
  const json& list = in.require(key);
  if (!list.is_array()) bad_field(in.path(key), "must be an array of strings");
  std::vector<std::string> out;
  for (const json& item : list) {
    if (!item.is_string()) bad_field(in.path(key), "must be an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<InterfaceStamps> read_interfaces(const ObjectReader& in) {
  const json& list = in.require("hw_timestamps");
  if (!list.is_array()) bad_field("hw_timestamps", "must be an array");
  std::vector<InterfaceStamps> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ObjectReader item(list[i], "hw_timestamps[" + std::to_string(i) + "]");
    out.push_back({item.string("interface"), read_strings(item, "addresses"),
                   item.boolean("hardware"), item.string("detail")});
  }
  return out;
}

}  // namespace

void NodeFacts::write_to(json& result) const {
  result["protocol_version"] = protocol_version;
  result["features"] = features_json(features);
  json interfaces = json::array();
  for (const InterfaceStamps& i : hw_timestamps) {
    interfaces.push_back({{"interface", i.name},
                          {"addresses", i.addresses},
                          {"hardware", i.hardware},
                          {"detail", i.detail}});
  }
  result["hw_timestamps"] = std::move(interfaces);
}

NodeFacts NodeFacts::read_from(const json& result) {
  const ObjectReader in(result, "");
  NodeFacts facts;
  facts.protocol_version = in.integer("protocol_version");
  facts.features = read_features(in);
  facts.hw_timestamps = read_interfaces(in);
  return facts;
}

void ControlCounters::write_to(json& result) const {
  result["control"] = {{"refused_full", refused_full},
                       {"refused_per_peer", refused_per_peer},
                       {"auth_timeouts", auth_timeouts},
                       {"idle_closed", idle_closed}};
}

ControlCounters ControlCounters::read_from(const json& result) {
  const ObjectReader in(result, "");
  if (in.find("control") == nullptr) return {};
  const ObjectReader c = in.object("control");
  return ControlCounters{c.unsigned_integer("refused_full"), c.unsigned_integer("refused_per_peer"),
                         c.unsigned_integer("auth_timeouts"), c.unsigned_integer("idle_closed")};
}

json ClockNowResult::to_json() const {
  return json{{"realtime_ns", realtime_ns}, {"monotonic_ns", monotonic_ns}};
}

ClockNowResult ClockNowResult::from_json(const json& result) {
  const ObjectReader in(result, "");
  return ClockNowResult{in.integer("realtime_ns"), in.integer("monotonic_ns")};
}

}  // namespace nabla::common::protocol
