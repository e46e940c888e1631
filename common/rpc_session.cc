#include "nabla/common/rpc_session.hh"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace nabla::common {
namespace {

constexpr std::string_view kSessionLabel = "nabla-session";
constexpr std::string_view kServerLabel = "nabla-server";

struct MacContextFree {
  void operator()(EVP_MAC_CTX* ctx) const noexcept { EVP_MAC_CTX_free(ctx); }
};

// HMAC-SHA256 over the concatenation of `parts`, without copying them.
Mac hmac_parts(const Key& key, std::initializer_list<std::string_view> parts) {
  static EVP_MAC* const hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (hmac == nullptr) throw std::runtime_error("HMAC unavailable in OpenSSL");
  std::unique_ptr<EVP_MAC_CTX, MacContextFree> ctx(EVP_MAC_CTX_new(hmac));
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  bool ok = ctx && EVP_MAC_init(ctx.get(), key.bytes().data(), key.bytes().size(), params) == 1;
  for (const std::string_view part : parts) {
    ok = ok && EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()),
                              part.size()) == 1;
  }
  Mac out{};
  std::size_t length = 0;
  ok = ok && EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) == 1;
  if (!ok || length != out.size()) throw std::runtime_error("HMAC-SHA256 failed");
  return out;
}

std::string_view bytes_of(const Nonce& nonce) {
  return {reinterpret_cast<const char*>(nonce.data()), nonce.size()};
}

std::string encode_seq(uint64_t seq) {
  std::string out(kFrameSeqBytes, '\0');
  for (std::size_t i = 0; i < kFrameSeqBytes; ++i) {
    out[i] = static_cast<char>((seq >> (8 * (kFrameSeqBytes - 1 - i))) & 0xff);
  }
  return out;
}

uint64_t decode_seq(std::string_view bytes) {
  uint64_t seq = 0;
  for (std::size_t i = 0; i < kFrameSeqBytes; ++i) {
    seq = seq << 8 | static_cast<unsigned char>(bytes[i]);
  }
  return seq;
}

}  // namespace

std::string session_identity(std::string_view daemon, const Endpoint& control_address) {
  Endpoint at = control_address;
  if (at.address.is_v6()) {
    static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(std::begin(kMappedPrefix), std::end(kMappedPrefix), at.address.data())) {
      std::array<uint8_t, 4> v4{};
      std::copy(at.address.data() + 12, at.address.data() + 16, v4.begin());
      at.address = IpAddress::v4(v4);
    }
  }
  return std::string(daemon) + "@" + to_string(at);
}

Mac client_proof(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce,
                 std::string_view identity) {
  // The nonces have a fixed length, so the identity after them is
  // unambiguous.
  return hmac_parts(key, {bytes_of(server_nonce), bytes_of(client_nonce), identity});
}

Key derive_session_key(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce,
                       std::string_view identity) {
  const Mac session =
      hmac_parts(key, {kSessionLabel, bytes_of(server_nonce), bytes_of(client_nonce), identity});
  return Key(std::vector<uint8_t>(session.begin(), session.end()));
}

Mac server_proof(const Key& session_key) {
  return hmac_parts(session_key, {kServerLabel});
}

Mac FrameSealer::frame_mac(char direction, std::string_view seq_and_payload) const {
  return hmac_parts(key_, {std::string_view(&direction, 1), seq_and_payload});
}

std::string FrameSealer::seal(std::string_view payload, std::size_t max_frame_bytes) {
  std::string frame = encode_frame_header(payload.size(), max_frame_bytes);
  frame.reserve(kFrameHeaderBytes + kSealOverheadBytes + payload.size());
  frame += encode_seq(send_seq_);
  frame.append(payload);
  const Mac mac = frame_mac(self_ == Peer::kClient ? 'C' : 'S',
                            std::string_view(frame).substr(kFrameHeaderBytes));
  frame.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  ++send_seq_;
  return frame;
}

FrameSealer::Verdict FrameSealer::open(std::string_view body, std::string& payload) {
  if (body.size() < kSealOverheadBytes) return Verdict::kTruncated;
  const std::string_view signed_part = body.substr(0, body.size() - kFrameMacBytes);
  const Mac expected = frame_mac(self_ == Peer::kClient ? 'S' : 'C', signed_part);
  const auto* got = reinterpret_cast<const uint8_t*>(body.data() + signed_part.size());
  if (!constant_time_equal(expected.data(), got, kFrameMacBytes)) return Verdict::kBadMac;
  if (decode_seq(signed_part) != receive_seq_) return Verdict::kOutOfOrder;
  payload.assign(signed_part.substr(kFrameSeqBytes));
  ++receive_seq_;
  return Verdict::kOk;
}

const char* FrameSealer::describe(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kTruncated:
      return "frame too short to carry a sequence number and MAC";
    case Verdict::kBadMac:
      return "frame MAC does not verify (tampered, injected or truncated)";
    case Verdict::kOutOfOrder:
      return "frame out of sequence (replayed or reordered)";
  }
  return "bad frame";
}

}  // namespace nabla::common
