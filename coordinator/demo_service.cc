#include "nabla/coordinator/demo_service.hh"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>

#include "nabla/coordinator/predict.hh"

namespace nabla::coordinator {
namespace {

int parse_count(std::string_view text, std::string_view whole) {
  int value = 0;
  if (text.empty() || text.size() > 4) value = -1;
  for (char c : text) {
    if (c < '0' || c > '9') {
      value = -1;
      break;
    }
    value = value * 10 + (c - '0');
  }
  if (value < 1) {
    throw std::invalid_argument("call '" + std::string(whole) +
                                "': the count must be a whole number in [1, 9999]");
  }
  return value;
}

}  // namespace

TierCall parse_tier_call(std::string_view text) {
  std::vector<std::string_view> parts;
  std::string_view rest = text;
  // TIER:PATTERN[:K][:PATH]; PATH starts with '/', so split at most 4 ways.
  while (parts.size() < 3) {
    const auto colon = rest.find(':');
    if (colon == std::string_view::npos) break;
    parts.push_back(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  parts.push_back(rest);
  if (parts.size() < 2 || parts[0].empty()) {
    throw std::invalid_argument("call '" + std::string(text) +
                                "': expected TIER:PATTERN[:PATH], e.g. db:serial:3");
  }
  TierCall call;
  call.tier = std::string(parts[0]);
  const std::string_view pattern = parts[1];
  std::size_t next = 2;
  if (pattern == "serial" || pattern == "parallel") {
    call.pattern = pattern == "serial" ? CallPattern::kSerial : CallPattern::kParallel;
    if (parts.size() < 3) {
      throw std::invalid_argument("call '" + std::string(text) + "': " + std::string(pattern) +
                                  " needs a count, e.g. " + std::string(pattern) + ":3");
    }
    call.count = parse_count(parts[2], text);
    next = 3;
  } else if (pattern == "async" || pattern == "none") {
    call.pattern = pattern == "async" ? CallPattern::kAsync : CallPattern::kNone;
  } else {
    throw std::invalid_argument("call '" + std::string(text) +
                                "': pattern must be serial:K, parallel:K, async or none");
  }
  // Whatever follows is the path (it may itself contain ':').
  std::string path;
  for (std::size_t i = next; i < parts.size(); ++i) {
    if (!path.empty()) path += ':';
    path += std::string(parts[i]);
  }
  if (!path.empty() && path.front() != '/') {
    throw std::invalid_argument("call '" + std::string(text) + "': the path must start with '/'");
  }
  call.path = path;
  return call;
}

std::string to_string(const TierCall& call) {
  std::string s = call.tier + ':';
  switch (call.pattern) {
    case CallPattern::kSerial:
      s += "serial:" + std::to_string(call.count);
      break;
    case CallPattern::kParallel:
      s += "parallel:" + std::to_string(call.count);
      break;
    case CallPattern::kAsync:
      s += "async";
      break;
    case CallPattern::kNone:
      s += "none";
      break;
  }
  if (!call.path.empty()) s += ':' + call.path;
  return s;
}

double gradient_factor(const TierCall& call) {
  switch (call.pattern) {
    case CallPattern::kSerial:
      return call.count;
    case CallPattern::kParallel:
      return 1;
    case CallPattern::kAsync:
    case CallPattern::kNone:
      return 0;
  }
  return 0;
}

const TierDef& ServiceModel::tier(std::string_view name) const {
  for (const TierDef& t : tiers)
    if (t.name == name) return t;
  throw std::out_of_range("no tier '" + std::string(name) + "' in the service");
}

std::vector<std::string> ServiceModel::hosts() const {
  std::vector<std::string> out{client_host};
  for (const TierDef& t : tiers) {
    if (std::find(out.begin(), out.end(), t.host) == out.end()) out.push_back(t.host);
  }
  return out;
}

ServiceModel rubis_demo_service() {
  // Service times are small and sleep-based (mode=sleep): the tiers cost
  // almost no CPU on a shared 2-core machine, and little response-time noise
  // means a small injected amplitude suffices. 32 workers per tier keep
  // queueing (which makes gradients load-dependent) negligible at the demo's
  // rates even while a 3x-amplified delay holds workers of web and app.
  ServiceModel m;
  // An even mix: the bin width follows the least frequent type, so uneven
  // weights would only lengthen every phase.
  m.mix = {{"/view", 0.25}, {"/auth", 0.25}, {"/bid", 0.25}, {"/browse", 0.25}};
  m.tiers.push_back(
      {"web", "web", 8080, 32, {{"*", "fixed:50us", {parse_tier_call("app:serial:1")}}}});
  m.tiers.push_back({"app",
                     "app",
                     8081,
                     32,
                     {{"/view", "exp:200us", {parse_tier_call("db:serial:3")}},
                      {"/auth", "fixed:100us", {}},
                      {"/bid",
                       "fixed:100us",
                       {parse_tier_call("db:serial:1"), parse_tier_call("audit:async:/audit")}},
                      {"/browse", "fixed:100us", {parse_tier_call("db:parallel:4")}}}});
  m.tiers.push_back({"db", "db", 8082, 32, {{"*", "exp:100us", {}}}});
  m.tiers.push_back({"audit", "db", 8083, 8, {{"*", "fixed:50us", {}}}});
  return m;
}

TruthTable true_gradients(const ServiceModel& model) {
  std::vector<std::string> types;
  for (const auto& [type, weight] : model.mix) types.push_back(type);
  TruthTable truth;
  // Every link of the service exists for every type (0 unless a path adds).
  auto both_ways = [&](const std::string& src_host, const TierDef& dst, const std::string& type,
                       double g) {
    truth[campaign_link_label("tcp", src_host, 0, dst.host, dst.port)][type] += g;
    truth[campaign_link_label("tcp", dst.host, dst.port, src_host, 0)][type] += g;
  };
  const TierDef& entry = model.tier(model.entry_tier);
  std::function<void(const TierDef&, const std::string&, const std::string&, double, int)> walk =
      [&](const TierDef& tier, const std::string& path, const std::string& type, double factor,
          int depth) {
        if (depth > static_cast<int>(model.tiers.size())) {
          throw std::invalid_argument("the service's calls form a cycle through tier '" +
                                      tier.name + "'");
        }
        const TierUrl* url = nullptr;
        for (const TierUrl& u : tier.urls) {
          if (u.path == path) url = &u;
          if (u.path == "*" && url == nullptr) url = &u;
        }
        if (url == nullptr) return;  // 404: no calls
        for (const TierCall& c : url->calls) {
          const TierDef* callee = nullptr;
          for (const TierDef& t : model.tiers)
            if (t.name == c.tier) callee = &t;
          if (callee == nullptr) {
            throw std::invalid_argument("tier '" + tier.name + "' calls unknown tier '" + c.tier +
                                        "'");
          }
          const double f = factor * gradient_factor(c);
          both_ways(tier.host, *callee, type, f);
          walk(*callee, c.path.empty() ? path : c.path, type, f, depth + 1);
        }
      };
  for (const std::string& type : types) {
    both_ways(model.client_host, entry, type, 1.0);
    walk(entry, type, type, 1.0, 0);
  }
  for (auto& [label, by_type] : truth) {
    for (const std::string& type : types) by_type.emplace(type, 0.0);
  }
  return truth;
}

std::vector<std::string> tier_argv(const ServiceModel& model, const TierDef& tier,
                                   const std::string& tier_binary,
                                   const std::map<std::string, std::string>& address_of,
                                   std::uint64_t seed) {
  auto address = [&](const std::string& host) {
    const auto it = address_of.find(host);
    if (it == address_of.end()) throw std::out_of_range("no address for host '" + host + "'");
    return it->second;
  };
  std::vector<std::string> argv = {tier_binary,
                                   "--listen",
                                   address(tier.host) + ":" + std::to_string(tier.port),
                                   "--workers",
                                   std::to_string(tier.workers),
                                   "--seed",
                                   std::to_string(seed)};
  std::set<std::string> called;
  for (const TierUrl& u : tier.urls)
    for (const TierCall& c : u.calls) called.insert(c.tier);
  for (const std::string& name : called) {
    const TierDef& t = model.tier(name);
    argv.push_back("--tier");
    argv.push_back(name + "=" + address(t.host) + ":" + std::to_string(t.port));
  }
  for (const TierUrl& u : tier.urls) {
    std::string spec = u.path + " service=" + u.service + " mode=sleep";
    for (const TierCall& c : u.calls) spec += " call=" + to_string(c);
    argv.push_back("--url");
    argv.push_back(spec);
  }
  return argv;
}

}  // namespace nabla::coordinator
