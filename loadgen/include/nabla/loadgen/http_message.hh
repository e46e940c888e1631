#pragma once
// Incremental HTTP/1.1 message framing: request heads for the nabla-tier
// server, response heads for its downstream pools (tier/); the load
// generator's own HTTP codec (protocol.cc) shares kMaxHeadBytes and iequals.
// It lives here, with the client, so tier/ depends on loadgen/ (as it does
// for the echo codec) and never the reverse. Pure functions
// over a byte buffer, no allocation: callers append received bytes to a
// buffer and call parse_* until it says kComplete, then drop `consumed` bytes.
//
// Accepted: request line `METHOD SP TARGET SP HTTP/1.x CRLF`, header lines
// `name: value CRLF`, Content-Length bodies. Refused with a status code:
// malformed lines (400), conflicting or non-numeric Content-Length (400),
// a head over kMaxHeadBytes (431), a body over kMaxBodyBytes (413),
// Transfer-Encoding (501: nabla-tier never needs chunked bodies), versions
// other than 1.0/1.1 (505).
#include <cstddef>
#include <string_view>

namespace nabla::loadgen {

inline constexpr size_t kMaxHeadBytes = 16 * 1024;
inline constexpr size_t kMaxBodyBytes = 1024 * 1024;
inline constexpr int kMaxHeaderLines = 100;

enum class ParseStatus { kIncomplete, kComplete, kBad };

struct HttpRequestHead {
  std::string_view method;
  std::string_view target;  // as sent, e.g. "/view?id=3"
  std::string_view path;    // target up to '?'
  int minor_version = 1;    // HTTP/1.<minor>
  bool keep_alive = true;   // 1.1 default on, 1.0 default off, Connection header wins
  size_t body_bytes = 0;
  size_t consumed = 0;  // head + body bytes: drop these from the buffer
};

struct RequestParse {
  ParseStatus status = ParseStatus::kIncomplete;
  int error_status = 0;  // HTTP status to answer with when kBad
  HttpRequestHead head;  // valid when kComplete (views into the buffer)
};

// Parses one request at the start of `buffer`. Leading empty lines are skipped
// (RFC 9112 §2.2). kComplete only once the whole body is in the buffer.
RequestParse parse_http_request(std::string_view buffer);

struct HttpResponseHead {
  int status = 0;
  bool keep_alive = true;
  size_t body_bytes = 0;
  size_t consumed = 0;
};

struct ResponseParse {
  ParseStatus status = ParseStatus::kIncomplete;
  HttpResponseHead head;
};

// Parses one response (status line, headers, Content-Length body) at the start
// of `buffer`. A response without Content-Length is refused (kBad): nabla-tier
// always sends one, and reading to EOF would defeat connection pooling.
ResponseParse parse_http_response(std::string_view buffer);

// Case-insensitive ASCII comparison for header names and tokens.
bool iequals(std::string_view a, std::string_view b);

// True when the comma-separated header value `list` holds `token`
// (case-insensitive, whitespace around elements ignored), e.g.
// has_token("keep-alive, Close", "close").
bool has_token(std::string_view list, std::string_view token);

}  // namespace nabla::loadgen
