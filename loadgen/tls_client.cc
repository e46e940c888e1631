#include "tls_client.hh"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include "nabla/common/ip_address.hh"

namespace nabla::loadgen::detail {
namespace {

// OpenSSL's error queue as one line (emptied).
std::string drain_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace
}  // namespace nabla::loadgen::detail

namespace nabla::loadgen {

std::shared_ptr<TlsSessionCache> make_tls_session_cache() {
  return std::make_shared<TlsSessionCache>();
}

TlsSessionCache::~TlsSessionCache() {
  if (session_ != nullptr) SSL_SESSION_free(session_);
}

void TlsSessionCache::keep(SSL_SESSION* session) {
  std::lock_guard lock(mutex_);
  if (session_ != nullptr) SSL_SESSION_free(session_);
  session_ = session;
}

void TlsSessionCache::offer(SSL* ssl) {
  std::lock_guard lock(mutex_);
  if (session_ != nullptr) SSL_set_session(ssl, session_);
}

}  // namespace nabla::loadgen

namespace nabla::loadgen::detail {

TlsContext::TlsContext(const TlsSpec& spec, const std::string& alpn)
    : spec_(spec),
      alpn_(alpn),
      sessions_(spec.sessions ? spec.sessions : std::make_shared<TlsSessionCache>()) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) throw std::runtime_error("TLS: SSL_CTX_new: " + drain_errors());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // Partial writes: the engine's output buffer is a string that moves as
  // bytes are dropped from its front.
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read-ahead: one read() takes whatever the socket holds (up to 64 KiB)
  // instead of a record's header and then its body, two syscalls a record.
  // The engine reads until SSL_read wants more, so no buffered record waits
  // for an epoll event that will not come.
  SSL_CTX_set_read_ahead(ctx_, 1);
  SSL_CTX_set_default_read_buffer_len(ctx_, 64 * 1024);
  if (spec.verify) {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    const bool loaded = spec.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_) == 1
                                             : SSL_CTX_load_verify_locations(
                                                   ctx_, spec.ca_file.c_str(), nullptr) == 1;
    if (!loaded) {
      const std::string why = drain_errors();
      SSL_CTX_free(ctx_);
      throw std::runtime_error(
          "TLS: cannot load the CA certificates " +
          (spec.ca_file.empty() ? std::string("(system default)") : "from " + spec.ca_file) + ": " +
          why);
    }
  } else {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  }
  std::string wire;
  wire.push_back(static_cast<char>(alpn.size()));
  wire += alpn;
  SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size()));
  if (spec.resume_sessions) {
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx_, &TlsContext::on_new_session);
    SSL_CTX_set_app_data(ctx_, this);
  } else {
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
  }
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

// Keeps the newest resumable session; returning 1 hands over the reference.
int TlsContext::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (self == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  self->sessions_->keep(session);
  return 1;
}

TlsStream::TlsStream(TlsContext& context, int fd, const std::string& peer) {
  ssl_ = SSL_new(context.get());
  if (ssl_ == nullptr) {
    error_ = "SSL_new: " + drain_errors();
    return;
  }
  SSL_set_fd(ssl_, fd);
  const std::string& name = context.spec().server_name.empty() ? peer : context.spec().server_name;
  const bool literal = common::IpAddress::parse(name).has_value();
  // SNI carries names only (RFC 6066, 3); the certificate is checked against
  // the name, or the address literal's IP SAN.
  if (!literal) SSL_set_tlsext_host_name(ssl_, name.c_str());
  if (context.spec().verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    if (literal) {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      SSL_set1_host(ssl_, name.c_str());
    }
  }
  if (context.spec().resume_sessions) context.sessions().offer(ssl_);
  offered_ = SSL_get0_session(ssl_) != nullptr;
  SSL_set_connect_state(ssl_);
}

TlsStream::~TlsStream() {
  // No close_notify: the socket is closed right after, and a load run does
  // not wait for the server's answer to it.
  if (ssl_ != nullptr) SSL_free(ssl_);
}

TlsIo TlsStream::classify(int ret) {
  const int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return TlsIo::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return TlsIo::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return TlsIo::kClosed;
    default: {
      error_ = drain_errors();
      const long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        error_ = std::string("certificate: ") + X509_verify_cert_error_string(verify) +
                 (error_.empty() ? "" : " (" + error_ + ")");
      }
      if (error_.empty()) error_ = err == SSL_ERROR_SYSCALL ? "connection closed" : "TLS error";
      ERR_clear_error();
      return TlsIo::kFailed;
    }
  }
}

TlsIo TlsStream::handshake() {
  if (ssl_ == nullptr) return TlsIo::kFailed;
  ERR_clear_error();
  const int ret = SSL_do_handshake(ssl_);
  return ret == 1 ? TlsIo::kDone : classify(ret);
}

bool TlsStream::resumed() const {
  return ssl_ != nullptr && SSL_session_reused(ssl_) == 1;
}

std::string TlsStream::alpn_selected() const {
  const unsigned char* data = nullptr;
  unsigned len = 0;
  if (ssl_ != nullptr) SSL_get0_alpn_selected(ssl_, &data, &len);
  return data == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(data), len);
}

TlsStream::Io TlsStream::read(char* buffer, std::size_t size) {
  ERR_clear_error();
  const int ret = SSL_read(ssl_, buffer, static_cast<int>(size));
  if (ret > 0) return {ret, TlsIo::kDone};
  return {0, classify(ret)};
}

TlsStream::Io TlsStream::write(const char* data, std::size_t size) {
  ERR_clear_error();
  const int ret = SSL_write(ssl_, data, static_cast<int>(size));
  if (ret > 0) return {ret, TlsIo::kDone};
  return {0, classify(ret)};
}

}  // namespace nabla::loadgen::detail
