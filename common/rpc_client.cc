// RpcClient: a small synchronous client for CLIs and the coordinator. Each
// blocking step runs a private io_context for at most the remaining time, so
// every wait is bounded (Asio's run_for pattern).
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_session.hh"

namespace nabla::common {

using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

Endpoint endpoint_of_asio(const tcp::endpoint& endpoint) {
  const asio::ip::address address = endpoint.address();
  if (address.is_v4()) return {IpAddress::v4(address.to_v4().to_bytes()), endpoint.port()};
  return {IpAddress::v6(address.to_v6().to_bytes()), endpoint.port()};
}

}  // namespace

struct RpcClient::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  std::string where;     // "host:port" for messages
  std::string daemon;    // the kind of server meant
  std::string identity;  // the session identity meant (rpc_session.hh), once connected
  FrameDecoder decoder;
  std::optional<FrameSealer> sealer;  // set once authenticated with a key
  std::array<char, 64 * 1024> buf{};
  int64_t next_id = 1;

  [[noreturn]] void fail_timeout(std::string_view what, std::chrono::milliseconds timeout) {
    close();
    throw RpcTimeoutError("timed out after " + std::to_string(timeout.count()) + "ms " +
                          std::string(what) + " " + where);
  }

  void close() noexcept {
    std::error_code ignored;
    socket.close(ignored);
  }

  // Runs the io_context until `done` or the deadline. On timeout closes the
  // socket (aborting the operation), drains the handler and returns false.
  bool run_until(const bool& done, Clock::time_point deadline) {
    io.restart();
    while (!done) {
      const auto now = Clock::now();
      if (now >= deadline || io.stopped()) break;
      io.run_one_for(deadline - now);
    }
    if (done) return true;
    close();
    io.restart();
    io.run();  // let the aborted operation complete
    return false;
  }

  void connect(const std::string& host, uint16_t port, Clock::time_point deadline,
               std::chrono::milliseconds timeout) {
    bool done = false;
    std::error_code ec;
    // Address literals (the common case) skip the resolver and its thread.
    if (IpAddress::parse(host)) {
      try_endpoints({tcp::endpoint(asio::ip::make_address(host), port)}, deadline, timeout);
      return;
    }
    // Names: the wait is bounded by `timeout`, but a hung getaddrinfo cannot
    // be interrupted, so the system resolver's own timeout still applies.
    tcp::resolver resolver(io);
    tcp::resolver::results_type results;
    resolver.async_resolve(host, std::to_string(port),
                           [&](const std::error_code& e, tcp::resolver::results_type r) {
                             ec = e;
                             results = std::move(r);
                             done = true;
                           });
    if (!run_until(done, deadline)) {
      resolver.cancel();
      fail_timeout("resolving", timeout);
    }
    if (ec) throw RpcConnectionError("cannot resolve " + where + ": " + ec.message());
    std::vector<tcp::endpoint> endpoints;
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    try_endpoints(endpoints, deadline, timeout);
  }

  void try_endpoints(const std::vector<tcp::endpoint>& endpoints, Clock::time_point deadline,
                     std::chrono::milliseconds timeout) {
    bool done = false;
    std::error_code ec;
    std::string last_error = "no addresses";
    for (const tcp::endpoint& endpoint : endpoints) {
      // Create the socket ourselves so it is CLOEXEC from birth.
      try {
        FileDescriptor fd = FileDescriptor::socket(endpoint.protocol().family(), SOCK_STREAM, 0);
        socket = tcp::socket(io);
        socket.assign(endpoint.protocol(), fd.release());
      } catch (const std::system_error& e) {  // e.g. no IPv6 here: try the next address
        last_error = e.what();
        continue;
      }
      done = false;
      socket.async_connect(endpoint, [&](const std::error_code& e) {
        ec = e;
        done = true;
      });
      if (!run_until(done, deadline)) fail_timeout("connecting to", timeout);
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        // The address actually connected to, as the server sees itself.
        identity = session_identity(daemon, endpoint_of_asio(endpoint));
        return;
      }
      last_error = ec.message();
      close();
    }
    throw RpcConnectionError("cannot connect to " + where + ": " + last_error);
  }

  // Frames the payload (sealed once authenticated) and sends it.
  void write_message(const json& message, Clock::time_point deadline,
                     std::chrono::milliseconds timeout, std::string_view what) {
    const std::string payload = dump_json(message);
    const std::string frame = sealer ? sealer->seal(payload) : encode_frame(payload);
    bool done = false;
    std::error_code ec;
    asio::async_write(socket, asio::buffer(frame), [&](const std::error_code& e, std::size_t) {
      ec = e;
      done = true;
    });
    if (!run_until(done, deadline)) fail_timeout(what, timeout);
    if (ec) {
      close();
      throw RpcConnectionError("connection to " + where + " failed while sending: " + ec.message());
    }
  }

  // The next payload, its seal checked once authenticated.
  std::string read_frame(Clock::time_point deadline, std::chrono::milliseconds timeout,
                         std::string_view what) {
    std::string frame;
    for (;;) {
      const auto status = decoder.next(frame);
      if (status == FrameDecoder::Status::kFrame) return opened(frame);
      if (status == FrameDecoder::Status::kOversize) {
        close();
        throw RpcConnectionError(where + " sent a frame of " +
                                 std::to_string(decoder.oversize_length()) +
                                 " bytes, over the 1 MiB limit");
      }
      bool done = false;
      std::error_code ec;
      std::size_t n = 0;
      socket.async_read_some(asio::buffer(buf), [&](const std::error_code& e, std::size_t got) {
        ec = e;
        n = got;
        done = true;
      });
      if (!run_until(done, deadline)) fail_timeout(what, timeout);
      if (ec) {
        close();
        if (ec == asio::error::eof) throw RpcConnectionError("connection closed by " + where);
        throw RpcConnectionError("connection to " + where + " failed: " + ec.message());
      }
      decoder.feed(std::string_view(buf.data(), n));
    }
  }

  std::string opened(const std::string& frame) {
    if (!sealer) return frame;
    std::string payload;
    const FrameSealer::Verdict verdict = sealer->open(frame, payload);
    if (verdict != FrameSealer::Verdict::kOk) {
      close();
      throw RpcConnectionError("closed the connection to " + where + ": " +
                               FrameSealer::describe(verdict));
    }
    return payload;
  }

  // Waits for the response with `id`, skipping notifications and stale
  // responses to earlier timed-out calls.
  RpcResponse read_response(const json& id, Clock::time_point deadline,
                            std::chrono::milliseconds timeout, std::string_view what) {
    for (;;) {
      const std::string frame = read_frame(deadline, timeout, what);
      RpcResponse response;
      try {
        response = parse_response(frame);
      } catch (const RpcError& e) {
        const json doc = json::parse(frame, nullptr, false);
        if (doc.is_object() && doc.contains("method") && !doc.contains("id")) continue;
        close();
        throw RpcConnectionError("malformed response from " + where + ": " + e.what());
      }
      if (response.id == id) return response;
    }
  }

  // The challenge's nonce, after checking its shape and version.
  Nonce read_challenge(Clock::time_point deadline, std::chrono::milliseconds timeout,
                       bool& auth_required) {
    const std::string frame = read_frame(deadline, timeout, "waiting for the challenge from");
    const json challenge = json::parse(frame, nullptr, false);
    const auto bad = [&](const std::string& why) {
      close();
      return RpcConnectionError("bad challenge from " + where + ": " + why);
    };
    if (!challenge.is_object() || challenge.value("method", "") != "auth.challenge" ||
        !challenge.contains("params") || !challenge["params"].is_object()) {
      throw bad("not an auth.challenge");
    }
    const json& params = challenge["params"];
    const json version = params.value("version", json());
    if (version != kProtocolVersion) {
      close();
      throw RpcConnectionError(where + " speaks control protocol version " + dump_json(version) +
                               ", this nabla speaks version " + std::to_string(kProtocolVersion) +
                               "; use the same nabla release on both ends");
    }
    auth_required = params.value("auth_required", true);
    std::vector<uint8_t> bytes;
    Nonce nonce{};
    if (auth_required) {
      if (!params.contains("nonce") || !params["nonce"].is_string() ||
          !from_hex(params["nonce"].get<std::string>(), bytes) || bytes.size() != kNonceBytes) {
        throw bad("missing or malformed nonce");
      }
      std::copy(bytes.begin(), bytes.end(), nonce.begin());
      if (!params.contains("identity") || !params["identity"].is_string()) {
        throw bad("missing identity");
      }
      // Nothing is sent to a daemon that is not the one meant. (A relay
      // could rewrite this; the proofs, which bind the identity, fail then.)
      const std::string& theirs = params["identity"].get_ref<const std::string&>();
      if (theirs != identity) {
        close();
        throw RpcConnectionError(
            where + " is " + dump_json(params["identity"]) + ", not " + identity +
            " as this nabla meant: refusing to authenticate, since a session is bound to one "
            "daemon at one address (the wrong port or daemon, a redirected or relayed "
            "connection, or a NAT or port forward between this host and the daemon, which "
            "needs the daemon started with --advertise " +
            identity.substr(identity.find('@') + 1) + ")");
      }
    }
    return nonce;
  }

  // No downgrade: a client that holds a key for this server never talks to
  // it unauthenticated. Every nabla daemon requires a key, so a server that
  // says auth_required: false is not one, or someone on the path rewrote
  // the challenge; either way nothing may be sent to it in plaintext. Only
  // a client without any key (in-process tests of a keyless RpcServer) goes
  // on unsealed.
  void refuse_downgrade(const KeySource& key_source) {
    bool holds_key = false;
    try {
      (void)key_source();
      holds_key = true;
    } catch (const std::exception&) {
      // No key to lose: nothing secret is sent to a keyless server.
    }
    if (!holds_key) return;
    close();
    throw RpcConnectionError(where +
                             " does not ask for authentication (auth_required: false), but this "
                             "nabla holds a key for it: refusing to send anything unauthenticated "
                             "(a nabla daemon always requires a key; not a nabla daemon, or the "
                             "connection is tampered with)");
  }

  void handshake(const KeySource& key_source, Clock::time_point deadline,
                 std::chrono::milliseconds timeout) {
    bool auth_required = true;
    const Nonce server_nonce = read_challenge(deadline, timeout, auth_required);
    if (!auth_required) {
      refuse_downgrade(key_source);
      return;
    }
    std::optional<Key> key;
    try {
      key.emplace(key_source());
    } catch (...) {
      close();
      throw;
    }
    const Nonce client_nonce = random_nonce();
    const Mac mac = client_proof(*key, server_nonce, client_nonce, identity);
    write_message(make_request(0, "auth.response",
                               {{"version", kProtocolVersion},
                                {"nonce", to_hex(client_nonce.data(), client_nonce.size())},
                                {"hmac", to_hex(mac.data(), mac.size())},
                                {"identity", identity},
                                {"key_id", key_id(*key)}}),
                  deadline, timeout, "authenticating with");
    const RpcResponse response = read_response(0, deadline, timeout, "authenticating with");
    if (!response.result) {
      close();
      throw RpcError(response.error_code, response.error_message + " (" + where + ")");
    }
    Key session = derive_session_key(*key, server_nonce, client_nonce, identity);
    const Mac expected = server_proof(session);
    std::vector<uint8_t> proof;
    if (!response.result->is_object() || !response.result->contains("proof") ||
        !(*response.result)["proof"].is_string() ||
        !from_hex((*response.result)["proof"].get<std::string>(), proof) ||
        proof.size() != kHmacBytes ||
        !constant_time_equal(proof.data(), expected.data(), kHmacBytes)) {
      close();
      throw RpcConnectionError(where +
                               " accepted the key but could not prove it holds it: not a nabla "
                               "daemon, or the connection is tampered with");
    }
    sealer.emplace(std::move(session), FrameSealer::Peer::kClient);
    decoder.expect_sealed();
  }
};

RpcClient::RpcClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RpcClient::RpcClient(RpcClient&&) noexcept = default;
RpcClient& RpcClient::operator=(RpcClient&&) noexcept = default;
RpcClient::~RpcClient() = default;

RpcClient RpcClient::connect(const std::string& host, uint16_t port, std::optional<Key> key,
                             std::chrono::milliseconds timeout, std::string_view daemon) {
  const std::string where = HostPort{host, port, {}}.to_string();
  return connect(
      host, port,
      [&]() -> Key {
        if (key) return *key;
        throw RpcConnectionError(where + " requires authentication: give a key file (--key-file)");
      },
      timeout, daemon);
}

RpcClient RpcClient::connect(const std::string& host, uint16_t port, const KeySource& key_source,
                             std::chrono::milliseconds timeout, std::string_view daemon) {
  auto impl = std::make_unique<Impl>();
  impl->where = HostPort{host, port, {}}.to_string();
  impl->daemon = std::string(daemon);
  const auto deadline = Clock::now() + timeout;
  impl->connect(host, port, deadline, timeout);
  impl->handshake(key_source, deadline, timeout);
  return RpcClient(std::move(impl));
}

json RpcClient::call(const std::string& method, json params, std::chrono::milliseconds timeout) {
  if (!connected()) {
    throw RpcConnectionError("not connected to " + (impl_ ? impl_->where : std::string("server")) +
                             " (closed after an earlier error; reconnect)");
  }
  // `{}` in C++ makes a JSON null; callers mean "no params".
  if (params.is_null()) params = json::object();
  const auto deadline = Clock::now() + timeout;
  const json id = impl_->next_id++;
  const std::string what = "waiting for '" + method + "' from";
  impl_->write_message(make_request(id, method, std::move(params)), deadline, timeout, what);
  RpcResponse response = impl_->read_response(id, deadline, timeout, what);
  if (!response.result) throw RpcError(response.error_code, response.error_message);
  return std::move(*response.result);
}

bool RpcClient::connected() const noexcept {
  if (!impl_ || !impl_->socket.is_open()) return false;
  // The server closes a connection idle for its idle timeout: that shows as
  // a hang-up now, before a request would be sent into it and lost.
  pollfd p{impl_->socket.native_handle(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
    impl_->close();
    return false;
  }
  return true;
}

void RpcClient::close() noexcept {
  if (impl_) impl_->close();
}

}  // namespace nabla::common
