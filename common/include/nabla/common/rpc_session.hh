#pragma once
// The authenticated channel of the control protocol (version 2), after the
// handshake in rpc.hh. Pure code over OpenSSL, no I/O, so it can be fuzzed;
// RpcServer and RpcClient use it, daemons and CLIs never see it.
//
// Both ends hold the key K, the two nonces of the handshake and the
// session's identity I: the daemon's kind and the control address the
// client reached, "injectd@10.0.0.12:7311" (session_identity below). The
// server takes the address from its side of the connection, the client
// from its own, so each computes I without trusting the other:
//   client proof   = HMAC-SHA256(K, server_nonce || client_nonce || I)
//   session key S  = HMAC-SHA256(K, "nabla-session" || server_nonce || client_nonce || I)
//   server proof   = HMAC-SHA256(S, "nabla-server")
// A connection meant for one daemon or node and delivered to another (a
// redirect, a relay, an operator who gave two nodes one key) yields two
// different I: the proofs fail, and no frame of one session opens on the
// other.
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

#include "nabla/common/ip_address.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/common/rpc_frame.hh"

namespace nabla::common {

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kHmacBytes>;

// "KIND@ADDR:PORT", "KIND@[ADDR]:PORT" for IPv6: the identity a session is
// bound to. An IPv4-mapped IPv6 address is written as IPv4 (a dual-stack
// listener sees IPv4 clients so), so both ends write the same text.
std::string session_identity(std::string_view daemon, const Endpoint& control_address);

Mac client_proof(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce,
                 std::string_view identity);
Key derive_session_key(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce,
                       std::string_view identity);
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
