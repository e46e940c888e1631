#pragma once
// The nabla control protocol: JSON-RPC 2.0 over TCP, one message per frame.
//
// ## Wire format
// Each message is a frame: 4-byte big-endian payload length, then that many
// bytes of UTF-8 JSON. Payloads over 1 MiB (1048576 bytes) are refused: the
// server answers error -32003 (id null) and closes the connection. After an
// authenticated handshake every frame is sealed (rpc_session.hh): sequence
// number and MAC around the payload, checked by RpcServer and RpcClient.
//
// ## Handshake (always, first thing after connect; protocol version 3)
// 1. server -> client, a notification:
//      {"jsonrpc":"2.0","method":"auth.challenge",
//       "params":{"version":3,"nonce":"<64 hex digits>","auth_required":true,
//                 "identity":"injectd@10.0.0.12:7311"}}
//    nonce = 32 bytes from RAND_bytes, fresh per connection; identity = the
//    server's kind (RpcServerOptions::daemon) and its address on this
//    connection, or the address clients reach it at when set
//    (RpcServerOptions::advertise; rpc_session.hh). A client that meant another kind or
//    address refuses it before sending anything.
// 2. client -> server (only when auth_required is true):
//      {"jsonrpc":"2.0","id":0,"method":"auth.response",
//       "params":{"version":3,"nonce":"<64 hex>","hmac":"<64 hex>",
//                 "identity":"injectd@10.0.0.12:7311","key_id":"<16 hex>"}}
//    nonce = the client's own 32 random bytes; hmac = the client proof of
//    rpc_session.hh over both nonces and the identity the client meant;
//    key_id = the public name of the key it used (rpc_auth.hh), so that a
//    refusal can say whose key it was. A server refuses an identity that is
//    not its own, naming both, and a key it does not hold, naming its id.
// 3. server -> client:
//      {"jsonrpc":"2.0","id":0,"result":{"authenticated":true,"proof":"<64 hex>"}}
//    proof = the server proof of rpc_session.hh (the server knows the key
//    too); from the next frame on, both directions are sealed. On a wrong or
//    malformed answer, or an answer of another protocol version, an error
//    then close:
//      {"jsonrpc":"2.0","id":0,"error":{"code":-32001,"message":"authentication failed"}}
// The server tries each of its keys with CRYPTO_memcmp. A connection that has
// not authenticated within the auth timeout (3 s by default) is closed.
// Before authenticating, any other request gets error -32002 and the
// connection is closed: unauthenticated connections can call nothing. A
// client refuses a challenge of another version, naming both.
// A server without keys (allowed only on a loopback listen address, for
// in-process tests; the daemons always have a key) sends auth_required
// false, the connection is authenticated at once, frames stay unsealed, and
// a client without any key goes straight to requests; a client holding a
// key refuses such a server (no downgrade). Key files: see rpc_auth.hh; where the
// daemons and the CLI find theirs: local_keys.hh.
//
// ## Requests
//   {"jsonrpc":"2.0","id":7,"method":"inject.start","params":{...}}
//   -> {"jsonrpc":"2.0","id":7,"result":{...}}
//   -> {"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"..."}}
// Codes: -32700 parse error, -32600 invalid request, -32601 method not found,
// -32602 invalid params (the message names the field), -32603 internal error,
// -32001 auth failed, -32002 not authenticated, -32003 frame too large.
// Requests on one connection are answered in order.
//
// ## Using RpcServer in a daemon
//   asio::io_context io;
//   RpcServerOptions opts;            // 127.0.0.1, no key by default
//   opts.port = 7311;
//   opts.key_file = key_file;         // or opts.keys = {key, ...}
//   RpcServer server(io, opts);      // binds now; throws on bad config
//   server.add_method("stats", [&](const nlohmann::json& params) {
//     return nlohmann::json{{"packets", n}};   // or throw RpcError / invalid_argument
//   });
//   std::thread control([&] { io.run(); });  // the control thread
//   ...  // on SIGTERM:
//   server.stop(); control.join();           // io.run() returns when idle
// Handlers run on the thread running io.run(); they must not block for long
// (they hold up every other client). A handler throws RpcError{code, msg}
// for a specific error, std::invalid_argument for -32602 (put the field name
// in the message), and anything else becomes -32603 with its what(); the
// server keeps serving either way. Each connection handles its next request
// only while less than max_unsent_bytes of its answers wait to be written, and
// reads its socket only when every request read is handled, so a client that
// pipelines and never reads cannot make the server buffer without bound; it
// just holds one of max_connections slots until idle_timeout or keepalive
// reclaims it. Unauthenticated connections are limited per peer
// (max_unauthenticated_per_peer) and their frames to
// max_unauthenticated_frame_bytes, so silent or junk connections from one
// host cannot keep others out.
//
// ## Using RpcClient in a CLI
//   auto client = RpcClient::connect("10.0.0.2", 7311, key, 2s);
//   nlohmann::json r = client.call("stats", {}, 2s);
//   protocol::InjectStopResult s = client.call(protocol::InjectStopParams{id}, 2s);
// A daemon registers a protocol method by its message's name
// (server.add_method(protocol::InjectStopParams::kMethod, ...)), and a
// client sends the message itself, so both ends name it the same way.
// One call at a time per client (not thread-safe). After a timeout or a
// transport error the client is closed and must be reconnected.
#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/ip_address.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/rpc_frame.hh"

namespace nabla::common {

inline constexpr int kProtocolVersion = 3;
// The kind of an RpcServer that is no daemon (in-process tests), in session
// identities.
inline constexpr const char* kAnyDaemon = "rpc";
inline constexpr uint16_t kInjectdPort = 7311;
inline constexpr uint16_t kSniffdPort = 7312;
inline constexpr uint16_t kLoaddPort = 7313;

struct RpcServerOptions {
  std::string listen_address = "127.0.0.1";  // IPv4 or IPv6 literal
  // The server's kind in session identities: "injectd", "sniffd"
  // (local_keys.hh), kAnyDaemon for other servers. A client must name the
  // same kind to authenticate.
  std::string daemon = kAnyDaemon;
  uint16_t port = 0;  // 0: pick a free port (see port())
  // The control address clients connect to when it is not the server's own
  // (NAT or a port forward in between): session identities bind it instead
  // of each accepted connection's local address, so such clients
  // authenticate, and only clients that name it do (a client that connects
  // to the server's own address is refused then). nullopt: the local address.
  std::optional<Endpoint> advertise;
  // Any of these keys authenticates a client. Required (here or through
  // key_file) unless listen_address is loopback.
  std::vector<Key> keys;
  // Keys from this file (rpc_auth.hh), added to `keys`. The file is read at
  // construction (errors throw) and again whenever it changes, checked as
  // each connection arrives, so keys can be added or retired without a
  // restart; a changed file that does not load is logged and the keys
  // loaded before stay in force.
  std::optional<std::string> key_file;
  std::chrono::milliseconds auth_timeout{3000};
  // Close authenticated connections that send nothing for this long; 0
  // disables. Clients reconnect when they find a connection closed.
  std::chrono::milliseconds idle_timeout{10 * 60 * 1000};
  // TCP keepalive on every connection: first probe after this much silence,
  // then every keepalive_interval, closed after keepalive_probes unanswered
  // (a vanished peer frees its slot in about 2 minutes); 0 disables.
  std::chrono::seconds keepalive_idle{60};
  std::chrono::seconds keepalive_interval{10};
  int keepalive_probes = 6;
  std::size_t max_connections = 128;  // further connections are closed at once
  // Connections not yet authenticated, per peer (an IPv4 address, or the /64
  // of an IPv6 one): further ones from that peer are closed at once, so one
  // host cannot hold every slot by connecting and staying silent.
  std::size_t max_unauthenticated_per_peer = 8;
  std::size_t max_frame_bytes = kMaxFrameBytes;
  // The limit on frames before authentication (an auth.response is about
  // 250 bytes): larger ones get -32003 before any JSON is parsed.
  std::size_t max_unauthenticated_frame_bytes = 16 * 1024;
  // Answers queued but not yet written, per connection, beyond which the
  // server handles no further request of that connection (it does not read
  // its socket either) until they are written. One answer is always queued.
  std::size_t max_unsent_bytes = 256 * 1024;
};

// What the server refused or closed on its own, for logs and tests.
struct RpcServerCounters {
  std::uint64_t refused_full = 0;      // max_connections open
  std::uint64_t refused_per_peer = 0;  // max_unauthenticated_per_peer reached
  std::uint64_t auth_timeouts = 0;     // closed: no authentication within auth_timeout
  std::uint64_t idle_closed = 0;       // closed: idle for idle_timeout
};

namespace detail {
struct ServerState;
}

// Who makes a call, for handlers that decide by it (add_method_with_caller).
struct RpcCaller {
  std::string key_id;            // common::key_id of the key it authenticated with; "" without
  std::uint64_t connection = 0;  // numbered from 1 per server
  std::string peer;              // its address
};

class RpcServer {
 public:
  using Handler = std::function<nlohmann::json(const nlohmann::json& params)>;
  using CallerHandler =
      std::function<nlohmann::json(const nlohmann::json& params, const RpcCaller& caller)>;

  // Binds and listens at once (so port() is valid), accepting on `io`.
  // Throws std::invalid_argument for a bad address or a non-loopback address
  // without a key, std::system_error for bind/listen failures, and the
  // errors of load_keys for a bad key_file.
  RpcServer(asio::io_context& io, RpcServerOptions options);
  // Closes the listener and every connection. Destroy it on the io thread or
  // after io.run() has returned.
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Registers (or replaces) a method. Thread-safe. Names starting with
  // "auth." are reserved.
  void add_method(std::string name, Handler handler);
  // The same, for a handler that is told who calls.
  void add_method_with_caller(std::string name, CallerHandler handler);
  uint16_t port() const noexcept;
  // Stops accepting and closes every connection. Safe from any thread: the
  // work is posted to the io_context.
  void stop();
  // Connections currently open (for tests and stats). Thread-safe.
  std::size_t connection_count() const noexcept;
  // Refusals and closes so far. Thread-safe.
  RpcServerCounters counters() const noexcept;

 private:
  std::shared_ptr<detail::ServerState> state_;
};

// Transport failure: cannot connect, connection lost, protocol violation.
class RpcConnectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No answer within the timeout.
class RpcTimeoutError : public RpcConnectionError {
 public:
  using RpcConnectionError::RpcConnectionError;
};

class RpcClient {
 public:
  // Connects, reads the challenge and authenticates. A server that does not
  // require a key is refused when this client holds one (no downgrade:
  // every daemon requires a key), before anything is sent. `host` may be a name or an address
  // literal; `timeout` bounds the whole handshake. Throws RpcConnectionError / RpcTimeoutError
  // naming host:port (also for a server of another protocol version, or one
  // whose proof or frames do not verify), or RpcError (e.g. -32001) when the
  // server rejects the key.
  // `daemon` is the kind of server meant ("injectd", "sniffd"): the session
  // is bound to it and to the address connected to, and a server that is
  // another kind or sees itself at another address is refused, naming both.
  static RpcClient connect(const std::string& host, uint16_t port, std::optional<Key> key,
                           std::chrono::milliseconds timeout, std::string_view daemon = kAnyDaemon);
  // The same, asking `key_source` for the key only when the server requires
  // one (what it throws is passed on, e.g. KeyUnavailableError).
  using KeySource = std::function<Key()>;
  static RpcClient connect(const std::string& host, uint16_t port, const KeySource& key_source,
                           std::chrono::milliseconds timeout, std::string_view daemon = kAnyDaemon);

  RpcClient(RpcClient&&) noexcept;
  RpcClient& operator=(RpcClient&&) noexcept;
  ~RpcClient();

  // Sends one request and waits for its response. Null params are sent as
  // {}. Throws RpcError with the server's code and message, or
  // RpcTimeoutError / RpcConnectionError (std::length_error if the request
  // exceeds 1 MiB).
  nlohmann::json call(const std::string& method, nlohmann::json params,
                      std::chrono::milliseconds timeout);
  // Sends a protocol message (protocol/*.hh: a params struct with kMethod
  // and to_json) and returns its Message::Result read by Result::from_json,
  // or the JSON result for a message without one (daemon.info). Throws as
  // call above, and std::invalid_argument for a result that does not read.
  template <class Message>
  auto call(const Message& message, std::chrono::milliseconds timeout) {
    nlohmann::json result = call(Message::kMethod, message.to_json(), timeout);
    if constexpr (requires { typename Message::Result; }) {
      return Message::Result::from_json(result);
    } else {
      return result;
    }
  }
  bool connected() const noexcept;
  void close() noexcept;

  struct Impl;

 private:
  explicit RpcClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nabla::common
