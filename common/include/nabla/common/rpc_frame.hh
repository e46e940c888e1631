#pragma once
// Framing for the control protocol: every message is a 4-byte big-endian
// payload length followed by that many bytes of UTF-8 JSON. Payloads over
// kMaxFrameBytes (1 MiB) are refused. Pure code, no I/O, so it can be fuzzed.
//
// After an authenticated handshake both directions switch to sealed frames
// (rpc_session.hh): header | 8-byte sequence number | payload | 32-byte MAC,
// where the header still counts the payload only, so the limit means the same
// in both modes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nabla::common {

inline constexpr std::size_t kFrameHeaderBytes = 4;
inline constexpr std::size_t kMaxFrameBytes = 1024 * 1024;
inline constexpr std::size_t kFrameSeqBytes = 8;
inline constexpr std::size_t kFrameMacBytes = 32;
inline constexpr std::size_t kSealOverheadBytes = kFrameSeqBytes + kFrameMacBytes;

// Header + payload. Throws std::length_error if payload exceeds the limit.
std::string encode_frame(std::string_view payload, std::size_t max_frame_bytes = kMaxFrameBytes);
// The 4-byte header alone, for a payload of this size (same limit check).
std::string encode_frame_header(std::size_t payload_bytes,
                                std::size_t max_frame_bytes = kMaxFrameBytes);

// Incremental decoder: feed() bytes as they arrive, then call next() until it
// stops returning kFrame. Once a header announces more than the limit the
// decoder is poisoned (every later next() returns kOversize): the stream is
// no longer trustworthy and the connection must be closed. Memory use is at
// most one frame plus whatever was fed after it.
class FrameDecoder {
 public:
  enum class Status { kFrame, kNeedMore, kOversize };

  explicit FrameDecoder(std::size_t max_frame_bytes = kMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes) {}

  void feed(std::string_view bytes);
  // On kFrame, `frame` holds the payload (without header); once sealed, the
  // sealed body: sequence number, payload and MAC (FrameSealer::open).
  Status next(std::string& frame);
  // Every later frame is a sealed one. Call it between two next() calls, at
  // the frame where the protocol switches.
  void expect_sealed() noexcept { sealed_ = true; }
  // Changes the limit for headers not yet read: a server reads its peer's
  // first frames under a small limit and raises it once the peer has
  // authenticated.
  void set_max_frame_bytes(std::size_t max_frame_bytes) noexcept {
    max_frame_bytes_ = max_frame_bytes;
  }
  std::size_t max_frame_bytes() const noexcept { return max_frame_bytes_; }

  // The length the offending header announced (valid after kOversize).
  uint32_t oversize_length() const noexcept { return oversize_length_; }
  // Bytes buffered but not yet returned as frames.
  std::size_t buffered() const noexcept { return buffer_.size() - pos_; }

 private:
  std::size_t max_frame_bytes_;
  std::string buffer_;
  std::size_t pos_ = 0;  // start of the unconsumed bytes in buffer_
  bool poisoned_ = false;
  bool sealed_ = false;
  uint32_t oversize_length_ = 0;
};

}  // namespace nabla::common
