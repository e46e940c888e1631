// HTTP/1.1 message framing; see http_message.hh.
#include "nabla/loadgen/http_message.hh"

#include <charconv>

namespace nabla::loadgen {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kEndOfHead = "\r\n\r\n";

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct HeaderFacts {
  int error_status = 0;
  bool has_length = false;
  size_t content_length = 0;
  bool conn_close = false;
  bool conn_keep_alive = false;
};

// Walks the header lines of `lines` (each terminated by CRLF, head terminator
// excluded) and collects what framing needs.
HeaderFacts scan_headers(std::string_view lines) {
  HeaderFacts facts;
  int count = 0;
  while (!lines.empty()) {
    const size_t eol = lines.find(kCrlf);
    const std::string_view line = lines.substr(0, eol);
    lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 2);
    if (++count > kMaxHeaderLines) {
      facts.error_status = 431;
      return facts;
    }
    const size_t colon = line.find(':');
    // No obsolete line folding, no whitespace before the colon (RFC 9112 §5.1).
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      facts.error_status = 400;
      return facts;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    for (char c : value) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        facts.error_status = 400;
        return facts;
      }
    }
    if (iequals(name, "content-length")) {
      size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        facts.error_status = ec == std::errc::result_out_of_range ? 413 : 400;
        return facts;
      }
      if (facts.has_length && n != facts.content_length) {
        facts.error_status = 400;
        return facts;
      }
      facts.has_length = true;
      facts.content_length = n;
    } else if (iequals(name, "transfer-encoding")) {
      facts.error_status = 501;
      return facts;
    } else if (iequals(name, "connection")) {
      facts.conn_close = facts.conn_close || has_token(value, "close");
      facts.conn_keep_alive = facts.conn_keep_alive || has_token(value, "keep-alive");
    }
  }
  return facts;
}

// Parses "HTTP/1.x" into x; -1 when not HTTP/1.0 or HTTP/1.1, -2 when not HTTP at all.
int parse_version(std::string_view v) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || v[6] != '.') return -2;
  if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) return -1;
  return v[7] - '0';
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

RequestParse parse_http_request(std::string_view buffer) {
  RequestParse out;
  size_t skipped = 0;
  while (buffer.substr(skipped, 2) == kCrlf) skipped += 2;
  const std::string_view msg = buffer.substr(skipped);
  const size_t end = msg.find(kEndOfHead);
  if (end == std::string_view::npos) {
    if (msg.size() > kMaxHeadBytes) {
      out.status = ParseStatus::kBad;
      out.error_status = 431;
    }
    return out;
  }
  if (end + 4 > kMaxHeadBytes) {
    out.status = ParseStatus::kBad;
    out.error_status = 431;
    return out;
  }
  const size_t line_end = msg.find(kCrlf);
  const std::string_view line = msg.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  auto fail = [&out](int status) {
    out.status = ParseStatus::kBad;
    out.error_status = status;
    return out;
  };
  if (sp2 == std::string_view::npos) return fail(400);
  HttpRequestHead& head = out.head;
  head.method = line.substr(0, sp1);
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(head.method) || head.target.empty() || head.target.front() != '/') return fail(400);
  for (char c : head.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return fail(400);
  }
  const int minor = parse_version(version);
  if (minor == -2) return fail(400);
  if (minor == -1) return fail(505);
  head.minor_version = minor;
  head.path = head.target.substr(0, head.target.find('?'));
  const std::string_view header_lines =
      line_end == end ? std::string_view() : msg.substr(line_end + 2, end - line_end);
  const HeaderFacts facts = scan_headers(header_lines);
  if (facts.error_status != 0) return fail(facts.error_status);
  if (facts.content_length > kMaxBodyBytes) return fail(413);
  head.keep_alive = minor == 1 ? !facts.conn_close : facts.conn_keep_alive && !facts.conn_close;
  head.body_bytes = facts.content_length;
  const size_t total = skipped + end + 4 + head.body_bytes;
  if (buffer.size() < total) return out;  // body still arriving
  head.consumed = total;
  out.status = ParseStatus::kComplete;
  return out;
}

ResponseParse parse_http_response(std::string_view buffer) {
  ResponseParse out;
  const size_t end = buffer.find(kEndOfHead);
  if (end == std::string_view::npos) {
    if (buffer.size() > kMaxHeadBytes) out.status = ParseStatus::kBad;
    return out;
  }
  const size_t line_end = buffer.find(kCrlf);
  const std::string_view line = buffer.substr(0, line_end);
  // "HTTP/1.1 200 OK"
  if (line.size() < 12 || parse_version(line.substr(0, 8)) < 0 || line[8] != ' ') {
    out.status = ParseStatus::kBad;
    return out;
  }
  int code = 0;
  const auto [ptr, ec] = std::from_chars(line.data() + 9, line.data() + 12, code);
  if (ec != std::errc() || ptr != line.data() + 12 || code < 100 || code > 599) {
    out.status = ParseStatus::kBad;
    return out;
  }
  const std::string_view header_lines =
      line_end == end ? std::string_view() : buffer.substr(line_end + 2, end - line_end);
  const HeaderFacts facts = scan_headers(header_lines);
  if (facts.error_status != 0 || !facts.has_length || facts.content_length > (64u << 20)) {
    out.status = ParseStatus::kBad;
    return out;
  }
  out.head.status = code;
  out.head.keep_alive = line[7] == '1' ? !facts.conn_close : facts.conn_keep_alive;
  out.head.body_bytes = facts.content_length;
  const size_t total = end + 4 + facts.content_length;
  if (buffer.size() < total) return out;
  out.head.consumed = total;
  out.status = ParseStatus::kComplete;
  return out;
}

}  // namespace nabla::loadgen
