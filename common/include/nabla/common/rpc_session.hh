#pragma once
// The authenticated channel of the control protocol (version 2), after the
// handshake in rpc.hh. Pure code over OpenSSL, no I/O, so it can be fuzzed;
// RpcServer and RpcClient use it, daemons and CLIs never see it.
//
// Both ends hold the shared key K and the two nonces of the handshake:
//   client proof   = HMAC-SHA256(K, server_nonce || client_nonce)
//   session key S  = HMAC-SHA256(K, "nabla-session" || server_nonce || client_nonce)
//   server proof   = HMAC-SHA256(S, "nabla-server")
// Every later frame, in both directions, is sealed:
//   header (payload length) | seq (8 bytes, big-endian) | payload | MAC (32 bytes)
//   MAC = HMAC-SHA256(S, direction || seq || payload)
// with direction the byte 'C' for frames the client sends and 'S' for frames
// the server sends, and seq counting that direction's frames from 0. A frame
// whose MAC does not verify, or whose seq is not the next one expected, is
// tampered, injected, replayed or reordered: the receiver closes the
// connection. Fresh nonces give every connection its own session key, so a
// frame recorded on one connection fails on any other.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "nabla/common/rpc_auth.hh"
#include "nabla/common/rpc_frame.hh"

namespace nabla::common {

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kHmacBytes>;

Mac client_proof(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce);
Key derive_session_key(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce);
Mac server_proof(const Key& session_key);

// One end of a sealed connection: seals what it sends, opens what it gets.
class FrameSealer {
 public:
  enum class Peer { kClient, kServer };  // the end this sealer belongs to
  enum class Verdict { kOk, kTruncated, kBadMac, kOutOfOrder };

  FrameSealer(Key session_key, Peer self) : key_(std::move(session_key)), self_(self) {}

  // A whole wire frame: header | seq | payload | MAC. Throws
  // std::length_error when the payload exceeds max_frame_bytes.
  std::string seal(std::string_view payload, std::size_t max_frame_bytes = kMaxFrameBytes);
  // Checks one sealed body from the peer (seq | payload | MAC, as
  // FrameDecoder returns it once sealed). On kOk `payload` holds the payload
  // and the next expected sequence number advances; otherwise nothing changes
  // and the connection must be closed.
  Verdict open(std::string_view body, std::string& payload);
  uint64_t next_receive_seq() const noexcept { return receive_seq_; }

  // "MAC does not verify (tampered or injected)" and the like, for logs.
  static const char* describe(Verdict verdict) noexcept;

 private:
  Mac frame_mac(char direction, std::string_view seq_and_payload) const;

  Key key_;
  Peer self_;
  uint64_t send_seq_ = 0;
  uint64_t receive_seq_ = 0;
};

}  // namespace nabla::common
