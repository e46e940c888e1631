#pragma once
// TLS for the load engine's connections, through OpenSSL (private to loadgen).
//
// One TlsContext per load thread: the SSL_CTX with the trust anchors and
// the ALPN offer. The session the server last handed out goes to the
// TlsSessionCache (by the new-session callback, so a TLS 1.3 ticket that
// arrives after the handshake is kept too), shared by the threads and the
// rounds of a measurement. One TlsStream per connection over its non-blocking socket:
// the handshake is stepped from the engine's event loop (kWantRead and
// kWantWrite say what to wait for), and a reconnect offers the kept session,
// so the server may resume it.
//
// Never throws on the data path: read() and write() return the bytes moved or
// why not; error() is the failure's text (OpenSSL's error queue and the
// certificate verdict), for the first connect error a run reports.
#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "nabla/loadgen/engine.hh"

namespace nabla::loadgen {

class TlsSessionCache {
 public:
  TlsSessionCache() = default;
  ~TlsSessionCache();
  TlsSessionCache(const TlsSessionCache&) = delete;
  TlsSessionCache& operator=(const TlsSessionCache&) = delete;
  // Keeps `session` (taking its reference) in place of the one before.
  void keep(SSL_SESSION* session);
  // Offers the kept session, if any, on a connection about to handshake.
  void offer(SSL* ssl);

 private:
  std::mutex mutex_;
  SSL_SESSION* session_ = nullptr;
};

}  // namespace nabla::loadgen

namespace nabla::loadgen::detail {

enum class TlsIo { kDone, kWantRead, kWantWrite, kClosed, kFailed };

class TlsContext {
 public:
  // `alpn` is the one protocol offered ("h2" or "http/1.1"). Throws
  // std::runtime_error naming the CA file when it cannot be loaded.
  TlsContext(const TlsSpec& spec, const std::string& alpn);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  const TlsSpec& spec() const { return spec_; }
  const std::string& alpn() const { return alpn_; }
  TlsSessionCache& sessions() const { return *sessions_; }

 private:
  static int on_new_session(SSL* ssl, SSL_SESSION* session);

  TlsSpec spec_;
  std::string alpn_;
  SSL_CTX* ctx_ = nullptr;
  std::shared_ptr<TlsSessionCache> sessions_;
};

class TlsStream {
 public:
  // Over a connected socket; `peer` is the address literal, used for the
  // certificate check when the spec names no server.
  TlsStream(TlsContext& context, int fd, const std::string& peer);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // One step of the handshake: kDone, kWantRead/kWantWrite, or kFailed.
  TlsIo handshake();
  bool resumed() const;
  // Whether it offered a session an earlier connection was issued (the
  // server may still decline it; resumed() says whether it did).
  bool offered() const { return offered_; }
  // The protocol the server chose by ALPN, "" for none.
  std::string alpn_selected() const;

  struct Io {
    long bytes = 0;  // > 0 when data moved
    TlsIo status = TlsIo::kDone;
  };
  Io read(char* buffer, std::size_t size);
  Io write(const char* data, std::size_t size);
  const std::string& error() const { return error_; }

 private:
  TlsIo classify(int ret);

  SSL* ssl_ = nullptr;
  bool offered_ = false;
  std::string error_;
};

}  // namespace nabla::loadgen::detail
