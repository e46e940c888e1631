#include "nabla/common/rpc_frame.hh"

#include <stdexcept>

namespace nabla::common {

std::string encode_frame_header(std::size_t payload_bytes, std::size_t max_frame_bytes) {
  if (payload_bytes > max_frame_bytes) {
    throw std::length_error("frame of " + std::to_string(payload_bytes) + " bytes exceeds the " +
                            std::to_string(max_frame_bytes) + "-byte limit");
  }
  const auto n = static_cast<uint32_t>(payload_bytes);
  return {static_cast<char>((n >> 24) & 0xff), static_cast<char>((n >> 16) & 0xff),
          static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
}

std::string encode_frame(std::string_view payload, std::size_t max_frame_bytes) {
  std::string out = encode_frame_header(payload.size(), max_frame_bytes);
  out.reserve(kFrameHeaderBytes + payload.size());
  out.append(payload);
  return out;
}

void FrameDecoder::feed(std::string_view bytes) {
  if (poisoned_) return;  // nothing after a bad header is meaningful
  // Compact once the consumed prefix dominates, so the buffer stays bounded.
  if (pos_ > 0 && pos_ >= buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

FrameDecoder::Status FrameDecoder::next(std::string& frame) {
  if (poisoned_) return Status::kOversize;
  if (buffered() < kFrameHeaderBytes) return Status::kNeedMore;
  const auto* h = reinterpret_cast<const unsigned char*>(buffer_.data() + pos_);
  const uint32_t length =
      (uint32_t{h[0]} << 24) | (uint32_t{h[1]} << 16) | (uint32_t{h[2]} << 8) | uint32_t{h[3]};
  if (length > max_frame_bytes_) {
    poisoned_ = true;
    oversize_length_ = length;
    buffer_.clear();
    buffer_.shrink_to_fit();
    pos_ = 0;
    return Status::kOversize;
  }
  const std::size_t body = length + (sealed_ ? kSealOverheadBytes : 0);
  if (buffered() - kFrameHeaderBytes < body) return Status::kNeedMore;
  frame.assign(buffer_, pos_ + kFrameHeaderBytes, body);
  pos_ += kFrameHeaderBytes + body;
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  }
  return Status::kFrame;
}

}  // namespace nabla::common
