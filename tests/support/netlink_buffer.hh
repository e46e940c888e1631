#pragma once
// One received netlink buffer, built by hand for the tests of the daemons'
// netlink readers: messages one after another, each padded to NLMSG_ALIGN,
// as the kernel lays out a dump or a queue's datagram. libmnl writes the
// headers and attributes; the readers under test never use it.
#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace nabla::testing {

struct NetlinkBuffer {
  alignas(nlmsghdr) std::byte buf[8192] = {};
  size_t used = 0;
  nlmsghdr* nlh = nullptr;  // the message being built

  // Ends the message being built and starts one of `type`.
  nlmsghdr* start(uint16_t type, uint32_t seq) {
    finish();
    nlh = mnl_nlmsg_put_header(buf + used);
    nlh->nlmsg_type = type;
    nlh->nlmsg_seq = seq;
    return nlh;
  }
  void finish() {
    if (nlh != nullptr) used += NLMSG_ALIGN(nlh->nlmsg_len);
    nlh = nullptr;
  }
  // NLMSG_ERROR with `error` (negative, as the kernel sends it; 0: an ack).
  void error_message(int error, uint32_t seq) {
    start(NLMSG_ERROR, seq);
    auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nlmsgerr)));
    err->error = error;
  }
  std::span<const std::byte> bytes() {
    finish();
    return {buf, used};
  }
};

}  // namespace nabla::testing
