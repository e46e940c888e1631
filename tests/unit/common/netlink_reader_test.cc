// The in-tree netlink reader on hand-built bytes: message boundaries,
// attribute bounds, nesting, validation and the errno of NLMSG_ERROR.
#include "nabla/common/netlink_reader.hh"

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <vector>

namespace nabla::common::netlink {
namespace {

// Bytes laid out by hand, on the heap at exactly their length (so a read
// past them is an AddressSanitizer report in the sanitized builds).
struct Bytes {
  std::vector<std::byte> data;

  size_t put(const void* p, size_t n) {
    const size_t at = data.size();
    data.resize(at + n);
    std::memcpy(data.data() + at, p, n);
    return at;
  }
  void pad() { data.resize(NLMSG_ALIGN(data.size())); }
  // A message header of nlmsg_len `len` (0: set by end_message).
  size_t message(uint16_t type, uint32_t len = 0, uint32_t seq = 1) {
    pad();
    nlmsghdr h{};
    h.nlmsg_len = len;
    h.nlmsg_type = type;
    h.nlmsg_seq = seq;
    return put(&h, sizeof h);
  }
  void end_message(size_t at) { header(at)->nlmsg_len = static_cast<uint32_t>(data.size() - at); }
  // An attribute of nla_len `len` (default: its header and payload).
  size_t attr(uint16_t type, std::initializer_list<uint8_t> payload,
              std::optional<uint16_t> len = std::nullopt) {
    pad();
    nlattr a{};
    a.nla_type = type;
    a.nla_len = len.value_or(static_cast<uint16_t>(NLA_HDRLEN + payload.size()));
    const size_t at = put(&a, sizeof a);
    for (uint8_t b : payload) put(&b, 1);
    return at;
  }
  void end_nest(size_t at) {
    auto* a = reinterpret_cast<nlattr*>(data.data() + at);
    a->nla_len = static_cast<uint16_t>(data.size() - at);
  }
  nlmsghdr* header(size_t at) { return reinterpret_cast<nlmsghdr*>(data.data() + at); }
  std::span<const std::byte> all() const { return data; }
};

size_t count_messages(std::span<const std::byte> bytes) {
  MessageWalk walk(bytes);
  size_t n = 0;
  while (walk.next() != nullptr) ++n;
  return n;
}

TEST(MessageWalk, WalksAlignedMessagesAndAnUnpaddedLastOne) {
  Bytes b;
  b.end_message(b.message(20));
  const size_t second = b.message(21);
  b.put("abc", 3);  // nlmsg_len 19: the next message starts at 20
  b.end_message(second);
  const size_t third = b.message(22);
  b.put("x", 1);  // the last one unpadded, as the buffer ends
  b.end_message(third);
  MessageWalk walk(b.all());
  EXPECT_EQ(walk.next()->nlmsg_type, 20);
  EXPECT_EQ(walk.next()->nlmsg_type, 21);
  EXPECT_EQ(walk.next()->nlmsg_type, 22);
  EXPECT_EQ(walk.next(), nullptr);
  EXPECT_EQ(walk.next(), nullptr);
}

TEST(MessageWalk, StopsAtAMessageThatIsNotWhole) {
  for (uint32_t len : {0u, 8u, 15u}) {  // zero-length, and shorter than the header
    Bytes b;
    b.end_message(b.message(20));
    b.message(21, len);
    b.end_message(b.message(22));  // never reached
    EXPECT_EQ(count_messages(b.all()), 1u) << len;
  }
  Bytes over;
  over.end_message(over.message(20));
  over.message(21, 64);  // overruns the buffer
  EXPECT_EQ(count_messages(over.all()), 1u);
  EXPECT_EQ(count_messages(over.all().first(10)), 0u);  // not even a header
  EXPECT_EQ(count_messages({}), 0u);
}

TEST(AttrWalk, WalksAttributesUpToTheMessagesLength) {
  Bytes b;
  const size_t m = b.message(20);
  b.put("\x02\0\0\0", 4);  // a family header of 4 bytes
  b.attr(1, {7});
  b.attr(2, {1, 2, 3, 4, 5, 6, 7, 8});
  b.attr(3, {9, 9});  // the last one unpadded
  b.end_message(m);
  AttrWalk walk = message_attrs(b.header(m), 4);
  const nlattr* a = walk.next();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(attr_type(a), 1);
  EXPECT_EQ(payload_len(a), 1u);
  EXPECT_EQ(attr_get<uint8_t>(a), 7);
  a = walk.next();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(attr_get<uint64_t>(a), 0x0807060504030201u);  // a u64 at a 4-byte boundary
  a = walk.next();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(attr_type(a), 3);
  EXPECT_EQ(walk.next(), nullptr);
  EXPECT_EQ(walk.leftover(), 0u);
}

TEST(AttrWalk, StopsAtAnAttributeShorterThanItsHeaderOrOverrunning) {
  for (uint16_t len : {0, 1, 3, 17, 200}) {  // 16 bytes are left at it
    Bytes b;
    const size_t m = b.message(20);
    b.attr(1, {7});
    b.attr(2, {1, 2, 3, 4, 5, 6, 7, 8}, len);
    b.attr(3, {});  // after the bad one: never read
    b.end_message(m);
    AttrWalk walk = message_attrs(b.header(m), 0);
    ASSERT_NE(walk.next(), nullptr) << len;
    EXPECT_EQ(walk.next(), nullptr) << len;
    EXPECT_GT(walk.leftover(), 0u) << len;
  }
}

TEST(AttrWalk, BoundedByNlmsgLenNotByTheBytesAfterIt) {
  Bytes b;
  const size_t m = b.message(20);
  b.attr(1, {1, 2, 3, 4});
  b.end_message(m);
  b.header(m)->nlmsg_len -= 2;  // the attribute now reaches past the message
  AttrWalk walk = message_attrs(b.header(m), 0);
  EXPECT_EQ(walk.next(), nullptr);
  EXPECT_EQ(walk.leftover(), 6u);
}

TEST(AttrWalk, NoAttributesInAMessageShorterThanItsHeaders) {
  Bytes b;
  const size_t m = b.message(20);
  b.put("\0\0\0\0", 4);
  b.end_message(m);
  AttrWalk walk = message_attrs(b.header(m), 72);  // a family header it does not have
  EXPECT_EQ(walk.next(), nullptr);
  EXPECT_EQ(walk.leftover(), 0u);
}

TEST(AttrWalk, NestedAttributesAreBoundedByTheNest) {
  Bytes b;
  const size_t m = b.message(20);
  const size_t nest = b.attr(5 | NLA_F_NESTED, {});
  b.attr(1, {1, 0});
  b.attr(2, {1, 2, 3, 4});
  b.end_nest(nest);
  b.attr(6, {0xaa, 0xbb, 0xcc, 0xdd});  // after the nest
  b.end_message(m);
  AttrWalk top = message_attrs(b.header(m), 0);
  const nlattr* n = top.next();
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(attr_type(n), 5);  // NLA_F_NESTED is no part of the type
  EXPECT_TRUE(attr_valid(n, AttrKind::kNested));
  AttrWalk inner = nested_attrs(n);
  EXPECT_EQ(attr_get<uint16_t>(inner.next()), 1);
  EXPECT_EQ(attr_type(inner.next()), 2);
  EXPECT_EQ(inner.next(), nullptr);  // attribute 6 is outside the nest
  EXPECT_EQ(inner.leftover(), 0u);
  EXPECT_EQ(attr_type(top.next()), 6);

  // A nest whose length cuts its last attribute: that one is not read.
  reinterpret_cast<nlattr*>(b.data.data() + nest)->nla_len -= 2;
  AttrWalk cut = nested_attrs(reinterpret_cast<const nlattr*>(b.data.data() + nest));
  EXPECT_NE(cut.next(), nullptr);
  EXPECT_EQ(cut.next(), nullptr);
  EXPECT_EQ(cut.leftover(), 6u);
}

TEST(AttrValid, LengthsPerKind) {
  Bytes b;
  const size_t m = b.message(20);
  b.attr(1, {});
  b.attr(2, {1});
  b.attr(3, {1, 2});
  b.attr(4, {1, 2, 3, 4});
  b.attr(5, {1, 2, 3, 4, 5, 6, 7, 8});
  b.attr(6, {1, 2});  // a nest too short to hold an attribute
  b.end_message(m);
  std::vector<const nlattr*> attrs;
  AttrWalk walk = message_attrs(b.header(m), 0);
  while (const nlattr* a = walk.next()) attrs.push_back(a);
  ASSERT_EQ(attrs.size(), 6u);
  const AttrKind kinds[] = {AttrKind::kU8, AttrKind::kU16, AttrKind::kU32, AttrKind::kU64};
  for (size_t k = 0; k < 4; ++k) {
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(attr_valid(attrs[i], kinds[k]), i == k + 1) << k << i;
  }
  for (const nlattr* a : attrs) EXPECT_TRUE(attr_valid(a, AttrKind::kBinary));
  EXPECT_TRUE(attr_valid(attrs[0], AttrKind::kNested));
  EXPECT_TRUE(attr_valid(attrs[3], AttrKind::kNested));
  EXPECT_FALSE(attr_valid(attrs[5], AttrKind::kNested));
  EXPECT_EQ(attr_get<uint32_t>(attrs[1]), 1u);  // a short payload reads the rest as zero
}

TEST(ErrorCode, EitherSignTooShortAndNoMagnitude) {
  const auto code = [](int error, uint32_t len) {
    Bytes b;
    const size_t m = b.message(NLMSG_ERROR);
    nlmsgerr err{};
    err.error = error;
    b.put(&err, sizeof err);
    b.end_message(m);
    if (len != 0) b.header(m)->nlmsg_len = len;
    return error_code(b.header(m));
  };
  EXPECT_EQ(code(-ENOENT, 0), ENOENT);
  EXPECT_EQ(code(EPERM, 0), EPERM);
  EXPECT_EQ(code(0, 0), 0);
  EXPECT_EQ(code(INT_MIN, 0), EPROTO);
  EXPECT_EQ(code(0, NLMSG_HDRLEN + 4), EBADMSG);  // the errno but not the request's header
}

}  // namespace
}  // namespace nabla::common::netlink
