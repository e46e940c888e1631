#pragma once
// Reading what the kernel sends over netlink: the messages of one received
// buffer and the attributes inside a message, by the kernel's own rules
// (NLMSG_OK and NLMSG_NEXT for messages, nla_ok and nla_next for
// attributes, NLMSG_ALIGN and NLA_ALIGN padding, the type without
// NLA_F_NESTED and NLA_F_NET_BYTEORDER). Every read that the daemons make
// of kernel-provided netlink bytes (the sniffer's dumps and events, the
// injector's queued packets) goes through here, in the project's own code,
// so the fuzzers' sanitizers and coverage see it. Nothing is read past the
// buffer a walk was given, nor an attribute past the message or the nest
// that holds it.
#include <linux/netlink.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace nabla::common {

namespace netlink {

// The whole messages of one received buffer, in order. A message is whole
// when its header fits in what is left, and its nlmsg_len covers at least
// the header and reaches no further than the buffer; the next one starts
// NLMSG_ALIGN(nlmsg_len) after it. The walk ends at the first message that
// is not whole: nothing after it is read. The buffer must be aligned for
// nlmsghdr (4 bytes), as any heap or receive buffer is.
class MessageWalk {
 public:
  explicit MessageWalk(std::span<const std::byte> received)
      : at_(received.data()), left_(received.size()) {}
  // The next whole message, or nullptr once there is none.
  const nlmsghdr* next();

 private:
  const std::byte* at_;
  size_t left_;
};

// The attributes of one payload, in order. An attribute is whole when its
// header fits in what is left, and its nla_len covers at least the header
// and reaches no further than the payload; the next one starts
// NLA_ALIGN(nla_len) after it.
class AttrWalk {
 public:
  AttrWalk(const std::byte* begin, size_t len) : at_(begin), left_(len) {}
  // The next whole attribute, or nullptr once there is none.
  const nlattr* next();
  // The bytes that were left when the walk ended: more than 0 means bytes
  // that are no whole attribute (trailing garbage, or an attribute whose
  // length overruns the payload). The last attribute's missing padding is
  // not counted.
  size_t leftover() const { return left_; }

 private:
  const std::byte* at_;
  size_t left_;
};

// The message's payload: the bytes after its header.
inline const void* message_payload(const nlmsghdr* nlh) {
  return reinterpret_cast<const std::byte*>(nlh) + NLMSG_HDRLEN;
}
// The attributes of `nlh` after its family header of `header_len` bytes
// (padded to NLMSG_ALIGN), up to nlmsg_len; none when the message is
// shorter than its headers.
AttrWalk message_attrs(const nlmsghdr* nlh, size_t header_len);

// The attribute's type, without the NLA_F_NESTED and NLA_F_NET_BYTEORDER flags.
inline uint16_t attr_type(const nlattr* attr) {
  return attr->nla_type & NLA_TYPE_MASK;
}
// The payload's length (nla_len less the header; a walked attribute has one).
inline size_t payload_len(const nlattr* attr) {
  return attr->nla_len >= NLA_HDRLEN ? attr->nla_len - NLA_HDRLEN : 0;
}
inline const void* payload(const nlattr* attr) {
  return reinterpret_cast<const std::byte*>(attr) + NLA_HDRLEN;
}
// The attributes nested in `nest`, up to its nla_len.
inline AttrWalk nested_attrs(const nlattr* nest) {
  return AttrWalk(static_cast<const std::byte*>(payload(nest)), payload_len(nest));
}

// What an attribute must hold for its reader.
enum class AttrKind {
  kBinary,  // any length
  kU8,      // exactly 1 byte
  kU16,     // exactly 2 bytes
  kU32,     // exactly 4 bytes
  kU64,     // exactly 8 bytes
  kNested,  // empty, or at least one attribute header
};
bool attr_valid(const nlattr* attr, AttrKind kind);

// The payload's first sizeof(T) bytes as a T; bytes the payload does not
// have read as zero. Copied, so a u64 at a 4-byte boundary is read safely.
template <typename T>
T attr_get(const nlattr* attr) {
  T value{};
  std::memcpy(&value, payload(attr), std::min(sizeof value, payload_len(attr)));
  return value;
}

// The errno an NLMSG_ERROR message carries, positive (0: an
// acknowledgement); EBADMSG when the message is too short to hold a struct
// nlmsgerr. Subsystems send it with either sign.
int error_code(const nlmsghdr* nlh);

}  // namespace netlink
}  // namespace nabla::common
