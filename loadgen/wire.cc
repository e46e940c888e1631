// JSON forms of what crosses between the controller and a load agent; see
// wire.hh.
//
// Conventions: counts are unsigned integers, times integer nanoseconds
// (keys ending _ns), rates and statistics numbers. A number that is not
// finite (a capacity of "infinitely many" requests per second) is written
// as the string "inf", "-inf" or "nan", since JSON has no such number.
// Enums are written by name, except the per-sample timestamp sources,
// which are columns of small integers (0 hardware, 1 software, 2 user, as
// TimestampSource counts them).
#include "nabla/loadgen/wire.hh"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace nabla::loadgen {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw std::invalid_argument(path + ": " + why);
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string at(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

// ------------------------------------------------------------ values

bool is_unsigned(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

uint64_t read_unsigned(const json& v, const std::string& path, uint64_t lo = 0,
                       uint64_t hi = UINT64_MAX) {
  if (!is_unsigned(v)) bad(path, "must be an integer >= 0");
  const auto n = v.get<uint64_t>();
  if (n < lo || n > hi) {
    bad(path, "must be " + std::to_string(lo) + " .. " + std::to_string(hi));
  }
  return n;
}

int64_t read_integer(const json& v, const std::string& path) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
    bad(path, "must be an integer");
  }
  return v.get<int64_t>();
}

json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

double read_number(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  bad(path, "must be a number");
}

// One JSON object read field by field: every field required unless read
// with a fallback, unknown fields refused, every error naming its path.
class Reader {
 public:
  Reader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_object()) bad(path_.empty() ? "message" : path_, "must be an object");
  }

  std::string path(const char* key) const { return join(path_, key); }

  const json* find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& require(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) bad(path(key), "required");
    return *v;
  }
  void reject_unknown(std::initializer_list<const char*> known) const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      bool ok = false;
      for (const char* k : known) ok = ok || it.key() == k;
      if (!ok) bad(join(path_, it.key()), "unknown field");
    }
  }

  std::string string(const char* key) const {
    const json& v = require(key);
    if (!v.is_string()) bad(path(key), "must be a string");
    return v.get<std::string>();
  }
  bool boolean(const char* key) const {
    const json& v = require(key);
    if (!v.is_boolean()) bad(path(key), "must be true or false");
    return v.get<bool>();
  }
  double number(const char* key) const { return read_number(require(key), path(key)); }
  // A finite number within [lo, hi].
  double number_within(const char* key, double lo, double hi) const {
    const double x = number(key);
    if (!(x >= lo && x <= hi)) {
      bad(path(key), "must be within " + fixed(lo) + " .. " + fixed(hi));
    }
    return x;
  }
  double positive(const char* key) const {
    const double x = number(key);
    if (!(x > 0) || !std::isfinite(x)) bad(path(key), "must be a number > 0");
    return x;
  }
  int64_t integer(const char* key) const { return read_integer(require(key), path(key)); }
  int64_t non_negative(const char* key) const {
    const int64_t n = integer(key);
    if (n < 0) bad(path(key), "must be >= 0");
    return n;
  }
  uint64_t count(const char* key, uint64_t lo = 0, uint64_t hi = UINT64_MAX) const {
    return read_unsigned(require(key), path(key), lo, hi);
  }
  Reader object(const char* key) const { return Reader(require(key), path(key)); }
  const json& array(const char* key) const {
    const json& v = require(key);
    if (!v.is_array()) bad(path(key), "must be an array");
    return v;
  }
  std::vector<std::string> strings(const char* key) const {
    const json& a = array(key);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) bad(at(path(key), i), "must be a string");
      out.push_back(a[i].get<std::string>());
    }
    return out;
  }

 private:
  static std::string fixed(double x) {
    std::string s = std::to_string(x);
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
      const bool dot = s.back() == '.';
      s.pop_back();
      if (dot) break;
    }
    return s;
  }

  const json& object_;
  std::string path_;
};

// An enum by name from a table of (value, name).
template <class E, std::size_t N>
const char* name_of(E value, const std::pair<E, const char*> (&table)[N]) {
  for (const auto& [v, n] : table) {
    if (v == value) return n;
  }
  return table[0].second;
}

template <class E, std::size_t N>
E read_enum(const Reader& in, const char* key, const std::pair<E, const char*> (&table)[N]) {
  const std::string text = in.string(key);
  std::string names;
  for (const auto& [v, n] : table) {
    if (text == n) return v;
    names += (names.empty() ? "" : "|") + std::string(n);
  }
  bad(in.path(key), "must be " + names + ", got '" + text + "'");
}

constexpr std::pair<ScheduleKind, const char*> kScheduleKinds[] = {
    {ScheduleKind::kExponential, "exponential"},
    {ScheduleKind::kFixed, "fixed"},
    {ScheduleKind::kLognormal, "lognormal"},
    {ScheduleKind::kUniform, "uniform"},
    {ScheduleKind::kTrace, "trace"}};

using PK = ProtocolSpec::Kind;
constexpr std::pair<PK, const char*> kProtocolKinds[] = {
    {PK::kHttp, "http"},   {PK::kEcho, "echo"},         {PK::kMemcached, "memcached"},
    {PK::kRedis, "redis"}, {PK::kSockperf, "sockperf"}, {PK::kHttp2, "http2"},
    {PK::kGrpc, "grpc"}};

constexpr std::pair<KeyDistribution, const char*> kKeyDistributions[] = {
    {KeyDistribution::kUniform, "uniform"}, {KeyDistribution::kZipf, "zipf"}};

// ------------------------------------------------------------ base64

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += kBase64[(n >> 6) & 63];
    out += kBase64[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string& in, const std::string& path) {
  if (in.size() % 4 != 0) bad(path, "must be base64 (length a multiple of 4)");
  auto value = [&](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    const int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=') : 0;
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) {
      const int v = k >= 4 - pad ? 0 : value(in[i + static_cast<std::size_t>(k)]);
      if (v < 0) bad(path, "must be base64");
      n = (n << 6) | static_cast<uint32_t>(v);
    }
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return out;
}

// ------------------------------------------------------------ the workload

constexpr uint64_t kMaxThreads = 1024;
constexpr uint64_t kMaxConnections = 65536;
constexpr uint64_t kMaxOutstanding = 65536;
constexpr uint64_t kMaxPayloadBytes = kEchoMaxFrame;

json schedule_json(const ScheduleSpec& s) {
  json j{{"kind", name_of(s.kind, kScheduleKinds)},
         {"rate_per_s", number(s.rate_per_s)},
         {"lognormal_sigma", number(s.lognormal_sigma)},
         {"uniform_spread", number(s.uniform_spread)},
         {"trace_ns", s.trace_ns}};
  if (s.trace_origin_ns) j["trace_origin_ns"] = *s.trace_origin_ns;
  return j;
}

ScheduleSpec read_schedule(const Reader& in) {
  in.reject_unknown(
      {"kind", "rate_per_s", "lognormal_sigma", "uniform_spread", "trace_ns", "trace_origin_ns"});
  ScheduleSpec s;
  s.kind = read_enum(in, "kind", kScheduleKinds);
  s.rate_per_s = in.positive("rate_per_s");
  s.lognormal_sigma = in.number_within("lognormal_sigma", 0, 100);
  s.uniform_spread = in.number_within("uniform_spread", 0, 1);
  const json& trace = in.array("trace_ns");
  for (std::size_t i = 0; i < trace.size(); ++i) {
    s.trace_ns.push_back(read_integer(trace[i], at(in.path("trace_ns"), i)));
    if (i > 0 && s.trace_ns[i] < s.trace_ns[i - 1]) {
      bad(at(in.path("trace_ns"), i), "must not decrease");
    }
  }
  if (s.kind == ScheduleKind::kTrace && s.trace_ns.empty()) {
    bad(in.path("trace_ns"), "must not be empty for a trace schedule");
  }
  if (in.find("trace_origin_ns")) s.trace_origin_ns = in.integer("trace_origin_ns");
  return s;
}

json protocol_json(const ProtocolSpec& p) {
  json urls = json::array();
  for (const auto& u : p.urls) urls.push_back({{"path", u.path}, {"weight", number(u.weight)}});
  json calls = json::array();
  for (const auto& c : p.grpc_calls) {
    calls.push_back({{"method", c.method},
                     {"message", base64_encode(c.message)},
                     {"weight", number(c.weight)}});
  }
  return json{{"kind", name_of(p.kind, kProtocolKinds)},
              {"urls", std::move(urls)},
              {"host_header", p.host_header},
              {"scheme", p.scheme},
              {"grpc_calls", std::move(calls)},
              {"echo_payload_bytes", p.echo_payload_bytes},
              {"keys", p.keys},
              {"key_distribution", name_of(p.key_distribution, kKeyDistributions)},
              {"zipf_s", number(p.zipf_s)},
              {"get_ratio", number(p.get_ratio)},
              {"value_bytes", p.value_bytes}};
}

ProtocolSpec read_protocol(const Reader& in) {
  in.reject_unknown({"kind", "urls", "host_header", "scheme", "grpc_calls", "echo_payload_bytes",
                     "keys", "key_distribution", "zipf_s", "get_ratio", "value_bytes"});
  ProtocolSpec p;
  p.kind = read_enum(in, "kind", kProtocolKinds);
  p.urls.clear();
  const json& urls = in.array("urls");
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const Reader u(urls[i], at(in.path("urls"), i));
    u.reject_unknown({"path", "weight"});
    p.urls.push_back({u.string("path"), u.positive("weight")});
  }
  p.host_header = in.string("host_header");
  p.scheme = in.string("scheme");
  const json& calls = in.array("grpc_calls");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Reader c(calls[i], at(in.path("grpc_calls"), i));
    c.reject_unknown({"method", "message", "weight"});
    p.grpc_calls.push_back({c.string("method"),
                            base64_decode(c.string("message"), c.path("message")),
                            c.positive("weight")});
  }
  p.echo_payload_bytes = in.count("echo_payload_bytes", 0, kMaxPayloadBytes);
  p.keys = in.count("keys", 1);
  p.key_distribution = read_enum(in, "key_distribution", kKeyDistributions);
  p.zipf_s = in.positive("zipf_s");
  p.get_ratio = in.number_within("get_ratio", 0, 1);
  p.value_bytes = in.count("value_bytes", 0, kMaxPayloadBytes);
  return p;
}

// ------------------------------------------------------------ results

json histogram(const analysis::LatencyHistogram& h) {
  const auto parts = h.parts();
  json buckets = json::array();
  for (const auto& [index, count] : parts.buckets) buckets.push_back(json::array({index, count}));
  json j{{"precision_bits", parts.precision_bits},
         {"highest_ns", parts.highest_trackable_ns},
         {"buckets", std::move(buckets)},
         {"min_ns", parts.min},
         {"max_ns", parts.max},
         {"out_of_range", parts.out_of_range}};
  // The sum of recorded values (non-negative integers): exact as an integer
  // below 2^64, where a long double holds it exactly too.
  if (parts.sum >= 0 && parts.sum < 18446744073709551616.0L && parts.sum == std::floor(parts.sum)) {
    j["sum_ns"] = static_cast<uint64_t>(parts.sum);
  } else {
    j["sum_ns"] = static_cast<double>(parts.sum);
  }
  return j;
}

analysis::LatencyHistogram read_histogram(const json& value, const std::string& path) {
  const Reader in(value, path);
  in.reject_unknown(
      {"precision_bits", "highest_ns", "buckets", "min_ns", "max_ns", "sum_ns", "out_of_range"});
  analysis::LatencyHistogram::Parts parts;
  parts.precision_bits = static_cast<int>(in.count("precision_bits", 1, 24));
  parts.highest_trackable_ns = in.integer("highest_ns");
  if (parts.highest_trackable_ns < 1) bad(in.path("highest_ns"), "must be >= 1");
  const json& buckets = in.array("buckets");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const std::string p = at(in.path("buckets"), i);
    if (!buckets[i].is_array() || buckets[i].size() != 2) bad(p, "must be [index, count]");
    parts.buckets.emplace_back(read_unsigned(buckets[i][0], p + "[0]", 0, SIZE_MAX),
                               read_unsigned(buckets[i][1], p + "[1]", 1));
  }
  parts.min = in.non_negative("min_ns");
  parts.max = in.non_negative("max_ns");
  const json& sum = in.require("sum_ns");
  if (is_unsigned(sum)) {
    parts.sum = static_cast<long double>(sum.get<uint64_t>());
  } else {
    const double s = read_number(sum, in.path("sum_ns"));
    if (!(s >= 0) || !std::isfinite(s)) bad(in.path("sum_ns"), "must be a number >= 0");
    parts.sum = s;
  }
  parts.out_of_range = in.count("out_of_range");
  try {
    return analysis::LatencyHistogram::from_parts(parts);
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    if (why.rfind("histogram: ", 0) == 0) why.erase(0, 11);
    bad(path, why);
  }
}

json errors_json(const ErrorCounts& e) {
  json grpc = json::object();
  for (const auto& [code, n] : e.grpc_status) grpc[std::to_string(code)] = n;
  return json{{"connect", e.connect},          {"read", e.read},         {"write", e.write},
              {"timeout", e.timeout},          {"protocol", e.protocol}, {"server", e.server},
              {"grpc_status", std::move(grpc)}};
}

ErrorCounts read_errors(const Reader& in) {
  in.reject_unknown({"connect", "read", "write", "timeout", "protocol", "server", "grpc_status"});
  ErrorCounts e;
  e.connect = in.count("connect");
  e.read = in.count("read");
  e.write = in.count("write");
  e.timeout = in.count("timeout");
  e.protocol = in.count("protocol");
  e.server = in.count("server");
  const json& grpc = in.require("grpc_status");
  if (!grpc.is_object()) bad(in.path("grpc_status"), "must be an object");
  for (auto it = grpc.begin(); it != grpc.end(); ++it) {
    const std::string p = join(in.path("grpc_status"), it.key());
    int code = -1;
    try {
      std::size_t used = 0;
      code = std::stoi(it.key(), &used);
      if (used != it.key().size()) code = -1;
    } catch (const std::exception&) {
      code = -1;
    }
    if (code < 0 || code > 16 || std::to_string(code) != it.key()) {
      bad(p, "must be a gRPC status code 0 .. 16");
    }
    e.grpc_status[code] = read_unsigned(it.value(), p);
  }
  return e;
}

json timer_json(const SendTimer& t) {
  return json{{"self_calibrated", t.self_calibrated},
              {"lead_ns", t.lead_ns},
              {"wakeup_p50_ns", t.wakeup_p50_ns},
              {"wakeup_p99_ns", t.wakeup_p99_ns},
              {"wakeups", t.wakeups},
              {"slice_ns", t.slice_ns},
              {"slice_granted", t.slice_granted},
              {"slice_note", t.slice_note},
              {"polled_ns", t.polled_ns},
              {"thread_run_ns", t.thread_run_ns}};
}

SendTimer read_timer(const Reader& in) {
  in.reject_unknown({"self_calibrated", "lead_ns", "wakeup_p50_ns", "wakeup_p99_ns", "wakeups",
                     "slice_ns", "slice_granted", "slice_note", "polled_ns", "thread_run_ns"});
  SendTimer t;
  t.self_calibrated = in.boolean("self_calibrated");
  t.lead_ns = in.non_negative("lead_ns");
  t.wakeup_p50_ns = in.non_negative("wakeup_p50_ns");
  t.wakeup_p99_ns = in.non_negative("wakeup_p99_ns");
  t.wakeups = in.count("wakeups");
  t.slice_ns = in.non_negative("slice_ns");
  t.slice_granted = in.boolean("slice_granted");
  t.slice_note = in.string("slice_note");
  t.polled_ns = in.non_negative("polled_ns");
  t.thread_run_ns = in.non_negative("thread_run_ns");
  return t;
}

json setup_json(const ConnectionSetup& s) {
  return json{{"tls_handshakes", s.tls_handshakes},
              {"tls_offered", s.tls_offered},
              {"tls_resumed", s.tls_resumed},
              {"tls_handshake", histogram(s.tls_handshake)},
              {"start_shift_ns", s.start_shift_ns},
              {"first_error", s.first_error},
              {"busy_poll_refused", s.busy_poll_refused},
              {"server_closes", s.server_closes},
              {"resent", s.resent}};
}

ConnectionSetup read_setup(const Reader& in) {
  in.reject_unknown({"tls_handshakes", "tls_offered", "tls_resumed", "tls_handshake",
                     "start_shift_ns", "first_error", "busy_poll_refused", "server_closes",
                     "resent"});
  ConnectionSetup s;
  s.tls_handshakes = in.count("tls_handshakes");
  s.tls_offered = in.count("tls_offered");
  s.tls_resumed = in.count("tls_resumed");
  s.tls_handshake = read_histogram(in.require("tls_handshake"), in.path("tls_handshake"));
  s.start_shift_ns = in.non_negative("start_shift_ns");
  s.first_error = in.string("first_error");
  s.busy_poll_refused = in.count("busy_poll_refused");
  s.server_closes = in.count("server_closes");
  s.resent = in.count("resent");
  return s;
}

json check_json(const CalibrationCheck& c) {
  const auto& ad = c.ad;
  const auto& cl = c.closed_loop;
  return json{{"target_rps", number(c.target_rps)},
              {"offered_rps", number(c.offered_rps)},
              {"throughput_rps", number(c.throughput_rps)},
              {"rate_ok", c.rate_ok},
              {"ad",
               {{"applied", ad.applied},
                {"passed", ad.passed},
                {"statistic", number(ad.statistic)},
                {"critical", number(ad.critical)},
                {"gaps", ad.gaps},
                {"threshold_ns", number(ad.threshold_ns)},
                {"note", ad.note}}},
              {"sent", c.sent},
              {"late", c.late},
              {"late_fraction", number(c.late_fraction)},
              {"late_ok", c.late_ok},
              {"slot_late", c.slot_late},
              {"slot_late_fraction", number(c.slot_late_fraction)},
              {"closed_loop",
               {{"slots", cl.slots},
                {"mean_in_flight_ns", number(cl.mean_in_flight_ns)},
                {"slots_needed", number(cl.slots_needed)},
                {"capacity_rps", number(cl.capacity_rps)},
                {"closed_loop", cl.closed_loop}}},
              {"reasons", c.reasons}};
}

CalibrationCheck read_check(const Reader& in) {
  in.reject_unknown({"target_rps", "offered_rps", "throughput_rps", "rate_ok", "ad", "sent", "late",
                     "late_fraction", "late_ok", "slot_late", "slot_late_fraction", "closed_loop",
                     "reasons"});
  CalibrationCheck c;
  c.target_rps = in.number("target_rps");
  c.offered_rps = in.number("offered_rps");
  c.throughput_rps = in.number("throughput_rps");
  c.rate_ok = in.boolean("rate_ok");
  const Reader ad = in.object("ad");
  ad.reject_unknown({"applied", "passed", "statistic", "critical", "gaps", "threshold_ns", "note"});
  c.ad.applied = ad.boolean("applied");
  c.ad.passed = ad.boolean("passed");
  c.ad.statistic = ad.number("statistic");
  c.ad.critical = ad.number("critical");
  c.ad.gaps = static_cast<std::size_t>(ad.count("gaps", 0, SIZE_MAX));
  c.ad.threshold_ns = ad.number("threshold_ns");
  c.ad.note = ad.string("note");
  c.sent = in.count("sent");
  c.late = in.count("late");
  c.late_fraction = in.number("late_fraction");
  c.late_ok = in.boolean("late_ok");
  c.slot_late = in.count("slot_late");
  c.slot_late_fraction = in.number("slot_late_fraction");
  const Reader cl = in.object("closed_loop");
  cl.reject_unknown({"slots", "mean_in_flight_ns", "slots_needed", "capacity_rps", "closed_loop"});
  c.closed_loop.slots = static_cast<int>(cl.count("slots", 0, INT32_MAX));
  c.closed_loop.mean_in_flight_ns = cl.number("mean_in_flight_ns");
  c.closed_loop.slots_needed = cl.number("slots_needed");
  c.closed_loop.capacity_rps = cl.number("capacity_rps");
  c.closed_loop.closed_loop = cl.boolean("closed_loop");
  c.reasons = in.strings("reasons");
  return c;
}

// The sample columns, in one place so both directions agree.
constexpr const char* kColumns[] = {
    "intended_ns", "latency_ns",      "lateness_ns", "timer_lateness_ns",
    "type",        "service_time_ns", "source",      "send_source"};

TimestampSource read_source(const json& v, const std::string& path) {
  return static_cast<TimestampSource>(
      read_unsigned(v, path, 0, static_cast<uint64_t>(TimestampSource::kUser)));
}

}  // namespace

// ------------------------------------------------------------ public

json engine_config_to_json(const EngineConfig& c) {
  return json{{"host", c.host},
              {"port", c.port},
              {"tls",
               {{"enabled", c.tls.enabled},
                {"server_name", c.tls.server_name},
                {"ca_file", c.tls.ca_file},
                {"verify", c.tls.verify},
                {"resume_sessions", c.tls.resume_sessions}}},
              {"threads", c.threads},
              {"connections", c.connections},
              {"max_outstanding", c.max_outstanding},
              {"schedule", schedule_json(c.schedule)},
              {"protocol", protocol_json(c.protocol)},
              {"max_requests", c.max_requests},
              {"duration_ns", c.duration_ns},
              {"request_timeout_ns", c.request_timeout_ns},
              {"late_threshold_ns", c.late_threshold_ns},
              {"record_samples", c.record_samples},
              {"seed", c.seed}};
}

EngineConfig engine_config_from_json(const json& value) {
  const Reader in(value, "engine");
  in.reject_unknown({"host", "port", "tls", "threads", "connections", "max_outstanding", "schedule",
                     "protocol", "max_requests", "duration_ns", "request_timeout_ns",
                     "late_threshold_ns", "record_samples", "seed"});
  EngineConfig c;
  c.host = in.string("host");
  if (c.host.empty()) bad(in.path("host"), "must not be empty");
  c.port = static_cast<uint16_t>(in.count("port", 1, 65535));
  const Reader tls = in.object("tls");
  tls.reject_unknown({"enabled", "server_name", "ca_file", "verify", "resume_sessions"});
  c.tls.enabled = tls.boolean("enabled");
  c.tls.server_name = tls.string("server_name");
  c.tls.ca_file = tls.string("ca_file");
  c.tls.verify = tls.boolean("verify");
  c.tls.resume_sessions = tls.boolean("resume_sessions");
  c.threads = static_cast<int>(in.count("threads", 1, kMaxThreads));
  c.connections = static_cast<int>(in.count("connections", 1, kMaxConnections));
  if (c.connections < c.threads) bad(in.path("connections"), "must be >= threads");
  c.max_outstanding = static_cast<int>(in.count("max_outstanding", 1, kMaxOutstanding));
  c.schedule = read_schedule(in.object("schedule"));
  c.protocol = read_protocol(in.object("protocol"));
  c.max_requests = in.count("max_requests");
  c.duration_ns = in.non_negative("duration_ns");
  c.request_timeout_ns = in.integer("request_timeout_ns");
  if (c.request_timeout_ns <= 0) bad(in.path("request_timeout_ns"), "must be > 0");
  c.late_threshold_ns = in.non_negative("late_threshold_ns");
  c.record_samples = in.boolean("record_samples");
  c.seed = in.count("seed");
  return c;
}

json histogram_to_json(const analysis::LatencyHistogram& h) {
  return histogram(h);
}

analysis::LatencyHistogram histogram_from_json(const json& value) {
  return read_histogram(value, "histogram");
}

json round_summary_to_json(const EngineResult& r, const CalibrationCheck& check) {
  json by_type = json::array();
  for (const auto& t : r.by_type) {
    by_type.push_back({{"completed", t.completed}, {"server_errors", t.server_errors}});
  }
  return json{{"scheduled", r.scheduled},
              {"sent", r.sent},
              {"completed", r.completed},
              {"late", r.late},
              {"slot_late", r.slot_late},
              {"reconnects", r.reconnects},
              {"timestamp_fallbacks", r.timestamp_fallbacks},
              {"first_intended_ns", r.first_intended_ns},
              {"last_intended_ns", r.last_intended_ns},
              {"type_names", r.type_names},
              {"by_type", std::move(by_type)},
              {"thread_cpus", r.thread_cpus},
              {"errors", errors_json(r.errors)},
              {"latency", histogram(r.latency)},
              {"lateness", histogram(r.lateness)},
              {"timer_lateness", histogram(r.timer_lateness)},
              {"slot_wait", histogram(r.slot_wait)},
              {"timer", timer_json(r.timer)},
              {"setup", setup_json(r.setup)},
              {"check", check_json(check)}};
}

RoundSummary round_summary_from_json(const json& value) {
  const Reader in(value, "");
  in.reject_unknown({"scheduled",
                     "sent",
                     "completed",
                     "late",
                     "slot_late",
                     "reconnects",
                     "timestamp_fallbacks",
                     "first_intended_ns",
                     "last_intended_ns",
                     "type_names",
                     "by_type",
                     "thread_cpus",
                     "errors",
                     "latency",
                     "lateness",
                     "timer_lateness",
                     "slot_wait",
                     "timer",
                     "setup",
                     "check"});
  RoundSummary out;
  EngineResult& r = out.result;
  r.scheduled = in.count("scheduled");
  r.sent = in.count("sent");
  r.completed = in.count("completed");
  r.late = in.count("late");
  r.slot_late = in.count("slot_late");
  r.reconnects = in.count("reconnects");
  r.timestamp_fallbacks = in.count("timestamp_fallbacks");
  r.first_intended_ns = in.integer("first_intended_ns");
  r.last_intended_ns = in.integer("last_intended_ns");
  r.type_names = in.strings("type_names");
  const json& by_type = in.array("by_type");
  for (std::size_t i = 0; i < by_type.size(); ++i) {
    const Reader t(by_type[i], at(in.path("by_type"), i));
    t.reject_unknown({"completed", "server_errors"});
    r.by_type.push_back({t.count("completed"), t.count("server_errors")});
  }
  const json& cpus = in.array("thread_cpus");
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    const int64_t cpu = read_integer(cpus[i], at(in.path("thread_cpus"), i));
    if (cpu < -1 || cpu > INT32_MAX) bad(at(in.path("thread_cpus"), i), "must be a CPU or -1");
    r.thread_cpus.push_back(static_cast<int>(cpu));
  }
  r.errors = read_errors(in.object("errors"));
  r.latency = read_histogram(in.require("latency"), in.path("latency"));
  r.lateness = read_histogram(in.require("lateness"), in.path("lateness"));
  r.timer_lateness = read_histogram(in.require("timer_lateness"), in.path("timer_lateness"));
  r.slot_wait = read_histogram(in.require("slot_wait"), in.path("slot_wait"));
  r.timer = read_timer(in.object("timer"));
  r.setup = read_setup(in.object("setup"));
  out.check = read_check(in.object("check"));
  return out;
}

json samples_to_json(std::span<const Sample> samples) {
  std::vector<int64_t> intended, latency, lateness, timer_lateness, service;
  std::vector<uint32_t> type;
  std::vector<uint8_t> source, send_source;
  for (auto* v : {&intended, &latency, &lateness, &timer_lateness, &service}) {
    v->reserve(samples.size());
  }
  for (const auto& s : samples) {
    intended.push_back(s.intended_ns);
    latency.push_back(s.latency_ns);
    lateness.push_back(s.lateness_ns);
    timer_lateness.push_back(s.timer_lateness_ns);
    type.push_back(s.type);
    service.push_back(s.service_time_ns);
    source.push_back(static_cast<uint8_t>(s.source));
    send_source.push_back(static_cast<uint8_t>(s.send_source));
  }
  return json{{kColumns[0], std::move(intended)}, {kColumns[1], std::move(latency)},
              {kColumns[2], std::move(lateness)}, {kColumns[3], std::move(timer_lateness)},
              {kColumns[4], std::move(type)},     {kColumns[5], std::move(service)},
              {kColumns[6], std::move(source)},   {kColumns[7], std::move(send_source)}};
}

std::vector<Sample> samples_from_json(const json& value) {
  const Reader in(value, "");
  in.reject_unknown({kColumns[0], kColumns[1], kColumns[2], kColumns[3], kColumns[4], kColumns[5],
                     kColumns[6], kColumns[7]});
  const json* columns[std::size(kColumns)];
  for (std::size_t c = 0; c < std::size(kColumns); ++c) {
    columns[c] = &in.array(kColumns[c]);
    if (columns[c]->size() != columns[0]->size()) {
      bad(in.path(kColumns[c]), std::to_string(columns[c]->size()) + " values, " +
                                    std::to_string(columns[0]->size()) + " expected (as " +
                                    kColumns[0] + ")");
    }
  }
  std::vector<Sample> out(columns[0]->size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto path = [&](std::size_t c) { return at(in.path(kColumns[c]), i); };
    Sample& s = out[i];
    s.intended_ns = read_integer((*columns[0])[i], path(0));
    s.latency_ns = read_integer((*columns[1])[i], path(1));
    s.lateness_ns = read_integer((*columns[2])[i], path(2));
    s.timer_lateness_ns = read_integer((*columns[3])[i], path(3));
    s.type = static_cast<uint32_t>(read_unsigned((*columns[4])[i], path(4), 0, UINT32_MAX));
    s.service_time_ns = read_integer((*columns[5])[i], path(5));
    s.source = read_source((*columns[6])[i], path(6));
    s.send_source = read_source((*columns[7])[i], path(7));
  }
  return out;
}

}  // namespace nabla::loadgen
