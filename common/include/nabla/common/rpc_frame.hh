#pragma once
// Framing for the control protocol: every message is a 4-byte big-endian
// payload length followed by that many bytes of UTF-8 JSON. Payloads over
// kMaxFrameBytes (1 MiB) are refused. Pure code, no I/O, so it can be fuzzed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nabla::common {

inline constexpr std::size_t kFrameHeaderBytes = 4;
inline constexpr std::size_t kMaxFrameBytes = 1024 * 1024;

// Header + payload. Throws std::length_error if payload exceeds the limit.
std::string encode_frame(std::string_view payload, std::size_t max_frame_bytes = kMaxFrameBytes);

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
  // On kFrame, `frame` holds the payload (without header).
  Status next(std::string& frame);

  // The length the offending header announced (valid after kOversize).
  uint32_t oversize_length() const noexcept { return oversize_length_; }
  // Bytes buffered but not yet returned as frames.
  std::size_t buffered() const noexcept { return buffer_.size() - pos_; }

 private:
  std::size_t max_frame_bytes_;
  std::string buffer_;
  std::size_t pos_ = 0;  // start of the unconsumed bytes in buffer_
  bool poisoned_ = false;
  uint32_t oversize_length_ = 0;
};

}  // namespace nabla::common
