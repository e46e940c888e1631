#include "nabla/loadgen/protocol.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace nabla::loadgen {
namespace {

ResponseFrame incomplete() {
  return {};
}
ResponseFrame bad() {
  ResponseFrame f;
  f.status = ParseStatus::kBad;
  return f;
}

bool parse_u64(std::string_view s, uint64_t& out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// ---- HTTP/1.1 ------------------------------------------------------------

// Chunked body starting at `pos`; returns the offset past the final CRLF, 0
// when incomplete, SIZE_MAX when malformed.
size_t chunked_end(std::string_view b, size_t pos) {
  size_t total = 0;
  for (;;) {
    size_t eol = b.find("\r\n", pos);
    if (eol == std::string_view::npos) return b.size() - pos > 64 ? SIZE_MAX : 0;
    std::string_view line = b.substr(pos, eol - pos);
    line = trim(line.substr(0, line.find(';')));  // drop chunk extensions
    uint64_t size = 0;
    if (!parse_u64(line, size, 16)) return SIZE_MAX;
    total += size;
    if (total > kMaxBodyBytes) return SIZE_MAX;
    pos = eol + 2;
    if (size == 0) {
      // Trailer section: header lines until an empty line.
      for (;;) {
        size_t e = b.find("\r\n", pos);
        if (e == std::string_view::npos) return 0;
        if (e == pos) return e + 2;
        pos = e + 2;
      }
    }
    if (b.size() < pos + size + 2) return 0;
    if (b.substr(pos + size, 2) != "\r\n") return SIZE_MAX;
    pos += size + 2;
  }
}

ResponseFrame parse_http(std::string_view b) {
  size_t head_end = b.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return b.size() > kMaxHeadBytes ? bad() : incomplete();
  std::string_view head = b.substr(0, head_end + 2);
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return bad();
  }
  uint64_t status = 0;
  if (!parse_u64(status_line.substr(9, 3), status) || status < 100) return bad();
  ResponseFrame f;
  f.server_error = status >= 500;
  const bool http10 = status_line[7] == '0';
  bool keep_alive = false;
  bool chunked = false;
  bool have_length = false;
  uint64_t length = 0;
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad();
    std::string_view name = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      uint64_t v = 0;
      if (!parse_u64(value, v) || (have_length && v != length)) return bad();
      have_length = true;
      length = v;
    } else if (iequals(name, "transfer-encoding")) {
      if (!iequals(value, "chunked")) return bad();
      chunked = true;
    } else if (iequals(name, "connection")) {
      f.closes_connection = f.closes_connection || has_token(value, "close");
      keep_alive = keep_alive || has_token(value, "keep-alive");
    } else if (iequals(name, "x-service-time-ns")) {
      uint64_t v = 0;
      if (parse_u64(value, v)) f.service_time_ns = static_cast<int64_t>(v);
    }
  }
  if (http10 && !keep_alive) f.closes_connection = true;
  const size_t body_start = head_end + 4;
  if (chunked) {
    size_t end = chunked_end(b, body_start);
    if (end == SIZE_MAX) return bad();
    if (end == 0) return incomplete();
    f.status = ParseStatus::kComplete;
    f.consumed = end;
    return f;
  }
  if (!have_length) {
    // 1xx, 204 and 304 have no body; anything else would be read-to-EOF,
    // which a pipelined load generator cannot frame.
    if (status < 200 || status == 204 || status == 304)
      length = 0;
    else
      return bad();
  }
  if (length > kMaxBodyBytes) return bad();
  if (b.size() < body_start + length) return incomplete();
  f.status = ParseStatus::kComplete;
  f.consumed = body_start + length;
  return f;
}

class HttpCodec final : public Codec {
 public:
  explicit HttpCodec(const ProtocolSpec& spec) : spec_(spec) {
    std::vector<double> w;
    for (const auto& u : spec.urls) w.push_back(u.weight);
    pick_ = std::discrete_distribution<uint32_t>(w.begin(), w.end());
  }
  uint32_t encode(std::string& out, uint64_t, std::mt19937_64& rng) override {
    uint32_t type = pick_(rng);
    out += "GET ";
    out += spec_.urls[type].path;
    out += " HTTP/1.1\r\nHost: ";
    out += spec_.host_header;
    out += "\r\n\r\n";
    return type;
  }
  ResponseFrame parse(std::string_view b) const override { return parse_http(b); }
  std::vector<std::string> type_names() const override {
    std::vector<std::string> n;
    for (const auto& u : spec_.urls) n.push_back(u.path);
    return n;
  }

 private:
  ProtocolSpec spec_;
  std::discrete_distribution<uint32_t> pick_;
};

// ---- echo ----------------------------------------------------------------

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(std::string_view b, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(b[pos + i]);
  return v;
}

class EchoCodec final : public Codec {
 public:
  explicit EchoCodec(size_t payload) : payload_(payload, 'x') {}
  uint32_t encode(std::string& out, uint64_t id, std::mt19937_64&) override {
    append_echo_frame(out, id, payload_);
    return 0;
  }
  ResponseFrame parse(std::string_view b) const override {
    EchoFrame e = parse_echo_frame(b);
    ResponseFrame f;
    f.status = e.status;
    f.consumed = e.consumed;
    f.request_id = e.id;
    f.service_time_ns = e.service_ns;
    return f;
  }
  std::vector<std::string> type_names() const override { return {"echo"}; }
  bool carries_request_id() const override { return true; }

 private:
  std::string payload_;
};

// ---- sockperf ping-pong ------------------------------------------------------

class SockperfCodec final : public Codec {
 public:
  explicit SockperfCodec(size_t payload) : payload_(payload, 'x') {}
  uint32_t encode(std::string& out, uint64_t id, std::mt19937_64&) override {
    append_sockperf_frame(out, id, kSockperfPing, payload_);
    return 0;
  }
  ResponseFrame parse(std::string_view b) const override {
    ResponseFrame f;
    if (b.size() < kSockperfHeader) return f;
    const uint64_t len = get_be(b, 10, 4);
    const auto flags = static_cast<uint16_t>(get_be(b, 8, 2));
    // A reply is a pong and never a client message; a length outside the
    // header..max range cannot be framed.
    if (len < kSockperfHeader || len > kEchoMaxFrame || !(flags & kSockperfPong) ||
        (flags & kSockperfClient)) {
      f.status = ParseStatus::kBad;
      return f;
    }
    if (b.size() < len) return f;
    f.request_id = get_be(b, 0, 8);
    f.consumed = len;
    f.status = ParseStatus::kComplete;
    return f;
  }
  std::vector<std::string> type_names() const override { return {"ping"}; }
  bool carries_request_id() const override { return true; }

 private:
  std::string payload_;
};

// ---- key-value (memcached ASCII, Redis RESP) -------------------------------

class KeyValueCodec : public Codec {
 public:
  explicit KeyValueCodec(const ProtocolSpec& spec) : spec_(spec), value_(spec.value_bytes, 'v') {
    if (spec.key_distribution == KeyDistribution::kZipf) zipf_.emplace(spec.keys, spec.zipf_s);
  }
  uint32_t encode(std::string& out, uint64_t, std::mt19937_64& rng) override {
    uint64_t k =
        zipf_ ? (*zipf_)(rng) : std::uniform_int_distribution<uint64_t>(0, spec_.keys - 1)(rng);
    bool get = std::bernoulli_distribution(spec_.get_ratio)(rng);
    write(out, "key:" + std::to_string(k), get);
    return get ? 0 : 1;
  }
  std::vector<std::string> type_names() const override { return {"get", "set"}; }

 protected:
  virtual void write(std::string& out, const std::string& key, bool get) const = 0;
  ProtocolSpec spec_;
  std::string value_;
  std::optional<ZipfSampler> zipf_;
};

class MemcachedCodec final : public KeyValueCodec {
 public:
  using KeyValueCodec::KeyValueCodec;
  ResponseFrame parse(std::string_view b) const override {
    size_t eol = b.find("\r\n");
    if (eol == std::string_view::npos) return b.size() > 1024 ? bad() : incomplete();
    std::string_view line = b.substr(0, eol);
    ResponseFrame f;
    f.status = ParseStatus::kComplete;
    f.consumed = eol + 2;
    if (line == "END" || line == "STORED" || line == "NOT_STORED" || line == "EXISTS" ||
        line == "NOT_FOUND") {
      return f;
    }
    // ERROR alone answers an unknown command; "ERROR <text>" is what
    // memcached sends a connection over its -c limit before closing it.
    if (line == "ERROR" || line.starts_with("ERROR ") || line.starts_with("CLIENT_ERROR") ||
        line.starts_with("SERVER_ERROR")) {
      f.server_error = true;
      return f;
    }
    if (!line.starts_with("VALUE ")) return bad();
    // VALUE <key> <flags> <bytes> [<cas>]
    std::vector<std::string_view> parts;
    for (size_t p = 6; p <= line.size();) {
      size_t sp = line.find(' ', p);
      if (sp == std::string_view::npos) sp = line.size();
      parts.push_back(line.substr(p, sp - p));
      p = sp + 1;
    }
    uint64_t bytes = 0;
    if (parts.size() < 3 || !parse_u64(parts[2], bytes) || bytes > kMaxBodyBytes) return bad();
    size_t data_end = eol + 2 + bytes;
    if (b.size() < data_end + 7) return incomplete();
    if (b.substr(data_end, 7) != "\r\nEND\r\n") return bad();
    f.consumed = data_end + 7;
    return f;
  }

 private:
  void write(std::string& out, const std::string& key, bool get) const override {
    if (get) {
      out += "get " + key + "\r\n";
    } else {
      out += "set " + key + " 0 0 " + std::to_string(value_.size()) + "\r\n" + value_ + "\r\n";
    }
  }
};

class RedisCodec final : public KeyValueCodec {
 public:
  using KeyValueCodec::KeyValueCodec;
  ResponseFrame parse(std::string_view b) const override {
    size_t eol = b.find("\r\n");
    if (eol == std::string_view::npos) return b.size() > 1024 ? bad() : incomplete();
    if (eol == 0) return bad();
    ResponseFrame f;
    f.status = ParseStatus::kComplete;
    f.consumed = eol + 2;
    std::string_view rest = b.substr(1, eol - 1);
    switch (b[0]) {
      case '+':
        return f;
      case '-':
        f.server_error = true;
        return f;
      case ':': {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
        if (ec != std::errc() || p != rest.data() + rest.size()) return bad();
        return f;
      }
      case '$': {
        if (rest == "-1") return f;  // nil: key absent
        uint64_t n = 0;
        if (!parse_u64(rest, n) || n > kMaxBodyBytes) return bad();
        if (b.size() < eol + 2 + n + 2) return incomplete();
        if (b.substr(eol + 2 + n, 2) != "\r\n") return bad();
        f.consumed = eol + 2 + n + 2;
        return f;
      }
      default:
        return bad();  // arrays never answer GET/SET
    }
  }

 private:
  static void bulk(std::string& out, std::string_view s) {
    out += "$" + std::to_string(s.size()) + "\r\n";
    out += s;
    out += "\r\n";
  }
  void write(std::string& out, const std::string& key, bool get) const override {
    out += get ? "*2\r\n" : "*3\r\n";
    bulk(out, get ? "GET" : "SET");
    bulk(out, key);
    if (!get) bulk(out, value_);
  }
};

}  // namespace

void append_echo_frame(std::string& out, uint64_t id, std::string_view payload,
                       int64_t service_ns) {
  const bool st = service_ns >= 0;
  put_be(out, 8 + 1 + (st ? 8 : 0) + payload.size(), 4);
  put_be(out, id, 8);
  out.push_back(static_cast<char>(st ? kEchoHasServiceTime : 0));
  if (st) put_be(out, static_cast<uint64_t>(service_ns), 8);
  out += payload;
}

void append_sockperf_frame(std::string& out, uint64_t sequence, uint16_t flags,
                           std::string_view payload) {
  put_be(out, sequence, 8);
  put_be(out, flags, 2);
  put_be(out, kSockperfHeader + payload.size(), 4);
  out += payload;
}

EchoFrame parse_echo_frame(std::string_view b) {
  EchoFrame f;
  if (b.size() < 4) return f;
  uint64_t len = get_be(b, 0, 4);
  if (len < 9 || len > kEchoMaxFrame) {
    f.status = ParseStatus::kBad;
    return f;
  }
  if (b.size() < 4 + len) return f;
  f.id = get_be(b, 4, 8);
  auto flags = static_cast<uint8_t>(b[12]);
  size_t pos = 13;
  if (flags & kEchoHasServiceTime) {
    if (len < 17) {
      f.status = ParseStatus::kBad;
      return f;
    }
    f.service_ns = static_cast<int64_t>(get_be(b, pos, 8));
    pos += 8;
  }
  f.payload = b.substr(pos, 4 + len - pos);
  f.consumed = 4 + len;
  f.status = ParseStatus::kComplete;
  return f;
}

ZipfSampler::ZipfSampler(uint64_t n, double s) {
  if (n == 0) throw std::invalid_argument("zipf: n must be >= 1");
  cdf_.resize(n);
  double sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i + 1), s);
    cdf_[i] = sum;
  }
  for (auto& c : cdf_) c /= sum;
}

uint64_t ZipfSampler::operator()(std::mt19937_64& rng) const {
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<uint64_t>(static_cast<uint64_t>(it - cdf_.begin()), cdf_.size() - 1);
}

std::string http_host_header(std::string_view host) {
  if (host.find(':') == std::string_view::npos) return std::string(host);
  return "[" + std::string(host) + "]";
}

bool is_http2(const ProtocolSpec& spec) {
  return spec.kind == ProtocolSpec::Kind::kHttp2 || spec.kind == ProtocolSpec::Kind::kGrpc;
}

namespace {

void validate_urls(const std::vector<WeightedUrl>& urls) {
  if (urls.empty()) throw std::invalid_argument("protocol: empty URL mix");
  for (const auto& u : urls) {
    if (!(u.weight > 0)) throw std::invalid_argument("protocol: URL weight must be > 0");
  }
}

}  // namespace

std::vector<std::string> type_names(const ProtocolSpec& spec) {
  std::vector<std::string> names;
  if (spec.kind == ProtocolSpec::Kind::kHttp2) {
    validate_urls(spec.urls);
    for (const auto& u : spec.urls) names.push_back(u.path);
    return names;
  }
  if (spec.kind == ProtocolSpec::Kind::kGrpc) {
    if (spec.grpc_calls.empty()) throw std::invalid_argument("protocol: no gRPC method");
    for (const auto& c : spec.grpc_calls) {
      if (c.method.empty() || c.method.front() != '/') {
        throw std::invalid_argument("protocol: a gRPC method is /package.Service/Method, got '" +
                                    c.method + "'");
      }
      if (!(c.weight > 0)) throw std::invalid_argument("protocol: gRPC method weight must be > 0");
      names.push_back(c.method);
    }
    return names;
  }
  return make_codec(spec)->type_names();
}

std::unique_ptr<Codec> make_codec(const ProtocolSpec& spec) {
  switch (spec.kind) {
    case ProtocolSpec::Kind::kHttp2:
    case ProtocolSpec::Kind::kGrpc:
      throw std::invalid_argument(
          "protocol: HTTP/2 is framed by the engine's session, not a codec");
    case ProtocolSpec::Kind::kHttp:
      validate_urls(spec.urls);
      return std::make_unique<HttpCodec>(spec);
    case ProtocolSpec::Kind::kEcho:
      return std::make_unique<EchoCodec>(spec.echo_payload_bytes);
    case ProtocolSpec::Kind::kSockperf:
      if (spec.echo_payload_bytes > kEchoMaxFrame - kSockperfHeader) {
        throw std::invalid_argument("protocol: sockperf payload too large");
      }
      return std::make_unique<SockperfCodec>(spec.echo_payload_bytes);
    case ProtocolSpec::Kind::kMemcached:
    case ProtocolSpec::Kind::kRedis:
      if (spec.keys == 0) throw std::invalid_argument("protocol: keys must be >= 1");
      if (!(spec.get_ratio >= 0 && spec.get_ratio <= 1)) {
        throw std::invalid_argument("protocol: get ratio must be in [0,1]");
      }
      if (spec.kind == ProtocolSpec::Kind::kMemcached)
        return std::make_unique<MemcachedCodec>(spec);
      return std::make_unique<RedisCodec>(spec);
  }
  throw std::invalid_argument("protocol: unknown kind");
}

}  // namespace nabla::loadgen
