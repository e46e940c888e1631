#include "nabla/common/rpc_frame.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace nabla::common {
namespace {

using Status = FrameDecoder::Status;

std::string header(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

TEST(EncodeFrame, BigEndianLengthPrefix) {
  EXPECT_EQ(encode_frame("{}"), std::string("\0\0\0\x02{}", 6));
  EXPECT_EQ(encode_frame(""), std::string("\0\0\0\0", 4));
  const std::string big(300, 'x');
  EXPECT_EQ(encode_frame(big).substr(0, 4), std::string("\0\0\x01\x2c", 4));
  EXPECT_EQ(encode_frame(std::string(kMaxFrameBytes, 'a')).size(), kMaxFrameBytes + 4);
  EXPECT_THROW(encode_frame(std::string(kMaxFrameBytes + 1, 'a')), std::length_error);
  EXPECT_THROW(encode_frame("12345", 4), std::length_error);
}

TEST(FrameDecoder, WholeAndSplitFrames) {
  FrameDecoder d;
  std::string frame;
  EXPECT_EQ(d.next(frame), Status::kNeedMore);
  const std::string stream = encode_frame("hello") + encode_frame("") + encode_frame("world!");
  // Feed one byte at a time: frames appear exactly when complete.
  std::vector<std::string> got;
  for (const char c : stream) {
    d.feed(std::string_view(&c, 1));
    while (d.next(frame) == Status::kFrame) got.push_back(frame);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "hello");
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(got[2], "world!");
  EXPECT_EQ(d.buffered(), 0u);

  d.feed(stream + header(10) + "abc");
  EXPECT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, "hello");
  EXPECT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, "world!");
  EXPECT_EQ(d.next(frame), Status::kNeedMore);
  EXPECT_EQ(d.buffered(), 7u);
  d.feed("defghij");
  EXPECT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, "abcdefghij");
}

TEST(FrameDecoder, LimitIsInclusiveAndOversizePoisons) {
  FrameDecoder d(8);
  std::string frame;
  d.feed(header(8) + "12345678");
  EXPECT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, "12345678");
  d.feed(header(9));
  EXPECT_EQ(d.next(frame), Status::kOversize);
  EXPECT_EQ(d.oversize_length(), 9u);
  d.feed(header(1) + "x");  // nothing after a bad header is trusted
  EXPECT_EQ(d.next(frame), Status::kOversize);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameDecoder, DefaultLimitIsOneMiB) {
  FrameDecoder d;
  std::string frame;
  d.feed(header(1024 * 1024 + 1));
  EXPECT_EQ(d.next(frame), Status::kOversize);
  EXPECT_EQ(d.oversize_length(), 1048577u);
  FrameDecoder huge;
  huge.feed(header(0xffffffffu));
  EXPECT_EQ(huge.next(frame), Status::kOversize);
  EXPECT_EQ(huge.oversize_length(), 0xffffffffu);
}

TEST(FrameDecoder, SealedFramesCarrySequenceAndMacBeyondTheLength) {
  FrameDecoder d(8);
  std::string frame;
  d.feed(encode_frame("plain"));
  const std::string sealed_body =
      std::string(kFrameSeqBytes, 's') + "12345678" + std::string(kFrameMacBytes, 'm');
  d.feed(encode_frame_header(8) + sealed_body.substr(0, 30));
  ASSERT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, "plain");
  d.expect_sealed();  // the protocol switches here
  EXPECT_EQ(d.next(frame), Status::kNeedMore);
  d.feed(sealed_body.substr(30));
  ASSERT_EQ(d.next(frame), Status::kFrame);
  EXPECT_EQ(frame, sealed_body);
  // The limit still applies to the payload the header announces.
  FrameDecoder over(8);
  over.expect_sealed();
  over.feed(header(9));
  EXPECT_EQ(over.next(frame), Status::kOversize);
  EXPECT_EQ(over.oversize_length(), 9u);
  EXPECT_THROW(encode_frame_header(9, 8), std::length_error);
}

TEST(FrameDecoder, BufferStaysBoundedOverManyFrames) {
  FrameDecoder d;
  std::string frame;
  const std::string one = encode_frame(std::string(1000, 'z'));
  for (int i = 0; i < 10'000; ++i) {
    d.feed(one.substr(0, 500));
    EXPECT_EQ(d.next(frame), Status::kNeedMore);
    d.feed(one.substr(500));
    ASSERT_EQ(d.next(frame), Status::kFrame);
    ASSERT_EQ(frame.size(), 1000u);
  }
  EXPECT_EQ(d.buffered(), 0u);
}

}  // namespace
}  // namespace nabla::common
