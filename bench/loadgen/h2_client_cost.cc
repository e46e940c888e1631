// The HTTP/2 client session's own cost per request, without sockets, TLS or
// timing: loadgen's H2Session exchanges bytes in memory with an nghttp2
// server session that answers the way nginx 1.22 does (`return 200 "ok\n"`:
// :status, server, date, content-type and content-length as literals that
// are never indexed, so every response's header block is decoded anew, then
// one DATA frame). h2_client_cost.sh runs it under callgrind and counts the
// instructions spent inside the client session and inside the server
// session for the same requests, so the figure is exact and the same on any
// machine.
//   usage: nabla_h2_client_cost [ROUNDS [STREAMS_PER_ROUND]]
// Reads the session class from loadgen's private headers: it measures that
// class and nothing else.
#include <nghttp2/nghttp2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "h2_session.hh"
#include "nabla/loadgen/protocol.hh"

namespace {

nghttp2_nv literal(const char* name, const char* value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value)), std::strlen(name),
          std::strlen(value), NGHTTP2_NV_FLAG_NO_INDEX};
}

// The server end: answers every request that has ended.
class NginxLikeServer {
 public:
  NginxLikeServer() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &NginxLikeServer::on_frame);
    nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1024}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
  }
  ~NginxLikeServer() { nghttp2_session_del(session_); }
  NginxLikeServer(const NginxLikeServer&) = delete;
  NginxLikeServer& operator=(const NginxLikeServer&) = delete;

  // Not inlined: callgrind counts the server's work by these two names.
  [[gnu::noinline]] bool receive(const std::string& bytes) {
    const auto n = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    return n == static_cast<ssize_t>(bytes.size());
  }

  // The frames answering every request ended so far.
  [[gnu::noinline]] std::string answer() {
    for (const int32_t id : ended_) {
      const nghttp2_nv headers[] = {literal(":status", "200"), literal("server", "nginx/1.22.1"),
                                    literal("date", "Tue, 08 Dec 2026 01:40:00 GMT"),
                                    literal("content-type", "application/octet-stream"),
                                    literal("content-length", "3")};
      nghttp2_data_provider body{};
      body.read_callback = &NginxLikeServer::read_body;
      nghttp2_submit_response(session_, id, headers, 5, &body);
    }
    ended_.clear();
    std::string out;
    const uint8_t* data = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    return out;
  }

 private:
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      static_cast<NginxLikeServer*>(user)->ended_.push_back(frame->hd.stream_id);
    }
    return 0;
  }
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t, uint32_t* flags,
                           nghttp2_data_source*, void*) {
    std::memcpy(buf, "ok\n", 3);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 3;
  }

  nghttp2_session* session_ = nullptr;
  std::vector<int32_t> ended_;
};

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 2000;
  const long streams = argc > 2 ? std::atol(argv[2]) : 8;
  if (rounds <= 0 || streams <= 0 || streams > 1000) {
    std::fprintf(stderr, "usage: nabla_h2_client_cost [ROUNDS [STREAMS_PER_ROUND (1-1000)]]\n");
    return 2;
  }
  nabla::loadgen::ProtocolSpec spec;
  spec.kind = nabla::loadgen::ProtocolSpec::Kind::kHttp2;
  spec.host_header = "127.0.0.1:8080";
  const nabla::loadgen::detail::H2Requests requests(spec);
  nabla::loadgen::detail::H2Session client;
  NginxLikeServer server;
  std::string wire;
  uint64_t sent = 0, completed = 0;
  // Each round: the client opens its streams, the server answers them all,
  // the client reads the answers and sends what it owes (SETTINGS ack, window
  // updates).
  for (long r = 0; r <= rounds; ++r) {
    for (long s = 0; r > 0 && s < streams; ++s) {
      if (client.submit(requests.request(0), ++sent)) continue;
      std::fprintf(stderr, "h2 client cost: the session refused stream %llu\n",
                   static_cast<unsigned long long>(sent));
      return 1;
    }
    if (!client.drain(wire) || !server.receive(wire)) return 1;
    wire.clear();
    if (!client.receive(server.answer())) return 1;
    completed += client.completions().size();
    client.completions().clear();
  }
  std::printf("requests %llu, answered %llu\n", static_cast<unsigned long long>(sent),
              static_cast<unsigned long long>(completed));
  return completed == sent ? 0 : 1;
}
