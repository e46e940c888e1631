// Netlink messages and attributes by the kernel's rules; see netlink_reader.hh.
#include "nabla/common/netlink_reader.hh"

#include <cerrno>
#include <climits>

namespace nabla::common::netlink {

const nlmsghdr* MessageWalk::next() {
  if (left_ < sizeof(nlmsghdr)) return nullptr;
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(at_);
  if (nlh->nlmsg_len < sizeof(nlmsghdr) || nlh->nlmsg_len > left_) {
    left_ = 0;  // not whole: the walk ends here
    return nullptr;
  }
  const size_t step = std::min<size_t>(NLMSG_ALIGN(nlh->nlmsg_len), left_);
  at_ += step;
  left_ -= step;
  return nlh;
}

const nlattr* AttrWalk::next() {
  if (left_ < sizeof(nlattr)) return nullptr;
  const auto* attr = reinterpret_cast<const nlattr*>(at_);
  if (attr->nla_len < sizeof(nlattr) || attr->nla_len > left_) return nullptr;
  const size_t step = std::min<size_t>(NLA_ALIGN(attr->nla_len), left_);
  at_ += step;
  left_ -= step;
  return attr;
}

AttrWalk message_attrs(const nlmsghdr* nlh, size_t header_len) {
  const size_t start = NLMSG_HDRLEN + NLMSG_ALIGN(header_len);
  const auto* begin = reinterpret_cast<const std::byte*>(nlh) + start;
  return AttrWalk(begin, nlh->nlmsg_len > start ? nlh->nlmsg_len - start : 0);
}

bool attr_valid(const nlattr* attr, AttrKind kind) {
  const size_t len = payload_len(attr);
  switch (kind) {
    case AttrKind::kBinary:
      return true;
    case AttrKind::kU8:
      return len == 1;
    case AttrKind::kU16:
      return len == 2;
    case AttrKind::kU32:
      return len == 4;
    case AttrKind::kU64:
      return len == 8;
    case AttrKind::kNested:
      return len == 0 || len >= NLA_HDRLEN;
  }
  return false;
}

int error_code(const nlmsghdr* nlh) {
  if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return EBADMSG;
  int error = 0;
  std::memcpy(&error, message_payload(nlh), sizeof error);
  if (error == INT_MIN) return EPROTO;  // no errno; -INT_MIN has no int
  return error < 0 ? -error : error;
}

}  // namespace nabla::common::netlink
