// RpcServer: Asio-based control server. One Connection object per client,
// all running on the caller's io_context; see rpc.hh for the protocol.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <cerrno>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>

#include "nabla/common/error.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/log.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_session.hh"

namespace nabla::common {
namespace detail {

using asio::ip::tcp;
using nlohmann::json;

// After the last frame to a misbehaving client, how long we keep draining its
// input before closing, so our error frame is not destroyed by a TCP reset.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr std::chrono::milliseconds kAcceptRetry{100};
constexpr std::size_t kReadChunk = 64 * 1024;

class Connection;

// The peer whose unauthenticated connections are counted together: an IPv4
// address (an IPv4-mapped IPv6 one as IPv4), or the /64 of an IPv6 address,
// since one host commonly holds a whole /64.
std::string peer_group_of(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(peer);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), 4);
  }
  if (peer.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(peer);
    const auto* b = reinterpret_cast<const char*>(&v6.sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) return std::string(b + 12, 4);
    return std::string(b, 8);
  }
  return {};
}

// Counts a refusal; true when it is worth a log line (the 1st, 2nd, 4th,
// 8th, ... of its kind), so a flood of refusals cannot flood the log.
bool count_and_should_log(std::atomic<std::uint64_t>& counter) {
  const std::uint64_t n = ++counter;
  return (n & (n - 1)) == 0;
}

// Keepalive, so a peer that vanished without a FIN or RST frees its slot.
void enable_keepalive(int fd, const RpcServerOptions& options) {
  if (options.keepalive_idle.count() <= 0) return;
  const int on = 1;
  const int idle = static_cast<int>(options.keepalive_idle.count());
  const int interval =
      static_cast<int>(std::max<std::int64_t>(1, options.keepalive_interval.count()));
  const int probes = std::max(1, options.keepalive_probes);
  if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0) {
    log_debug("control: cannot enable TCP keepalive: ", std::system_category().message(errno));
  }
}

// The keys a server accepts: the fixed ones plus those of its key file,
// reloaded when the file changes. io thread only.
class KeyRing {
 public:
  KeyRing(std::vector<Key> fixed, std::optional<std::string> file)
      : fixed_(std::move(fixed)), file_(std::move(file)) {
    if (file_)
      load(stat_of(*file_));
    else
      keys_ = fixed_;
  }
  const std::vector<Key>& keys() const noexcept { return keys_; }
  bool empty() const noexcept { return keys_.empty(); }

  // Reloads the key file if it changed since it was last read.
  void refresh() noexcept {
    if (!file_) return;
    try {
      const struct stat now = stat_of(*file_);
      if (now.st_ino == seen_.st_ino && now.st_dev == seen_.st_dev &&
          now.st_size == seen_.st_size && now.st_mtim.tv_sec == seen_.st_mtim.tv_sec &&
          now.st_mtim.tv_nsec == seen_.st_mtim.tv_nsec && now.st_mode == seen_.st_mode) {
        return;
      }
      load(now);
      log_info("control: reloaded ", keys_.size() - fixed_.size(), " key(s) from ", *file_);
    } catch (const std::exception& e) {
      log_warn("control: keeping the keys loaded before: ", e.what());
    }
  }

 private:
  static struct stat stat_of(const std::string& path) {
    struct stat st {};
    check_syscall("stat " + path, ::stat(path.c_str(), &st));
    return st;
  }
  void load(const struct stat& st) {
    std::vector<Key> keys = fixed_;
    for (Key& k : load_keys(*file_)) keys.push_back(std::move(k));
    keys_ = std::move(keys);
    seen_ = st;
  }

  std::vector<Key> fixed_;
  std::optional<std::string> file_;
  std::vector<Key> keys_;
  struct stat seen_ {};
};

struct ServerState : std::enable_shared_from_this<ServerState> {
  ServerState(asio::io_context& io_in, RpcServerOptions options_in)
      : io(io_in),
        options(std::move(options_in)),
        key_ring(options.keys, options.key_file),
        acceptor(io_in),
        retry_timer(io_in) {}

  void accept();
  void on_acceptable(const std::error_code& ec);
  // Takes the accepted fd, or closes it when a limit says so.
  void admit(FileDescriptor owned, const sockaddr_storage& peer);
  // Whether `group` may open one more unauthenticated connection.
  bool peer_has_room(const std::string& group) const {
    const auto it = unauthenticated_by_peer.find(group);
    return it == unauthenticated_by_peer.end() || it->second < options.max_unauthenticated_per_peer;
  }
  void release_unauthenticated(const std::string& group) {
    const auto it = unauthenticated_by_peer.find(group);
    if (it == unauthenticated_by_peer.end()) return;
    if (--it->second == 0) unauthenticated_by_peer.erase(it);
  }
  void stop_now();
  // Copies the handler out under the lock so it runs unlocked.
  std::optional<RpcServer::CallerHandler> find_method(const std::string& name) {
    std::lock_guard lock(methods_mutex);
    const auto it = methods.find(name);
    if (it == methods.end()) return std::nullopt;
    return it->second;
  }

  asio::io_context& io;
  const RpcServerOptions options;
  KeyRing key_ring;  // io thread only
  tcp::acceptor acceptor;
  tcp protocol = tcp::v4();
  asio::steady_timer retry_timer;
  std::mutex methods_mutex;
  std::map<std::string, RpcServer::CallerHandler> methods;     // guarded by methods_mutex
  std::uint64_t connections_accepted = 0;                      // io thread only
  std::set<std::shared_ptr<Connection>> connections;           // io thread only
  std::map<std::string, std::size_t> unauthenticated_by_peer;  // io thread only
  std::atomic<std::size_t> connection_count{0};
  std::atomic<std::uint64_t> refused_full{0};
  std::atomic<std::uint64_t> refused_per_peer{0};
  std::atomic<std::uint64_t> auth_timeouts{0};
  std::atomic<std::uint64_t> idle_closed{0};
  std::atomic<uint16_t> port{0};
  bool stopped = false;  // io thread only
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerState> server, tcp::socket socket, std::string peer_group)
      : server_(std::move(server)),
        socket_(std::move(socket)),
        timer_(server_->io),
        decoder_(std::min(server_->options.max_frame_bytes,
                          server_->options.max_unauthenticated_frame_bytes)),
        peer_group_(std::move(peer_group)) {
    ++server_->unauthenticated_by_peer[peer_group_];
  }

  void start();
  void close();

 private:
  void read();
  void on_read(const std::error_code& ec, std::size_t n);
  // Handles the requests read so far while the unsent answers allow, then
  // reads on once every one is handled.
  void handle_buffered_frames();
  bool answers_pending() const noexcept {
    return unsent_bytes_ >= server_->options.max_unsent_bytes;
  }
  void become_authenticated();
  void handle_frame(const std::string& frame);
  void handle_payload(const std::string& payload);
  void handle_auth(const RpcRequest& request);
  void refuse_auth(const nlohmann::json& id, const std::string& why);
  std::string peer_text() const;
  // This server's kind and its address on this connection, as the client
  // reached it (the advertised address when there is one).
  std::string local_identity();
  void dispatch(const RpcRequest& request);
  json call_handler(const RpcServer::CallerHandler& handler, const RpcRequest& request);
  void send(const json& message);
  void write_next();
  void finish();  // send what is queued, then drain and close
  void arm_timer(std::chrono::milliseconds after);
  void on_timer();

  std::shared_ptr<ServerState> server_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  FrameDecoder decoder_;
  std::array<char, kReadChunk> read_buf_{};
  std::deque<std::string> out_;
  std::size_t unsent_bytes_ = 0;  // the sum of out_'s sizes
  std::string peer_group_;        // counted in unauthenticated_by_peer until authenticated
  RpcCaller caller_;              // key_id set once authenticated
  std::string identity_;          // the session identity of this end (rpc_session.hh)
  Nonce nonce_{};
  std::optional<FrameSealer> sealer_;  // set once authenticated with a key
  bool authenticated_ = false;
  bool writing_ = false;
  bool reading_ = false;
  bool finishing_ = false;  // no more requests are processed
  bool draining_ = false;   // send side shut down, discarding input
  bool closed_ = false;
};

void Connection::start() {
  caller_.connection = ++server_->connections_accepted;
  caller_.peer = peer_text();
  nonce_ = random_nonce();
  identity_ = local_identity();
  const bool auth_required = !server_->key_ring.empty();
  json challenge = {{"version", kProtocolVersion},
                    {"nonce", to_hex(nonce_.data(), nonce_.size())},
                    {"auth_required", auth_required}};
  if (auth_required) challenge["identity"] = identity_;
  send(make_notification("auth.challenge", challenge));
  if (!auth_required) {
    become_authenticated();
  } else {
    arm_timer(server_->options.auth_timeout);
  }
  read();
}

void Connection::become_authenticated() {
  authenticated_ = true;
  server_->release_unauthenticated(peer_group_);
  decoder_.set_max_frame_bytes(server_->options.max_frame_bytes);
  if (server_->options.idle_timeout.count() > 0) {
    arm_timer(server_->options.idle_timeout);
  } else {
    timer_.cancel();
  }
}

void Connection::arm_timer(std::chrono::milliseconds after) {
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->on_timer();
  });
}

void Connection::on_timer() {
  if (closed_) return;
  if (draining_) {
    close();
  } else if (!authenticated_) {
    if (count_and_should_log(server_->auth_timeouts)) {
      log_info("control: closing connection from ", peer_text(),
               " that did not authenticate within ", server_->options.auth_timeout.count(), "ms (",
               server_->auth_timeouts.load(), " so far)");
    }
    close();
  } else {
    ++server_->idle_closed;
    log_info("control: closing connection from ", peer_text(), ": idle for ",
             server_->options.idle_timeout.count(), "ms");
    close();
  }
}

void Connection::read() {
  if (closed_ || reading_) return;
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buf_),
                          [self = shared_from_this()](const std::error_code& ec, std::size_t n) {
                            self->reading_ = false;
                            self->on_read(ec, n);
                          });
}

void Connection::on_read(const std::error_code& ec, std::size_t n) {
  if (closed_) return;
  if (ec) {
    close();  // EOF, reset, or aborted by close()
    return;
  }
  if (draining_) {
    read();
    return;
  }
  if (authenticated_ && server_->options.idle_timeout.count() > 0) {
    arm_timer(server_->options.idle_timeout);
  }
  decoder_.feed(std::string_view(read_buf_.data(), n));
  handle_buffered_frames();
}

void Connection::handle_buffered_frames() {
  std::string frame;
  // Backpressure: a request is handled only while the answers before it
  // that wait to be written stay under the bound; the write handler resumes.
  while (!finishing_ && !closed_ && !answers_pending()) {
    const FrameDecoder::Status status = decoder_.next(frame);
    if (status == FrameDecoder::Status::kNeedMore) {
      read();
      return;
    }
    if (status == FrameDecoder::Status::kOversize) {
      send(make_error(nullptr, rpc_code::kFrameTooLarge,
                      "frame of " + std::to_string(decoder_.oversize_length()) +
                          " bytes exceeds the " + std::to_string(decoder_.max_frame_bytes()) +
                          "-byte limit" + (authenticated_ ? "" : " before authentication") +
                          "; closing connection"));
      finish();
      return;
    }
    handle_frame(frame);
  }
}

std::string Connection::peer_text() const {
  std::error_code ec;
  const auto peer = socket_.remote_endpoint(ec);
  return ec ? std::string("unknown peer") : peer.address().to_string();
}

void Connection::handle_frame(const std::string& frame) {
  if (!sealer_) {
    handle_payload(frame);
    return;
  }
  std::string payload;
  const FrameSealer::Verdict verdict = sealer_->open(frame, payload);
  if (verdict != FrameSealer::Verdict::kOk) {
    // Nothing from this peer can be trusted any more; others are unaffected.
    log_warn("control: closing connection from ", peer_text(), ": ", FrameSealer::describe(verdict),
             " at client frame ", sealer_->next_receive_seq());
    close();
    return;
  }
  handle_payload(payload);
}

void Connection::handle_payload(const std::string& payload) {
  ParsedRequest parsed = parse_request(payload);
  if (auto* error = std::get_if<json>(&parsed)) {
    send(*error);
    if (!authenticated_) finish();
    return;
  }
  const RpcRequest& request = std::get<RpcRequest>(parsed);
  if (!authenticated_) {
    if (request.method == "auth.response") {
      handle_auth(request);
    } else {
      send(make_error(request.id.value_or(nullptr), rpc_code::kNotAuthenticated,
                      "not authenticated: answer auth.challenge with auth.response first"));
      finish();
    }
    return;
  }
  dispatch(request);
}

namespace {

// A hex field of exactly N bytes.
template <std::size_t N>
bool hex_field(const json& params, const char* name, std::array<uint8_t, N>& out) {
  const auto it = params.find(name);
  std::vector<uint8_t> bytes;
  if (it == params.end() || !it->is_string() ||
      !from_hex(it->get_ref<const std::string&>(), bytes) || bytes.size() != N) {
    return false;
  }
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return true;
}

// A string an unauthenticated client sent, fit for a log line and an error
// message: at most 80 characters, anything but printable ASCII as '?'.
std::string printable(const json& value) {
  constexpr std::size_t kMax = 80;
  const std::string& text = value.get_ref<const std::string&>();
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  return out + (text.size() > kMax ? "...'" : "'");
}

}  // namespace

std::string Connection::local_identity() {
  const auto& advertised = server_->options.advertise;
  if (advertised) return session_identity(server_->options.daemon, *advertised);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  std::optional<Endpoint> at;
  if (::getsockname(socket_.native_handle(), reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    at = endpoint_of(local);
  }
  // Without its own address no client can name it: authentication fails.
  return at ? session_identity(server_->options.daemon, *at) : server_->options.daemon + "@?";
}

void Connection::refuse_auth(const json& id, const std::string& why) {
  log_warn("control: authentication failed from ", peer_text(), ": ", why);
  send(make_error(id, rpc_code::kAuthFailed, "authentication failed: " + why));
  finish();
}

void Connection::handle_auth(const RpcRequest& request) {
  const json id = request.id.value_or(nullptr);
  const json& params = request.params.is_object() ? request.params : json::object();
  const auto version = params.find("version");
  if (version == params.end() || !version->is_number_integer() || *version != kProtocolVersion) {
    refuse_auth(id, "client speaks control protocol version " +
                        (version == params.end() ? std::string("1") : dump_json(*version)) +
                        ", this server speaks version " + std::to_string(kProtocolVersion) +
                        "; use the same nabla release on both ends");
    return;
  }
  Nonce client_nonce{};
  Mac answer{};
  if (!hex_field(params, "nonce", client_nonce) || !hex_field(params, "hmac", answer)) {
    refuse_auth(id, "auth.response needs nonce and hmac, 64 hex digits each");
    return;
  }
  const auto meant = params.find("identity");
  if (meant == params.end() || !meant->is_string()) {
    refuse_auth(id, "auth.response needs identity, the daemon and address the client meant");
    return;
  }
  // Said in the clear, but bound by the proof below: a relay that rewrites
  // it breaks the proof.
  if (meant->get_ref<const std::string&>() != identity_) {
    refuse_auth(id, "this is " + identity_ + ", not " + printable(*meant) +
                        " as the client meant: a session is bound to the daemon and node it "
                        "was meant for (a redirected or relayed connection, or a NAT between "
                        "client and daemon)");
    return;
  }
  // Every key is tried, so the time taken does not tell which one matched.
  const Key* matched = nullptr;
  for (const Key& key : server_->key_ring.keys()) {
    const Mac expected = client_proof(key, nonce_, client_nonce, identity_);
    if (constant_time_equal(expected.data(), answer.data(), kHmacBytes) && matched == nullptr) {
      matched = &key;
    }
  }
  if (matched == nullptr) {
    const auto claimed = params.find("key_id");
    const std::string which = claimed != params.end() && claimed->is_string()
                                  ? "key " + printable(*claimed)
                                  : std::string("the client's key");
    refuse_auth(id, "wrong key: " + which + " is not a key of " + identity_ +
                        "; every node has its own key: use this node's (a coordinator finds it "
                        "as /etc/nabla/keys/HOST.key)");
    return;
  }
  caller_.key_id = key_id(*matched);
  Key session = derive_session_key(*matched, nonce_, client_nonce, identity_);
  const Mac proof = server_proof(session);
  become_authenticated();
  send(make_result(id, {{"authenticated", true}, {"proof", to_hex(proof.data(), proof.size())}}));
  // The result above is the last plain frame in either direction.
  sealer_.emplace(std::move(session), FrameSealer::Peer::kServer);
  decoder_.expect_sealed();
}

json Connection::call_handler(const RpcServer::CallerHandler& handler, const RpcRequest& request) {
  const json id = request.id.value_or(nullptr);
  try {
    return make_result(id, handler(request.params, caller_));
  } catch (const RpcError& e) {
    return make_error(id, e.code(), e.what());
  } catch (const std::invalid_argument& e) {
    return make_error(id, rpc_code::kInvalidParams, e.what());
  } catch (const nlohmann::json::exception& e) {
    // A handler reading params with .at()/.get<>() on a wrong type: the
    // caller's fault, so -32602, with nlohmann's text naming the problem.
    return make_error(id, rpc_code::kInvalidParams, std::string("invalid params: ") + e.what());
  } catch (const std::exception& e) {
    log_warn("control: method ", request.method, " failed: ", e.what());
    return make_error(id, rpc_code::kInternalError, e.what());
  } catch (...) {
    return make_error(id, rpc_code::kInternalError, "unknown internal error");
  }
}

void Connection::dispatch(const RpcRequest& request) {
  json response;
  if (request.method == "auth.response") {
    response = make_result(request.id.value_or(nullptr), {{"authenticated", true}});
  } else if (auto handler = request.method.rfind("auth.", 0) == 0
                                ? std::nullopt
                                : server_->find_method(request.method)) {
    response = call_handler(*handler, request);
  } else {
    response = make_error(request.id.value_or(nullptr), rpc_code::kMethodNotFound,
                          "method '" + request.method + "' not found");
  }
  if (request.id) send(response);  // notifications are never answered
}

void Connection::send(const json& message) {
  if (closed_ || finishing_) return;
  const auto frame = [this](const std::string& payload) {
    const std::size_t limit = server_->options.max_frame_bytes;
    return sealer_ ? sealer_->seal(payload, limit) : encode_frame(payload, limit);
  };
  try {
    out_.push_back(frame(dump_json(message)));
  } catch (const std::length_error& e) {
    out_.push_back(
        frame(dump_json(make_error(message.value("id", json(nullptr)), rpc_code::kInternalError,
                                   std::string("response too large: ") + e.what()))));
  }
  unsent_bytes_ += out_.back().size();
  if (!writing_) write_next();
}

void Connection::write_next() {
  if (out_.empty() || closed_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_.front()),
                    [self = shared_from_this()](const std::error_code& ec, std::size_t) {
                      if (self->closed_) return;
                      if (ec) {
                        self->close();
                        return;
                      }
                      self->unsent_bytes_ -= self->out_.front().size();
                      self->out_.pop_front();
                      if (!self->out_.empty()) {
                        self->write_next();
                        if (!self->finishing_) self->handle_buffered_frames();
                        return;
                      }
                      self->writing_ = false;
                      if (self->finishing_) {
                        self->finish();
                      } else {
                        self->handle_buffered_frames();
                      }
                    });
}

void Connection::finish() {
  finishing_ = true;
  if (writing_ || closed_ || draining_) return;  // resumes from the write handler
  // Everything is written: half-close, then discard input until EOF or the
  // linger time, so the peer reads our last frame before the connection dies.
  draining_ = true;
  std::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  arm_timer(kLingerTime);
  read();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  std::error_code ignored;
  timer_.cancel();
  socket_.close(ignored);
  if (!authenticated_) server_->release_unauthenticated(peer_group_);
  if (server_->connections.erase(shared_from_this()) > 0) --server_->connection_count;
}

void ServerState::accept() {
  if (stopped) return;
  acceptor.async_wait(
      tcp::acceptor::wait_read,
      [self = shared_from_this()](const std::error_code& ec) { self->on_acceptable(ec); });
}

void ServerState::on_acceptable(const std::error_code& ec) {
  if (stopped || ec == asio::error::operation_aborted) return;
  // accept4 so the connection fd is CLOEXEC from birth (daemons fork
  // iptables); asio's own accept would leave a window without it.
  sockaddr_storage peer{};
  socklen_t peer_len = sizeof peer;
  const int fd = ec ? -1
                    : ::accept4(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&peer),
                                &peer_len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    const int err = ec ? ec.value() : errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) {
      accept();
      return;
    }
    // EMFILE and friends: back off instead of spinning.
    log_warn("control: accept failed: ", std::system_category().message(err));
    retry_timer.expires_after(kAcceptRetry);
    retry_timer.async_wait([self = shared_from_this()](const std::error_code& wait_ec) {
      if (!wait_ec) self->accept();
    });
    return;
  }
  admit(FileDescriptor(fd), peer);
  accept();
}

void ServerState::admit(FileDescriptor owned, const sockaddr_storage& peer) {
  if (connections.size() >= options.max_connections) {
    if (count_and_should_log(refused_full)) {
      log_warn("control: refusing connection: ", options.max_connections, " already open (",
               refused_full.load(), " refused so far)");
    }
    return;
  }
  std::string group = peer_group_of(peer);
  if (!peer_has_room(group)) {
    if (count_and_should_log(refused_per_peer)) {
      log_warn("control: refusing connection: its peer already holds ",
               options.max_unauthenticated_per_peer, " unauthenticated connections (",
               refused_per_peer.load(), " refused so far)");
    }
    return;
  }
  tcp::socket socket(io);
  std::error_code assign_ec;
  socket.assign(protocol, owned.get(), assign_ec);
  if (assign_ec) return;
  owned.release();
  // Small request/response frames: never wait for Nagle.
  socket.set_option(tcp::no_delay(true), assign_ec);
  enable_keepalive(socket.native_handle(), options);
  auto connection =
      std::make_shared<Connection>(shared_from_this(), std::move(socket), std::move(group));
  key_ring.refresh();
  connections.insert(connection);
  ++connection_count;
  try {
    connection->start();
  } catch (const std::exception& e) {  // e.g. RAND_bytes failure
    log_error("control: cannot start connection: ", e.what());
    connection->close();
  }
}

void ServerState::stop_now() {
  if (stopped) return;
  stopped = true;
  std::error_code ignored;
  acceptor.close(ignored);
  retry_timer.cancel();
  const auto open = connections;  // close() erases from the set
  for (const auto& connection : open) connection->close();
}

}  // namespace detail

RpcServer::RpcServer(asio::io_context& io, RpcServerOptions options) {
  const auto address = IpAddress::parse(options.listen_address);
  if (!address) {
    throw std::invalid_argument("bad listen address '" + options.listen_address +
                                "': expected an IPv4 or IPv6 address");
  }
  if (!address->is_loopback() && options.keys.empty() && !options.key_file) {
    throw std::invalid_argument(
        "refusing to listen on " + options.listen_address +
        " without a key: a non-loopback control port needs --key-file (mode 0600, 32+ random "
        "bytes as hex)");
  }
  if (options.max_frame_bytes > kMaxFrameBytes) options.max_frame_bytes = kMaxFrameBytes;
  const std::string where = options.listen_address + ":" + std::to_string(options.port);
  state_ = std::make_shared<detail::ServerState>(io, std::move(options));
  auto& s = *state_;
  s.protocol = address->is_v4() ? asio::ip::tcp::v4() : asio::ip::tcp::v6();
  FileDescriptor fd = FileDescriptor::socket(address->af(), SOCK_STREAM | SOCK_NONBLOCK, 0);
  try {
    s.acceptor.assign(s.protocol, fd.get());
    fd.release();
    s.acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    s.acceptor.bind(
        asio::ip::tcp::endpoint(asio::ip::make_address(s.options.listen_address), s.options.port));
    s.acceptor.listen(asio::socket_base::max_listen_connections);
    s.acceptor.non_blocking(true);
  } catch (const std::system_error& e) {
    throw std::system_error(e.code(), "control server on " + where);
  }
  s.port = s.acceptor.local_endpoint().port();
  if (s.options.advertise) {
    log_info("control: sessions bound to ",
             session_identity(s.options.daemon, *s.options.advertise),
             " (advertised; clients must connect through that address)");
  }
  s.accept();
}

RpcServer::~RpcServer() {
  if (state_) state_->stop_now();
}

void RpcServer::add_method(std::string name, Handler handler) {
  add_method_with_caller(std::move(name), [handler = std::move(handler)](
                                              const nlohmann::json& params, const RpcCaller&) {
    return handler(params);
  });
}

void RpcServer::add_method_with_caller(std::string name, CallerHandler handler) {
  if (name.rfind("auth.", 0) == 0) {
    throw std::invalid_argument("method names starting with 'auth.' are reserved: " + name);
  }
  std::lock_guard lock(state_->methods_mutex);
  state_->methods[std::move(name)] = std::move(handler);
}

uint16_t RpcServer::port() const noexcept {
  return state_->port;
}

void RpcServer::stop() {
  asio::post(state_->io, [state = state_] { state->stop_now(); });
}

std::size_t RpcServer::connection_count() const noexcept {
  return state_->connection_count;
}

RpcServerCounters RpcServer::counters() const noexcept {
  return RpcServerCounters{state_->refused_full.load(), state_->refused_per_peer.load(),
                           state_->auth_timeouts.load(), state_->idle_closed.load()};
}

}  // namespace nabla::common
