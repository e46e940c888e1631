// Parsing of nabla-tier's configuration (flags and TOML); see tier_config.hh.
#include "nabla/tier/tier_config.hh"

#include <arpa/inet.h>
#include <toml++/toml.h>

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace nabla::tier {
namespace {

constexpr int kMaxCallCount = 64;
constexpr int64_t kMaxResponseBytes = int64_t{16} << 20;
constexpr int kMaxWorkers = 256;

[[noreturn]] void bad(std::string_view field, std::string_view text, std::string_view expected) {
  std::ostringstream out;
  out << field << ": '" << text << "' is invalid; expected " << expected;
  throw std::invalid_argument(out.str());
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

double parse_double(std::string_view text, std::string_view field, std::string_view expected) {
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) bad(field, text, expected);
  return value;
}

int parse_count(std::string_view text, std::string_view field) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 1 || value > kMaxCallCount) {
    bad(field, text, "a count in [1, 64]");
  }
  return value;
}

}  // namespace

int64_t parse_tier_duration_ns(std::string_view text, std::string_view field) {
  constexpr std::string_view kExpected = "a duration like 250us, 1.5ms, 2s (units ns/us/ms/s/m)";
  size_t unit_pos = text.size();
  while (unit_pos > 0 && std::isalpha(static_cast<unsigned char>(text[unit_pos - 1]))) --unit_pos;
  const std::string_view number = text.substr(0, unit_pos);
  const std::string_view unit = text.substr(unit_pos);
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m")
    scale = 60e9;
  else
    bad(field, text, kExpected);
  if (number.empty()) bad(field, text, kExpected);
  const double value = parse_double(number, field, kExpected) * scale;
  if (value < 0 || value > 3600e9) bad(field, text, "a duration in [0, 1h]");
  return static_cast<int64_t>(std::llround(value));
}

ServiceTime ServiceTime::parse(std::string_view text) {
  constexpr std::string_view kField = "service";
  constexpr std::string_view kExpected =
      "fixed:D, exp:MEAN, bimodal:P:D1:D2 or lognormal:MEDIAN:SIGMA";
  const auto parts = split(text, ':');
  ServiceTime st;
  const std::string_view kind = parts[0];
  if (kind == "fixed" && parts.size() == 2) {
    st.kind = ServiceKind::kFixed;
    st.a_ns = parse_tier_duration_ns(parts[1], kField);
  } else if ((kind == "exp" || kind == "exponential") && parts.size() == 2) {
    st.kind = ServiceKind::kExponential;
    st.a_ns = parse_tier_duration_ns(parts[1], kField);
  } else if (kind == "bimodal" && parts.size() == 4) {
    st.kind = ServiceKind::kBimodal;
    st.p = parse_double(parts[1], kField, "bimodal:P:D1:D2 with P in [0, 1]");
    if (st.p < 0 || st.p > 1) bad(kField, text, "bimodal:P:D1:D2 with P in [0, 1]");
    st.a_ns = parse_tier_duration_ns(parts[2], kField);
    st.b_ns = parse_tier_duration_ns(parts[3], kField);
  } else if (kind == "lognormal" && parts.size() == 3) {
    st.kind = ServiceKind::kLognormal;
    st.a_ns = parse_tier_duration_ns(parts[1], kField);
    st.p = parse_double(parts[2], kField, "lognormal:MEDIAN:SIGMA with SIGMA in [0, 4]");
    if (st.p < 0 || st.p > 4) bad(kField, text, "lognormal:MEDIAN:SIGMA with SIGMA in [0, 4]");
  } else {
    bad(kField, text, kExpected);
  }
  return st;
}

int64_t ServiceTime::draw_ns(std::mt19937_64& rng) const {
  switch (kind) {
    case ServiceKind::kFixed:
      return a_ns;
    case ServiceKind::kExponential: {
      if (a_ns == 0) return 0;
      std::exponential_distribution<double> d(1.0 / static_cast<double>(a_ns));
      return static_cast<int64_t>(d(rng));
    }
    case ServiceKind::kBimodal: {
      std::bernoulli_distribution first(p);
      return first(rng) ? a_ns : b_ns;
    }
    case ServiceKind::kLognormal: {
      if (a_ns == 0) return 0;
      std::lognormal_distribution<double> d(std::log(static_cast<double>(a_ns)), p);
      return static_cast<int64_t>(std::min(d(rng), 3600e9));
    }
  }
  return 0;
}

double ServiceTime::mean_ns() const {
  switch (kind) {
    case ServiceKind::kFixed:
    case ServiceKind::kExponential:
      return static_cast<double>(a_ns);
    case ServiceKind::kBimodal:
      return p * static_cast<double>(a_ns) + (1 - p) * static_cast<double>(b_ns);
    case ServiceKind::kLognormal:
      return static_cast<double>(a_ns) * std::exp(p * p / 2);
  }
  return 0;
}

DownstreamCall DownstreamCall::parse(std::string_view text) {
  constexpr std::string_view kField = "call";
  constexpr std::string_view kExpected =
      "TIER:serial:K[:PATH], TIER:parallel:K[:PATH], TIER:async[:PATH] or TIER:none";
  // The path may itself contain ':' only after its leading '/'.
  std::string_view head = text;
  std::string path;
  if (const size_t slash = text.find(":/"); slash != std::string_view::npos) {
    head = text.substr(0, slash);
    path = std::string(text.substr(slash + 1));
  }
  const auto parts = split(head, ':');
  DownstreamCall call;
  if (parts.size() < 2 || parts[0].empty()) bad(kField, text, kExpected);
  call.tier = std::string(parts[0]);
  call.path = path;
  const std::string_view pattern = parts[1];
  if (pattern == "serial" && parts.size() == 3) {
    call.pattern = CallPattern::kSerial;
    call.count = parse_count(parts[2], kField);
  } else if (pattern == "parallel" && parts.size() == 3) {
    call.pattern = CallPattern::kParallel;
    call.count = parse_count(parts[2], kField);
  } else if (pattern == "async" && parts.size() == 2) {
    call.pattern = CallPattern::kAsync;
    call.count = 1;
  } else if (pattern == "none" && parts.size() == 2 && path.empty()) {
    call.pattern = CallPattern::kNone;
    call.count = 0;
  } else {
    bad(kField, text, kExpected);
  }
  return call;
}

int DownstreamCall::true_gradient() const {
  switch (pattern) {
    case CallPattern::kSerial:
      return count;
    case CallPattern::kParallel:
      return 1;
    case CallPattern::kAsync:
    case CallPattern::kNone:
      return 0;
  }
  return 0;
}

std::string to_string(const DownstreamCall& call) {
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

UrlSpec UrlSpec::parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  UrlSpec spec;
  spec.service = ServiceTime{};
  if (!(in >> spec.path) || (spec.path != "*" && spec.path.front() != '/')) {
    bad("url", text, "'/PATH key=value...' or '* key=value...'");
  }
  std::string token;
  while (in >> token) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos) bad("url", token, "key=value (service, mode, bytes, call)");
    const std::string_view key = std::string_view(token).substr(0, eq);
    const std::string_view value = std::string_view(token).substr(eq + 1);
    if (key == "service") {
      spec.service = ServiceTime::parse(value);
    } else if (key == "mode") {
      if (value == "spin")
        spec.mode = ServiceMode::kSpin;
      else if (value == "sleep")
        spec.mode = ServiceMode::kSleep;
      else
        bad("mode", value, "spin or sleep");
    } else if (key == "bytes") {
      int64_t n = -1;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size() || n < 0 ||
          n > kMaxResponseBytes) {
        bad("bytes", value, "a response size in [0, 16777216]");
      }
      spec.response_bytes = n;
    } else if (key == "call") {
      spec.calls.push_back(DownstreamCall::parse(value));
    } else {
      bad("url", key, "one of service, mode, bytes, call");
    }
  }
  return spec;
}

TierAddress TierAddress::parse(std::string_view text, std::string_view field) {
  constexpr std::string_view kExpected = "IPv4:PORT or [IPv6]:PORT with a numeric address";
  TierAddress addr;
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == std::string_view::npos) bad(field, text, kExpected);
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) bad(field, text, kExpected);
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  addr.host = std::string(host);
  unsigned char buf[16];
  const bool v6 = addr.host.find(':') != std::string::npos;
  if (inet_pton(v6 ? AF_INET6 : AF_INET, addr.host.c_str(), buf) != 1) {
    bad(field, text, kExpected);
  }
  unsigned value = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size() || value > 65535) {
    bad(field, text, "a port in [0, 65535]");
  }
  addr.port = static_cast<uint16_t>(value);
  return addr;
}

TierConfig TierConfig::from_toml(std::string_view toml_text) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream out;
    out << "config: TOML parse error at line " << e.source().begin.line << ": " << e.description();
    throw std::invalid_argument(out.str());
  }
  TierConfig cfg;
  if (auto listen = root["server"]["listen"].value<std::string>()) {
    cfg.listen = TierAddress::parse(*listen, "server.listen");
  }
  if (auto workers = root["server"]["workers"].value<int64_t>()) {
    if (*workers < 1 || *workers > kMaxWorkers) {
      bad("server.workers", std::to_string(*workers), "an integer in [1, 256]");
    }
    cfg.workers = static_cast<int>(*workers);
  }
  if (auto seed = root["server"]["seed"].value<int64_t>()) cfg.seed = static_cast<uint64_t>(*seed);
  if (auto bytes = root["server"]["split_response"].value<int64_t>()) {
    cfg.split_response_bytes = *bytes;
  }
  if (auto pause = root["server"]["split_pause"].value<std::string>()) {
    cfg.split_pause_ns = parse_tier_duration_ns(*pause, "server.split_pause");
  }
  if (auto slice = root["server"]["wait_slice"].value<std::string>()) {
    cfg.wait_slice_ns = parse_tier_duration_ns(*slice, "server.wait_slice");
  }
  if (const auto* tiers = root["tiers"].as_table()) {
    for (const auto& [name, node] : *tiers) {
      const auto addr = node.value<std::string>();
      const std::string field = "tiers." + std::string(name.str());
      if (!addr) bad(field, "(not a string)", "\"HOST:PORT\"");
      cfg.tiers[std::string(name.str())] = TierAddress::parse(*addr, field);
    }
  }
  if (const auto* urls = root["url"].as_array()) {
    for (const auto& node : *urls) {
      const auto* t = node.as_table();
      if (t == nullptr) bad("url", "(not a table)", "[[url]] tables");
      UrlSpec spec;
      const auto path = (*t)["path"].value<std::string>();
      if (!path || (*path != "*" && (path->empty() || path->front() != '/'))) {
        bad("url.path", path.value_or("(missing)"), "a path starting with '/' or '*'");
      }
      spec.path = *path;
      if (auto s = (*t)["service"].value<std::string>()) spec.service = ServiceTime::parse(*s);
      if (auto m = (*t)["mode"].value<std::string>()) {
        if (*m == "spin")
          spec.mode = ServiceMode::kSpin;
        else if (*m == "sleep")
          spec.mode = ServiceMode::kSleep;
        else
          bad("url.mode", *m, "spin or sleep");
      }
      if (auto b = (*t)["response_bytes"].value<int64_t>()) {
        if (*b < 0 || *b > kMaxResponseBytes) {
          bad("url.response_bytes", std::to_string(*b), "a size in [0, 16777216]");
        }
        spec.response_bytes = *b;
      }
      if (const auto* calls = (*t)["calls"].as_array()) {
        for (const auto& c : *calls) {
          const auto text = c.value<std::string>();
          if (!text) bad("url.calls", "(not a string)", "\"TIER:PATTERN[:PATH]\" strings");
          spec.calls.push_back(DownstreamCall::parse(*text));
        }
      }
      cfg.urls.push_back(std::move(spec));
    }
  }
  cfg.validate();
  return cfg;
}

void TierConfig::validate() const {
  if (workers < 1 || workers > kMaxWorkers) {
    bad("workers", std::to_string(workers), "an integer in [1, 256]");
  }
  if (split_response_bytes < 0 || split_response_bytes > kMaxResponseBytes) {
    bad("split_response", std::to_string(split_response_bytes), "bytes in [0, 16 MiB]");
  }
  if (split_pause_ns < 0 || split_pause_ns > 1'000'000'000) {
    bad("split_pause", std::to_string(split_pause_ns) + "ns", "a duration in [0, 1s]");
  }
  if (wait_slice_ns < 0 || wait_slice_ns > 1'000'000'000) {
    bad("wait_slice", std::to_string(wait_slice_ns) + "ns", "a duration in [0, 1s]");
  }
  std::set<std::string> seen;
  for (const auto& url : urls) {
    if (!seen.insert(url.path).second) bad("url.path", url.path, "each path configured once");
    for (const auto& call : url.calls) {
      if (call.pattern != CallPattern::kNone && tiers.find(call.tier) == tiers.end()) {
        bad("call", call.tier, "a tier defined with --tier NAME=HOST:PORT or in [tiers]");
      }
    }
  }
}

const UrlSpec* TierConfig::find(std::string_view path) const {
  const UrlSpec* wildcard = nullptr;
  for (const auto& url : urls) {
    if (url.path == path) return &url;
    if (url.path == "*") wildcard = &url;
  }
  return wildcard;
}

}  // namespace nabla::tier
