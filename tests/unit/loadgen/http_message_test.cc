#include "nabla/loadgen/http_message.hh"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace nabla::loadgen {
namespace {

TEST(ParseHttpRequest, CompleteGet) {
  const std::string buf = "GET /view?id=3 HTTP/1.1\r\nHost: a\r\n\r\nrest";
  const RequestParse p = parse_http_request(buf);
  ASSERT_EQ(p.status, ParseStatus::kComplete);
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/view?id=3");
  EXPECT_EQ(p.head.path, "/view");
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(p.head.body_bytes, 0u);
  EXPECT_EQ(p.head.consumed, buf.size() - 4);
}

TEST(ParseHttpRequest, IncompleteUntilBodyArrives) {
  std::string buf = "POST /b HTTP/1.1\r\ncontent-length: 5\r\n\r\nhel";
  EXPECT_EQ(parse_http_request(buf).status, ParseStatus::kIncomplete);
  buf += "lo";
  const RequestParse p = parse_http_request(buf);
  ASSERT_EQ(p.status, ParseStatus::kComplete);
  EXPECT_EQ(p.head.body_bytes, 5u);
  EXPECT_EQ(p.head.consumed, buf.size());
  EXPECT_EQ(parse_http_request("GET / HTTP/1.1\r\nHost: a\r\n").status, ParseStatus::kIncomplete);
  EXPECT_EQ(parse_http_request("").status, ParseStatus::kIncomplete);
}

TEST(ParseHttpRequest, KeepAliveRules) {
  EXPECT_FALSE(parse_http_request("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(
      parse_http_request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(
      parse_http_request("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n").head.keep_alive);
}

TEST(ParseHttpRequest, LeadingEmptyLinesSkipped) {
  const std::string buf = "\r\n\r\nGET /a HTTP/1.1\r\n\r\n";
  const RequestParse p = parse_http_request(buf);
  ASSERT_EQ(p.status, ParseStatus::kComplete);
  EXPECT_EQ(p.head.consumed, buf.size());
}

struct BadCase {
  const char* input;
  int status;
};

TEST(ParseHttpRequest, RefusesMalformed) {
  const BadCase cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET /a\r\n\r\n", 400},
      {"GET /a HTTP/1.1 extra\r\n\r\n", 400},
      {"GET a HTTP/1.1\r\n\r\n", 400},
      {"G(T /a HTTP/1.1\r\n\r\n", 400},
      {"GET /a HTTP/2.0\r\n\r\n", 505},
      {"GET /a FTP/1.1\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nBad Header: x\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\n folded\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nContent-Length:\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"GET /a HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413},
      {"GET /a HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413},
      {"GET /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
  };
  for (const auto& c : cases) {
    const RequestParse p = parse_http_request(c.input);
    EXPECT_EQ(p.status, ParseStatus::kBad) << c.input;
    EXPECT_EQ(p.error_status, c.status) << c.input;
  }
  // Same Content-Length twice is allowed.
  EXPECT_EQ(parse_http_request("GET /a HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n")
                .status,
            ParseStatus::kComplete);
}

TEST(ParseHttpRequest, HeadSizeLimit) {
  const std::string open_head = "GET /a HTTP/1.1\r\nX: " + std::string(kMaxHeadBytes, 'a');
  EXPECT_EQ(parse_http_request(open_head).error_status, 431);
  const std::string closed = open_head + "\r\n\r\n";
  EXPECT_EQ(parse_http_request(closed).error_status, 431);
  std::string many = "GET /a HTTP/1.1\r\n";
  for (int i = 0; i <= kMaxHeaderLines; ++i) many += "H: v\r\n";
  EXPECT_EQ(parse_http_request(many + "\r\n").error_status, 431);
}

TEST(ParseHttpResponse, Framing) {
  const std::string buf = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1";
  const ResponseParse p = parse_http_response(buf);
  ASSERT_EQ(p.status, ParseStatus::kComplete);
  EXPECT_EQ(p.head.status, 200);
  EXPECT_EQ(p.head.body_bytes, 3u);
  EXPECT_EQ(p.head.consumed, buf.size() - 8);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_EQ(parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab").status,
            ParseStatus::kIncomplete);
  EXPECT_EQ(parse_http_response("HTTP/1.1 200 OK\r\n\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(parse_http_response("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n").status,
            ParseStatus::kBad);
  EXPECT_FALSE(
      parse_http_response("HTTP/1.1 502 Bad\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
          .head.keep_alive);
}

}  // namespace
}  // namespace nabla::loadgen

namespace nabla::loadgen {
namespace {

// Seeded random mutations of valid requests: the parser never reads past the
// buffer, never claims more than it has, and a prefix of a complete request
// is incomplete or already bad — never a different complete request.
TEST(ParseHttpRequest, RandomMutationsStayInBounds) {
  std::mt19937_64 rng(20261122);
  const std::string seeds[] = {
      "GET /view?id=1 HTTP/1.1\r\nHost: a\r\n\r\n",
      "POST /bid HTTP/1.1\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nhello world",
      "GET / HTTP/1.0\r\n\r\n",
  };
  const char alphabet[] = "GET /:\r\n HTTP1.0Content-Length\t0123456789xX\x7f\x01";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string buf = seeds[rng() % 3];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % (buf.size() + 1);
      const char c = alphabet[rng() % (sizeof alphabet - 1)];
      switch (rng() % 3) {
        case 0:
          buf.insert(pos, 1, c);
          break;
        case 1:
          if (pos < buf.size()) buf.erase(pos, 1);
          break;
        default:
          if (pos < buf.size()) buf[pos] = c;
      }
    }
    const RequestParse p = parse_http_request(buf);
    if (p.status == ParseStatus::kComplete) {
      ASSERT_LE(p.head.consumed, buf.size()) << buf;
      ASSERT_FALSE(p.head.path.empty());
      ASSERT_EQ(p.head.path.front(), '/');
      ASSERT_LE(p.head.body_bytes, kMaxBodyBytes);
      // Every strict prefix that ends before the body is complete is not complete.
      const RequestParse shorter = parse_http_request(buf.substr(0, p.head.consumed - 1));
      ASSERT_NE(shorter.status, ParseStatus::kComplete) << buf;
    } else if (p.status == ParseStatus::kBad) {
      ASSERT_TRUE(p.error_status == 400 || p.error_status == 413 || p.error_status == 431 ||
                  p.error_status == 501 || p.error_status == 505)
          << p.error_status;
    }
  }
}

}  // namespace
}  // namespace nabla::loadgen
