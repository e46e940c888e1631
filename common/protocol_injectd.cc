// nabla-injectd's params messages; see protocol/injectd.hh.
#include <stdexcept>

#include "nabla/common/link_spec.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/protocol/injectd.hh"
#include "protocol_fields.hh"

namespace nabla::common::protocol {

using nlohmann::json;

namespace {

std::optional<uint64_t> read_seed(const ObjectReader& in) {
  const json* seed = in.find("seed");
  if (seed == nullptr) return std::nullopt;
  if (!is_non_negative_integer(*seed)) bad_field("seed", "must be a non-negative integer");
  return seed->get<uint64_t>();
}

InjectionSettings read_settings(const ObjectReader& in, const json& params) {
  InjectionSettings s;
  s.seed = read_seed(in);
  if (const json* delay = in.find("delay")) s.delay = Wave::from_json(*delay, "delay");
  s.lease_s = read_lease_s(params);
  if (const json* faults = in.find("faults")) s.faults = Faults::from_json(*faults);
  return s;
}

void put_settings(json& out, const InjectionSettings& s) {
  if (s.delay) out["delay"] = s.delay->to_json();
  if (!s.faults.empty()) out["faults"] = s.faults.to_json();
  if (s.lease_s) out["lease_s"] = *s.lease_s;
  if (s.seed) out["seed"] = *s.seed;
}

// "owner": a session token of 1..64 letters, digits and . _ : -
std::optional<std::string> read_owner(const ObjectReader& in) {
  const json* owner = in.find("owner");
  if (owner == nullptr) return std::nullopt;
  const auto valid = [](const std::string& t) {
    return !t.empty() && t.size() <= 64 &&
           t.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") ==
               std::string::npos;
  };
  if (!owner->is_string() || !valid(owner->get<std::string>())) {
    bad_field("owner", "must be a session token of 1..64 letters, digits, '.', '_', ':' or '-'");
  }
  return owner->get<std::string>();
}

void put_claim(json& out, const std::optional<std::string>& owner, bool force) {
  if (owner) out["owner"] = *owner;
  if (force) out["force"] = true;
}

// "id" of the params that name an injection.
std::string read_id(const ObjectReader& in) {
  const json* id = in.find("id");
  if (id == nullptr || !id->is_string()) bad_field("id", "required, a string");
  return id->get<std::string>();
}

}  // namespace

std::optional<double> read_lease_s(const json& params) {
  const ObjectReader in(params, "");
  const json* lease = in.find("lease_s");
  if (lease == nullptr) return std::nullopt;
  if (!lease->is_number() || !(lease->get<double>() > 0.0) || lease->get<double>() > kMaxLeaseS) {
    bad_field("lease_s", "must be a number of seconds in (0, 3600]");
  }
  return lease->get<double>();
}

json InjectStartParams::to_json() const {
  json out{{"link", link}, {"direction", std::string(protocol::to_string(direction))}};
  put_settings(out, settings);
  if (netns) out["netns"] = *netns;
  if (owner) out["owner"] = *owner;
  if (release != Release::kSpin) out["release"] = std::string(protocol::to_string(release));
  return out;
}

InjectStartParams InjectStartParams::from_json(const json& params) {
  const ObjectReader in(params, "");
  in.reject_unknown(
      {"id", "link", "direction", "delay", "faults", "lease_s", "seed", "netns", "owner", "release"});
  InjectStartParams p;
  const json* link = in.find("link");
  if (link == nullptr || !link->is_string()) bad_field("link", "required, a link spec string");
  p.link = link->get<std::string>();
  try {
    parse_link_spec(p.link);
  } catch (const std::invalid_argument& e) {
    bad_field("link", e.what());
  }
  if (const json* dir = in.find("direction")) {
    if (!dir->is_string()) bad_field("direction", "must be out|in|fwd");
    try {
      p.direction = parse_direction(dir->get<std::string>());
    } catch (const std::invalid_argument&) {
      bad_field("direction", "must be out|in|fwd, got '" + dir->get<std::string>() + "'");
    }
  }
  p.settings = read_settings(in, params);
  if (in.find("id") != nullptr) bad_field("id", "not accepted by inject.start");
  if (const json* release = in.find("release")) {
    if (!release->is_string()) bad_field("release", "must be spin|sleep");
    try {
      p.release = parse_release(release->get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad_field("release", e.what());
    }
  }
  if (const json* netns = in.find("netns")) {
    if (!netns->is_string()) bad_field("netns", "must be NAME, /path or pid:N");
    try {
      netns_path(netns->get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad_field("netns", e.what());
    }
    p.netns = netns->get<std::string>();
  }
  p.owner = read_owner(in);
  return p;
}

json InjectUpdateParams::to_json() const {
  json out{{"id", id}};
  put_settings(out, settings);
  put_claim(out, owner, force);
  return out;
}

InjectUpdateParams InjectUpdateParams::from_json(const json& params) {
  const ObjectReader in(params, "");
  in.reject_unknown(
      {"id", "link", "direction", "delay", "faults", "lease_s", "seed", "owner", "force"});
  if (in.find("link") != nullptr || in.find("direction") != nullptr) {
    bad_field("link", "cannot be changed by inject.update; stop and start a new injection");
  }
  InjectUpdateParams p;
  p.id = read_id(in);
  p.settings = read_settings(in, params);
  p.owner = read_owner(in);
  p.force = in.boolean_or("force", false);
  return p;
}

json InjectStopParams::to_json() const {
  json out{{"id", id}};
  put_claim(out, owner, force);
  return out;
}

InjectStopParams InjectStopParams::from_json(const json& params) {
  const ObjectReader in(params, "");
  in.reject_unknown({"id", "owner", "force"});
  return InjectStopParams{read_id(in), read_owner(in), in.boolean_or("force", false)};
}

json InjectStatsParams::to_json() const {
  return json{{"id", id}, {"cycles", cycles}};
}

InjectStatsParams InjectStatsParams::from_json(const json& params) {
  const ObjectReader in(params, "");
  in.reject_unknown({"id", "cycles"});
  return InjectStatsParams{read_id(in), in.boolean_or("cycles", false)};
}

json LeaseRenewParams::to_json() const {
  json out{{"id", id}};
  if (lease_s) out["lease_s"] = *lease_s;
  put_claim(out, owner, force);
  return out;
}

LeaseRenewParams LeaseRenewParams::from_json(const json& params) {
  const ObjectReader in(params, "");
  in.reject_unknown({"id", "lease_s", "owner", "force"});
  return LeaseRenewParams{read_id(in), read_lease_s(params), read_owner(in),
                          in.boolean_or("force", false)};
}

}  // namespace nabla::common::protocol
