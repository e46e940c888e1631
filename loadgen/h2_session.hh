#pragma once
// HTTP/2 client sessions for the load engine (private to loadgen), on
// libnghttp2: the library does all the framing, HPACK, flow control and
// stream bookkeeping; this file only feeds it bytes and collects answers.
//
// Data flow, per connection: the engine submits a request (one stream,
// tagged with its request id), drains the bytes the session has to send
// into the connection's output buffer, and feeds every byte it reads back.
// A stream that closes becomes an H2Completion with its request id, the
// :status, the grpc-status (headers or trailers) and the RST_STREAM code,
// in the order the streams ended, which need not be the order they were
// sent. The session never throws: a protocol error makes receive() or
// drain() return false, and the engine drops the connection.
//
// H2Requests turns a ProtocolSpec (URL mix, or gRPC methods with their
// messages) into the header lists and bodies of every transaction type.
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nabla/loadgen/protocol.hh"

namespace nabla::loadgen::detail {

struct H2Request {
  std::vector<std::pair<std::string, std::string>> headers;  // pseudo-headers first
  std::string body;                                          // empty: no DATA frame
  // `headers` as nghttp2 takes them, pointing into the strings above and
  // marked not to be copied: built once, so a submit allocates no header.
  std::vector<nghttp2_nv> nva;
};

// The requests of every transaction type of a protocol, and the draw of one.
class H2Requests {
 public:
  // Throws std::invalid_argument for a spec that is not HTTP/2 or gRPC.
  explicit H2Requests(const ProtocolSpec& spec);
  // Each request's `nva` points into its own strings: never copied or moved.
  H2Requests(const H2Requests&) = delete;
  H2Requests& operator=(const H2Requests&) = delete;
  uint32_t pick(std::mt19937_64& rng) { return pick_(rng); }
  const H2Request& request(uint32_t type) const { return requests_[type]; }
  bool grpc() const { return grpc_; }

 private:
  std::vector<H2Request> requests_;
  std::discrete_distribution<uint32_t> pick_;
  bool grpc_ = false;
};

// The 5-byte gRPC message prefix (uncompressed, big-endian length) and the
// message: what a unary call's request body is.
std::string grpc_frame(std::string_view message);

// REFUSED_STREAM (RFC 9113 §7): the server did not process the stream,
// either because it was past the server's GOAWAY or because it refused it.
inline constexpr uint32_t kRefusedStream = 0x7;

struct H2Completion {
  uint64_t request_id = 0;
  int http_status = 0;      // :status, 0 when none arrived
  int grpc_status = -1;     // grpc-status, -1 when none arrived
  uint32_t reset_code = 0;  // RST_STREAM / GOAWAY error code, 0 = closed cleanly
};

class H2Session {
 public:
  H2Session();
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // False when the session could not be created (out of memory).
  bool ok() const { return session_ != nullptr; }
  // Opens a stream for `request`; false when the session refused it.
  bool submit(const H2Request& request, uint64_t request_id);
  // Feeds received bytes; false on a protocol error.
  bool receive(std::string_view bytes);
  // Appends every byte the session wants to send; false on an error.
  bool drain(std::string& out);
  // True when every frame submitted so far has been drained (none waits for
  // flow control or a stream slot): each request's last byte is in what
  // drain() appended.
  bool all_drained() const;
  // Streams that ended since the last call (the caller clears it).
  std::vector<H2Completion>& completions() { return completions_; }
  // False once the server said GOAWAY: no new stream may start.
  bool accepting() const;
  // False once the session has nothing more to read or write (after a
  // GOAWAY, or an error): the connection is done.
  bool alive() const;

 private:
  struct Stream {
    uint64_t request_id = 0;
    const std::string* body = nullptr;
    std::size_t body_sent = 0;
    int http_status = 0;
    int grpc_status = -1;
  };

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                       void* user);
  static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user);
  static ssize_t read_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                           uint32_t* data_flags, nghttp2_data_source* source, void* user);

  nghttp2_session* session_ = nullptr;
  // By request id; a node's address is stable, so it is the stream's user data.
  std::unordered_map<uint64_t, Stream> streams_;
  std::vector<H2Completion> completions_;
};

}  // namespace nabla::loadgen::detail
