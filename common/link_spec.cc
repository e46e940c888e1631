#include "nabla/common/link_spec.hh"

#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

namespace nabla::common {
namespace {

constexpr std::string_view kGrammar =
    "expected 'PROTO SRC -> DST', e.g. 'tcp 10.0.0.1:* -> "
    "10.0.0.2:5432'";

struct Token {
  std::string_view text;
  std::size_t offset;  // 0-based
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Splits on whitespace and around "->" so "a->b" and "a -> b" are the same.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    if (text.substr(i, 2) == "->") {
      tokens.push_back({text.substr(i, 2), i});
      i += 2;
      continue;
    }
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i]) && text.substr(i, 2) != "->") ++i;
    tokens.push_back({text.substr(start, i - start), start});
  }
  return tokens;
}

class Parser {
 public:
  explicit Parser(std::string_view input) : input_(input) {}

  [[noreturn]] void fail(const std::string& reason, std::size_t offset, std::size_t length) const {
    throw LinkSpecError(reason, input_, offset + 1, std::max<std::size_t>(length, 1));
  }

  Protocol protocol(const Token& t) const {
    std::string lower(t.text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "tcp") return Protocol::kTcp;
    if (lower == "udp") return Protocol::kUdp;
    if (lower == "any") return Protocol::kAny;
    fail("bad protocol '" + std::string(t.text) + "' (expected tcp, udp or any)", t.offset,
         t.text.size());
  }

  uint16_t port_number(std::string_view text, std::size_t offset) const {
    unsigned value = 0;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || err != std::errc() || end != text.data() + text.size() || value < 1 ||
        value > 65535) {
      fail("bad port '" + std::string(text) + "' (expected 1-65535, N-M or *)", offset,
           text.size());
    }
    return static_cast<uint16_t>(value);
  }

  PortRange ports(std::string_view text, std::size_t offset) const {
    if (text == "*") return PortRange::any();
    const std::size_t dash = text.find('-');
    if (dash == std::string_view::npos) return PortRange::single(port_number(text, offset));
    const uint16_t low = port_number(text.substr(0, dash), offset);
    const uint16_t high = port_number(text.substr(dash + 1), offset + dash + 1);
    if (low > high) {
      fail("bad port range '" + std::string(text) + "' (low end above high end)", offset,
           text.size());
    }
    return {low, high};
  }

  IpAddress address(std::string_view text, std::size_t offset) const {
    const auto parsed = IpAddress::parse(text);
    if (!parsed) fail("bad address '" + std::string(text) + "'", offset, text.size());
    return *parsed;
  }

  EndpointPattern endpoint(const Token& t) const {
    const std::string_view s = t.text;
    if (!s.empty() && s.front() == '[') {
      const std::size_t close = s.find(']');
      if (close == std::string_view::npos)
        fail("missing ']' in '" + std::string(s) + "'", t.offset, s.size());
      EndpointPattern e{address(s.substr(1, close - 1), t.offset + 1), PortRange::any()};
      if (!e.address.is_v6()) {
        fail("brackets are for IPv6 addresses only", t.offset, close + 1);
      }
      const std::string_view rest = s.substr(close + 1);
      if (rest.empty()) return e;
      if (rest.front() != ':') {
        fail("expected ':PORT' after ']'", t.offset + close + 1, rest.size());
      }
      e.ports = ports(rest.substr(1), t.offset + close + 2);
      return e;
    }
    const std::size_t colons = static_cast<std::size_t>(std::count(s.begin(), s.end(), ':'));
    if (colons == 0 || colons > 1) {
      // A plain IPv4 address, or a bare IPv6 address (any port).
      return {address(s, t.offset), PortRange::any()};
    }
    const std::size_t colon = s.find(':');
    return {address(s.substr(0, colon), t.offset),
            ports(s.substr(colon + 1), t.offset + colon + 1)};
  }

  LinkSpec parse() const {
    const std::vector<Token> tokens = tokenize(input_);
    if (tokens.empty()) fail("empty link spec; " + std::string(kGrammar), 0, 1);
    LinkSpec spec;
    spec.protocol = protocol(tokens[0]);
    const std::size_t end = input_.size();
    if (tokens.size() < 2 || tokens[1].text == "->") {
      fail("missing source endpoint; " + std::string(kGrammar),
           tokens.size() < 2 ? end : tokens[1].offset, 1);
    }
    spec.src = endpoint(tokens[1]);
    if (tokens.size() < 3 || tokens[2].text != "->") {
      const std::size_t at = tokens.size() < 3 ? end : tokens[2].offset;
      fail("expected '->' after the source endpoint", at,
           tokens.size() < 3 ? 1 : tokens[2].text.size());
    }
    if (tokens.size() < 4) fail("missing destination endpoint; " + std::string(kGrammar), end, 1);
    spec.dst = endpoint(tokens[3]);
    if (tokens.size() > 4) {
      fail("unexpected '" + std::string(tokens[4].text) + "' after the destination endpoint",
           tokens[4].offset, tokens[4].text.size());
    }
    if (spec.src.address.family() != spec.dst.address.family()) {
      fail("mixed address families: source is " +
               std::string(spec.src.address.is_v4() ? "IPv4" : "IPv6") + ", destination is " +
               std::string(spec.dst.address.is_v4() ? "IPv4" : "IPv6"),
           tokens[3].offset, tokens[3].text.size());
    }
    return spec;
  }

 private:
  std::string_view input_;
};

std::string format_error(const std::string& reason, std::string_view input, std::size_t column,
                         std::size_t length) {
  std::string msg = reason + " at column " + std::to_string(column) + "\n  ";
  // Show control characters as spaces so the caret stays aligned.
  for (const char c : input) msg.push_back(is_space(c) ? ' ' : c);
  msg += "\n  " + std::string(column - 1, ' ') + std::string(length, '^');
  return msg;
}

std::string endpoint_text(const EndpointPattern& e) {
  const std::string addr =
      e.address.is_v6() ? "[" + e.address.to_string() + "]" : e.address.to_string();
  return addr + ":" + to_string(e.ports);
}

}  // namespace

LinkSpecError::LinkSpecError(std::string reason, std::string_view input, std::size_t column,
                             std::size_t length)
    : std::invalid_argument(format_error(reason, input, column, length)),
      reason_(reason + " at column " + std::to_string(column)),
      column_(column) {}

std::string_view to_string(Protocol protocol) noexcept {
  switch (protocol) {
    case Protocol::kTcp:
      return "tcp";
    case Protocol::kUdp:
      return "udp";
    case Protocol::kAny:
      return "any";
  }
  return "any";
}

std::optional<Protocol> protocol_from_ip_proto(int ip_proto) noexcept {
  if (ip_proto == IPPROTO_TCP) return Protocol::kTcp;
  if (ip_proto == IPPROTO_UDP) return Protocol::kUdp;
  return std::nullopt;
}

std::string to_string(const PortRange& ports) {
  if (ports.is_any()) return "*";
  if (ports.low == ports.high) return std::to_string(ports.low);
  return std::to_string(ports.low) + "-" + std::to_string(ports.high);
}

LinkSpec parse_link_spec(std::string_view text) {
  return Parser(text).parse();
}

std::string to_string(const LinkSpec& spec) {
  return std::string(to_string(spec.protocol)) + " " + endpoint_text(spec.src) + " -> " +
         endpoint_text(spec.dst);
}

bool matches(const LinkSpec& spec, Protocol proto, const IpAddress& src, uint16_t src_port,
             const IpAddress& dst, uint16_t dst_port) noexcept {
  if (spec.protocol != Protocol::kAny && spec.protocol != proto) return false;
  return spec.src.address == src && spec.dst.address == dst && spec.src.ports.contains(src_port) &&
         spec.dst.ports.contains(dst_port);
}

namespace {

bool ranges_intersect(const PortRange& a, const PortRange& b) noexcept {
  return a.low <= b.high && b.low <= a.high;
}

}  // namespace

bool links_overlap(const LinkSpec& a, const LinkSpec& b) noexcept {
  const bool protocols =
      a.protocol == b.protocol || a.protocol == Protocol::kAny || b.protocol == Protocol::kAny;
  return protocols && a.src.address == b.src.address && a.dst.address == b.dst.address &&
         ranges_intersect(a.src.ports, b.src.ports) && ranges_intersect(a.dst.ports, b.dst.ports);
}

}  // namespace nabla::common
