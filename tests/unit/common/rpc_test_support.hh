#pragma once
// Shared by the control-protocol tests: a server on its own control thread
// and a raw client that speaks the protocol by hand, so tests can misbehave.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_session.hh"

namespace nabla::common::rpc_test {

using namespace std::chrono_literals;
using nlohmann::json;

inline Key test_key(uint8_t fill) {
  return Key(std::vector<uint8_t>(32, fill));
}

// A server running on its own control thread, as a daemon would run it.
class ServerThread {
 public:
  explicit ServerThread(RpcServerOptions options) : server_(io_, std::move(options)) {
    server_.add_method("echo", [](const json& params) { return params; });
    server_.add_method("add", [](const json& params) {
      for (const char* field : {"a", "b"}) {
        if (!params.contains(field) || !params[field].is_number_integer()) {
          throw std::invalid_argument(std::string("params.") + field + " must be an integer");
        }
      }
      return json(params["a"].get<int64_t>() + params["b"].get<int64_t>());
    });
    server_.add_method("size", [](const json& params) {
      return json(params.at("s").get_ref<const std::string&>().size());
    });
    server_.add_method("boom", [](const json&) -> json { throw std::runtime_error("kaboom"); });
    server_.add_method("busy",
                       [](const json&) -> json { throw RpcError(-32010, "injection busy"); });
    server_.add_method("sleep", [](const json& params) {
      std::this_thread::sleep_for(std::chrono::milliseconds(params.at("ms").get<int>()));
      return json("slept");
    });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerThread() {
    server_.stop();
    thread_.join();
  }
  RpcServer& server() { return server_; }
  uint16_t port() const { return server_.port(); }

 private:
  asio::io_context io_;
  RpcServer server_;
  std::thread thread_;
};

inline RpcServerOptions keyed_options(std::chrono::milliseconds auth_timeout = 3000ms) {
  RpcServerOptions o;
  o.keys = {test_key(0x42)};
  o.auth_timeout = auth_timeout;
  return o;
}

// A blocking raw TCP client for protocol-level misbehaviour.
class RawClient {
 public:
  // From `source` (an address of 127.0.0.0/8) when given, so tests can be
  // two peers; with `receive_buffer` bytes of SO_RCVBUF when nonzero.
  explicit RawClient(uint16_t port, const char* source = nullptr, int receive_buffer = 0)
      : fd_(FileDescriptor::socket(AF_INET, SOCK_STREAM, 0)) {
    if (receive_buffer > 0) {
      ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
        throw std::runtime_error(std::string("bind to ") + source + " failed");
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect failed");
    }
  }
  int fd() const { return fd_.get(); }
  void send_raw(const std::string& bytes) {
    // MSG_NOSIGNAL: the server may already have closed on us.
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  // One frame around `payload`, sealed once authenticated.
  std::string frame(const std::string& payload) {
    return sealer_ ? sealer_->seal(payload) : encode_frame(payload);
  }
  void send_payload(const std::string& payload) { send_raw(frame(payload)); }
  void send_json(const json& j) { send_payload(j.dump()); }
  // Next frame as JSON; nullopt on EOF/reset or after `timeout`.
  std::optional<json> read(std::chrono::milliseconds timeout = 2000ms) {
    const int64_t deadline = monotonic_ns() + timeout.count() * 1'000'000;
    std::string frame;
    for (;;) {
      if (decoder_.next(frame) == FrameDecoder::Status::kFrame) return json::parse(opened(frame));
      const int64_t left_ms = (deadline - monotonic_ns()) / 1'000'000;
      if (left_ms <= 0) return std::nullopt;
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left_ms)) <= 0) return std::nullopt;
      char buf[65536];
      const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        return std::nullopt;
      }
      decoder_.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  // True when the server closed the connection within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    while (!eof_) {
      if (!read(timeout) && !eof_) return false;
    }
    return true;
  }
  json challenge() {
    auto c = read();
    if (!c) throw std::runtime_error("no challenge");
    return *c;
  }
  // Reads the challenge and answers it with `key` (protocol version 3);
  // every later frame is sealed.
  void authenticate(const Key& key) {
    if (!answer_challenge(key).contains("result")) throw std::runtime_error("auth failed");
  }
  // Reads the challenge and answers it with `key`, claiming `identity` (by
  // default the one the server announced) and proving `proof_identity` (by
  // default the claimed one; another is what a relay that rewrites the
  // claim produces); once authenticated, every later frame is sealed.
  // Returns the server's answer (a result or an error).
  json answer_challenge(const Key& key, std::optional<std::string> identity = std::nullopt,
                        std::optional<std::string> proof_identity = std::nullopt) {
    const json c = challenge();
    std::vector<uint8_t> bytes;
    from_hex(c["params"]["nonce"].get<std::string>(), bytes);
    Nonce server_nonce{};
    std::copy(bytes.begin(), bytes.end(), server_nonce.begin());
    if (!identity) identity = c["params"]["identity"].get<std::string>();
    if (!proof_identity) proof_identity = identity;
    const Nonce client_nonce = random_nonce();
    const Mac mac = client_proof(key, server_nonce, client_nonce, *proof_identity);
    send_json(make_request(0, "auth.response",
                           {{"version", kProtocolVersion},
                            {"nonce", to_hex(client_nonce.data(), client_nonce.size())},
                            {"hmac", to_hex(mac.data(), mac.size())},
                            {"identity", *identity},
                            {"key_id", key_id(key)}}));
    const auto r = read();
    if (!r) throw std::runtime_error("no answer to auth.response");
    if (!r->contains("result")) return *r;
    sealer_.emplace(derive_session_key(key, server_nonce, client_nonce, *proof_identity),
                    FrameSealer::Peer::kClient);
    decoder_.expect_sealed();
    return *r;
  }

 private:
  std::string opened(const std::string& frame) {
    if (!sealer_) return frame;
    std::string payload;
    if (sealer_->open(frame, payload) != FrameSealer::Verdict::kOk) {
      throw std::runtime_error("server frame failed its seal");
    }
    return payload;
  }

  FileDescriptor fd_;
  FrameDecoder decoder_;
  std::optional<FrameSealer> sealer_;
  bool eof_ = false;
};

}  // namespace nabla::common::rpc_test
