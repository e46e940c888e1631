#include "nabla/loadgen/protocol.hh"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nabla::loadgen {
namespace {

struct Parsed {
  std::vector<ResponseFrame> frames;
  bool bad = false;
};

// Feeds `stream` in two reads split at `cut`, parsing after each read the way
// the engine does (append, parse until incomplete, drop consumed).
Parsed feed(const Codec& codec, std::string_view stream, size_t cut) {
  Parsed out;
  std::string buffer;
  for (auto piece : {stream.substr(0, cut), stream.substr(cut)}) {
    buffer += piece;
    for (;;) {
      ResponseFrame f = codec.parse(buffer);
      if (f.status == ParseStatus::kBad) {
        out.bad = true;
        return out;
      }
      if (f.status == ParseStatus::kIncomplete) break;
      EXPECT_GT(f.consumed, 0u);
      out.frames.push_back(f);
      buffer.erase(0, f.consumed);
    }
  }
  EXPECT_TRUE(buffer.empty());
  return out;
}

// Checks that every split point yields the same frames as one whole read.
std::vector<ResponseFrame> all_splits(const Codec& codec, std::string_view stream) {
  Parsed whole = feed(codec, stream, stream.size());
  EXPECT_FALSE(whole.bad);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Parsed p = feed(codec, stream, cut);
    EXPECT_FALSE(p.bad) << "cut " << cut;
    EXPECT_EQ(p.frames.size(), whole.frames.size()) << "cut " << cut;
    for (size_t i = 0; i < std::min(p.frames.size(), whole.frames.size()); ++i) {
      EXPECT_EQ(p.frames[i].consumed, whole.frames[i].consumed);
      EXPECT_EQ(p.frames[i].service_time_ns, whole.frames[i].service_time_ns);
      EXPECT_EQ(p.frames[i].request_id, whole.frames[i].request_id);
      EXPECT_EQ(p.frames[i].closes_connection, whole.frames[i].closes_connection);
    }
  }
  return whole.frames;
}

// A memcached or redis codec over one key ("key:0") with `value_bytes`-byte
// values, gets and sets half and half.
std::unique_ptr<Codec> key_value_codec(ProtocolSpec::Kind kind, std::size_t value_bytes) {
  ProtocolSpec spec;
  spec.kind = kind;
  spec.keys = 1;
  spec.value_bytes = value_bytes;
  spec.get_ratio = 0.5;
  return make_codec(spec);
}

TEST(Protocol, HttpContentLengthChunkedAndServiceTimeAtEverySplit) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kHttp;
  auto codec = make_codec(spec);
  const std::string stream =
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Service-Time-Ns: 12345\r\n\r\nhello"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nwiki\r\n5\r\npedia\r\n"
      "0\r\nTrailer: x\r\n\r\n"
      "HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n"
      "HTTP/1.1 204 No Content\r\n\r\n";
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].service_time_ns, 12345);
  EXPECT_EQ(frames[1].service_time_ns, -1);
  EXPECT_FALSE(frames[1].server_error);
  EXPECT_TRUE(frames[2].server_error);
  size_t total = 0;
  for (auto& f : frames) total += f.consumed;
  EXPECT_EQ(total, stream.size());
}

TEST(Protocol, HttpSaysWhenTheServerClosesTheConnectionAfterAReply) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kHttp;
  auto codec = make_codec(spec);
  const std::string stream =
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"                            // 1.1 stays open
      "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"  // said so
      "HTTP/1.1 200 OK\r\nconnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n"
      "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
      "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"  // 1.0 closes unless kept alive
      "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"
      "HTTP/1.1 200 OK\r\nX-Note: close\r\nContent-Length: 0\r\n\r\n";  // not Connection
  const auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 7u);
  const bool closes[] = {false, false, true, true, true, false, false};
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].closes_connection, closes[i]) << "reply " << i;
  }
  EXPECT_TRUE(frames[3].server_error);
}

TEST(Protocol, HttpMalformedIsBadNeverThrows) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kHttp;
  auto codec = make_codec(spec);
  for (std::string s : {"HTTX/1.1 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                        "HTTP/1.1 200 OK\r\n\r\n",  // no length on a 200: unframeable
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"}) {
    EXPECT_EQ(codec->parse(s).status, ParseStatus::kBad) << s;
  }
  EXPECT_EQ(codec->parse(std::string(kMaxHeadBytes + 1, 'a')).status, ParseStatus::kBad);
}

TEST(Protocol, HttpUrlMixFollowsWeights) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kHttp;
  spec.urls = {{"/a", 3.0}, {"/b", 1.0}};
  auto codec = make_codec(spec);
  std::mt19937_64 rng(3);
  int counts[2] = {0, 0};
  std::string out;
  for (int i = 0; i < 40'000; ++i) {
    out.clear();
    uint32_t t = codec->encode(out, 0, rng);
    ASSERT_LT(t, 2u);
    ++counts[t];
    EXPECT_EQ(
        out, std::string("GET ") + (t == 0 ? "/a" : "/b") + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
  }
  EXPECT_NEAR(counts[0] / 40'000.0, 0.75, 0.01);
  EXPECT_EQ(codec->type_names(), (std::vector<std::string>{"/a", "/b"}));
}

TEST(Protocol, SockperfFramesMatchWhatASockperfServerSends) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kSockperf;
  spec.echo_payload_bytes = 0;
  auto codec = make_codec(spec);
  std::mt19937_64 rng(1);
  std::string req;
  codec->encode(req, 7, rng);
  // sockperf 3.7's own client sends this for sequence 7 at -m 14, and its
  // server answers with the pong below (recorded on loopback).
  EXPECT_EQ(req, std::string("\0\0\0\0\0\0\0\x07\0\x03\0\0\0\x0e", 14));
  const std::string pong("\0\0\0\0\0\0\0\x07\0\x02\0\0\0\x0e", 14);
  const ResponseFrame f = codec->parse(pong);
  EXPECT_EQ(f.status, ParseStatus::kComplete);
  EXPECT_EQ(f.request_id, 7u);
  EXPECT_EQ(f.consumed, 14u);
  EXPECT_TRUE(codec->carries_request_id());
  EXPECT_EQ(codec->type_names(), (std::vector<std::string>{"ping"}));
  // Payload bytes count in the length; replies split anywhere still frame.
  std::string stream;
  append_sockperf_frame(stream, 1, kSockperfPong, "abc");
  append_sockperf_frame(stream, 0x0102030405060708ULL, kSockperfPong, "");
  EXPECT_EQ(stream.substr(10, 4), std::string("\0\0\0\x11", 4));  // 14 + 3
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].request_id, 1u);
  EXPECT_EQ(frames[1].request_id, 0x0102030405060708ULL);
  // Our own request echoed back (a client message), a length below the
  // header and a frame without the pong bit are protocol errors.
  EXPECT_EQ(codec->parse(req).status, ParseStatus::kBad);
  std::string short_len("\0\0\0\0\0\0\0\x01\0\x02\0\0\0\x0d", 14);
  EXPECT_EQ(codec->parse(short_len).status, ParseStatus::kBad);
  std::string no_pong("\0\0\0\0\0\0\0\x01\0\x00\0\0\0\x0e", 14);
  EXPECT_EQ(codec->parse(no_pong).status, ParseStatus::kBad);
  EXPECT_EQ(codec->parse(pong.substr(0, 13)).status, ParseStatus::kIncomplete);
}

TEST(Protocol, EchoRoundTripWithIdAndServiceTimeAtEverySplit) {
  auto codec = make_codec({});
  std::mt19937_64 rng(1);
  std::string req;
  codec->encode(req, 77, rng);
  EchoFrame parsed = parse_echo_frame(req);
  ASSERT_EQ(parsed.status, ParseStatus::kComplete);
  EXPECT_EQ(parsed.id, 77u);
  EXPECT_EQ(parsed.payload.size(), 16u);
  EXPECT_EQ(parsed.consumed, req.size());
  std::string stream;
  append_echo_frame(stream, 1, "abc", 999);
  append_echo_frame(stream, 0x0102030405060708ULL, "");
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].request_id, 1u);
  EXPECT_EQ(frames[0].service_time_ns, 999);
  EXPECT_EQ(frames[1].request_id, 0x0102030405060708ULL);
  EXPECT_EQ(frames[1].service_time_ns, -1);
  EXPECT_EQ(std::string(stream.substr(0, 4)), std::string("\0\0\0\x14", 4));  // 8+1+8+3
  EXPECT_EQ(codec->parse(std::string("\0\0\0\x02zz", 6)).status, ParseStatus::kBad);
}

TEST(Protocol, MemcachedRequestsAndResponsesAtEverySplit) {
  auto codec = key_value_codec(ProtocolSpec::Kind::kMemcached, 3);
  std::mt19937_64 rng(5);
  bool saw[2] = {false, false};
  for (int i = 0; i < 50; ++i) {
    std::string out;
    uint32_t t = codec->encode(out, 0, rng);
    saw[t] = true;
    EXPECT_EQ(out, t == 0 ? "get key:0\r\n" : "set key:0 0 0 3\r\nvvv\r\n");
  }
  EXPECT_TRUE(saw[0] && saw[1]);
  const std::string stream =
      "VALUE key:0 0 3\r\nvvv\r\nEND\r\nEND\r\nSTORED\r\nSERVER_ERROR out of memory\r\n"
      "VALUE k 0 2 99\r\nab\r\nEND\r\n";
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_TRUE(frames[3].server_error);
  EXPECT_EQ(codec->parse("VALUE k 0 2\r\nabX\r\nEND\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(codec->parse("HELLO\r\n").status, ParseStatus::kBad);
}

// The error lines real servers send, pipelined between ordinary replies:
// each is one well-framed server error. memcached greets a connection over
// its -c limit with "ERROR Too many open connections" (then closes it); an
// ERROR with text was once taken for an unframeable reply.
TEST(Protocol, MemcachedErrorLinesOfARealServerAreServerErrors) {
  auto codec = key_value_codec(ProtocolSpec::Kind::kMemcached, 3);
  const std::string stream =
      "ERROR Too many open connections\r\nSERVER_ERROR object too large for cache\r\n"
      "STORED\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\nEND\r\n";
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 6u);
  for (size_t i : {0, 1, 3, 4}) EXPECT_TRUE(frames[i].server_error) << i;
  EXPECT_FALSE(frames[2].server_error);
  EXPECT_FALSE(frames[5].server_error);
  EXPECT_EQ(frames[0].consumed, std::string("ERROR Too many open connections\r\n").size());
  EXPECT_EQ(codec->parse("ERRORS\r\n").status, ParseStatus::kBad);
}

TEST(Protocol, RedisRequestsAndResponsesAtEverySplit) {
  auto codec = key_value_codec(ProtocolSpec::Kind::kRedis, 2);
  std::mt19937_64 rng(9);
  for (int i = 0; i < 20; ++i) {
    std::string out;
    uint32_t t = codec->encode(out, 0, rng);
    EXPECT_EQ(out, t == 0 ? "*2\r\n$3\r\nGET\r\n$5\r\nkey:0\r\n"
                          : "*3\r\n$3\r\nSET\r\n$5\r\nkey:0\r\n$2\r\nvv\r\n");
  }
  const std::string stream = "+OK\r\n$3\r\nabc\r\n$-1\r\n-ERR wrong\r\n:42\r\n$0\r\n\r\n";
  auto frames = all_splits(*codec, stream);
  ASSERT_EQ(frames.size(), 6u);
  EXPECT_TRUE(frames[3].server_error);
  EXPECT_EQ(codec->parse("*1\r\n").status, ParseStatus::kBad);
  EXPECT_EQ(codec->parse("$3\r\nabcd\r\n").status, ParseStatus::kBad);
}

TEST(Protocol, ZipfFavoursLowRanksAndUniformDoesNot) {
  ZipfSampler z(100, 1.0);
  std::mt19937_64 rng(2);
  std::map<uint64_t, int> c;
  for (int i = 0; i < 100'000; ++i) ++c[z(rng)];
  // P(rank 1) = 1/H_100 = 0.1928.
  EXPECT_NEAR(c[0] / 100'000.0, 0.1928, 0.01);
  EXPECT_GT(c[0], 5 * c[9]);
  EXPECT_LT(c.rbegin()->first, 100u);
}

TEST(Protocol, InvalidSpecsThrow) {
  ProtocolSpec spec;
  spec.kind = ProtocolSpec::Kind::kHttp;
  spec.urls.clear();
  EXPECT_THROW(make_codec(spec), std::invalid_argument);
  spec.urls = {{"/", 0}};
  EXPECT_THROW(make_codec(spec), std::invalid_argument);
  spec.kind = ProtocolSpec::Kind::kRedis;
  spec.keys = 0;
  EXPECT_THROW(make_codec(spec), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::loadgen
