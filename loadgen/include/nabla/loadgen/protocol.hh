#pragma once
// Request/response codecs for the open-loop engine behind one interface.
//
// A Codec writes requests (encode) and frames responses (parse). Parsing is
// incremental over a caller-owned buffer: the engine appends received bytes
// and calls parse() until it returns kIncomplete, dropping `consumed` bytes
// after each kComplete; several responses in one read are parsed one per call,
// a partial response returns kIncomplete. parse() never throws: kBad is a
// protocol error the engine counts (and then reopens the connection, since
// the byte stream can no longer be framed).
//
// Responses are matched to requests in order (every protocol here answers in
// order on one connection, pipelined or not); echo additionally carries the
// request id so a mismatch is detected as a protocol error.
//
// Echo frame (both directions), all integers big-endian:
//   u32 length of the rest | u64 request id | u8 flags | [u64 service ns if
//   flags & kEchoHasServiceTime] | payload
// The echo server copies id and payload and may set the service-time flag.
//
// Sockperf frame (sockperf's own TCP ping-pong wire format, so `nabla load`
// and `sockperf ping-pong` can be timed against the same `sockperf server`),
// all integers big-endian:
//   u64 sequence number (our request id) | u16 flags | u32 total length
//   (header included, >= 14) | payload
// A request carries flags kSockperfClient|kSockperfPing; the server answers
// with the same sequence number, length and payload and kSockperfPong set.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/loadgen/http_message.hh"

namespace nabla::loadgen {

struct ResponseFrame {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;
  int64_t service_time_ns = -1;  // reported by the server, -1 when absent
  uint64_t request_id = 0;       // echo only
  // Well-framed error reply: HTTP >= 500, RESP '-', memcached ERROR[ <text>],
  // CLIENT_ERROR <text> or SERVER_ERROR <text>.
  bool server_error = false;
  // HTTP/1.x: the server closes the connection after this reply
  // (`Connection: close`, or HTTP/1.0 without keep-alive), so it processes
  // nothing sent after the request it answers (RFC 9112 §9.6).
  bool closes_connection = false;
};

class Codec {
 public:
  virtual ~Codec() = default;
  // Appends one request to `out`; returns its transaction type (index into
  // type_names()). Draws any randomness (URL, key, value size) from `rng`.
  virtual uint32_t encode(std::string& out, uint64_t request_id, std::mt19937_64& rng) = 0;
  virtual ResponseFrame parse(std::string_view buffer) const = 0;
  virtual std::vector<std::string> type_names() const = 0;
  // True when responses carry the request id (parse() fills request_id).
  virtual bool carries_request_id() const { return false; }
};

struct WeightedUrl {
  std::string path;
  double weight = 1.0;
};

enum class KeyDistribution { kUniform, kZipf };

// One gRPC method of a mix: its path ("/pkg.Service/Method"), the request
// message as protobuf wire bytes (sent as is, in one length-prefixed,
// uncompressed gRPC message) and its weight.
struct GrpcCall {
  std::string method;
  std::string message;
  double weight = 1.0;
};

struct ProtocolSpec {
  // kHttp2 and kGrpc are framed by the engine's HTTP/2 session
  // (libnghttp2), many streams per connection; the others by a Codec.
  enum class Kind { kHttp, kEcho, kMemcached, kRedis, kSockperf, kHttp2, kGrpc } kind = Kind::kEcho;
  // HTTP and HTTP/2: URL mix; each URL is one transaction type.
  std::vector<WeightedUrl> urls{{"/", 1.0}};
  // The Host header (HTTP/1.1) or :authority (HTTP/2, gRPC).
  std::string host_header = "localhost";
  // HTTP/2 and gRPC: the :scheme pseudo-header ("https" over TLS).
  std::string scheme = "http";
  // gRPC: the method mix; each method is one transaction type.
  std::vector<GrpcCall> grpc_calls;
  // Echo and sockperf: request payload bytes (after the frame header).
  size_t echo_payload_bytes = 16;
  // Memcached/Redis: `keys` keys "key:<i>", GET with probability get_ratio
  // (type 0) else SET (type 1) with a value of value_bytes.
  uint64_t keys = 1000;
  KeyDistribution key_distribution = KeyDistribution::kUniform;
  double zipf_s = 0.99;
  double get_ratio = 0.9;
  size_t value_bytes = 32;
};

// Throws std::invalid_argument for an empty URL mix, non-positive weights,
// zero keys, a ratio outside [0,1], or an HTTP/2 kind (no codec: the engine
// frames those with its HTTP/2 session).
std::unique_ptr<Codec> make_codec(const ProtocolSpec& spec);

// HTTP/2 and gRPC: many streams per connection, answered in any order.
bool is_http2(const ProtocolSpec& spec);
// The transaction types of a protocol, by index: URL paths, gRPC methods,
// get/set, echo or ping. Throws like make_codec for a bad spec.
std::vector<std::string> type_names(const ProtocolSpec& spec);

// The HTTP Host header's value for a host: a name or an IPv4 address as is,
// an IPv6 address in brackets (RFC 7230, 5.4): "[fd00::2]".
std::string http_host_header(std::string_view host);

// Echo helpers shared with the test echo server.
inline constexpr uint8_t kEchoHasServiceTime = 1;
inline constexpr size_t kEchoMaxFrame = 1 << 20;
void append_echo_frame(std::string& out, uint64_t id, std::string_view payload,
                       int64_t service_ns = -1);
inline constexpr size_t kSockperfHeader = 14;
inline constexpr uint16_t kSockperfClient = 1;
inline constexpr uint16_t kSockperfPong = 2;
inline constexpr uint16_t kSockperfPing = 3;  // as sockperf's client sends it
void append_sockperf_frame(std::string& out, uint64_t sequence, uint16_t flags,
                           std::string_view payload);
// Parses one echo frame: id, payload view, service time (-1 when absent).
struct EchoFrame {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;
  uint64_t id = 0;
  int64_t service_ns = -1;
  std::string_view payload;
};
EchoFrame parse_echo_frame(std::string_view buffer);

// Zipf(s) over ranks 1..n by inverse CDF on a precomputed table.
class ZipfSampler {
 public:
  ZipfSampler(uint64_t n, double s);
  uint64_t operator()(std::mt19937_64& rng) const;  // 0-based rank

 private:
  std::vector<double> cdf_;
};

}  // namespace nabla::loadgen
