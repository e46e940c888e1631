#pragma once
// What the sniffer's dump walks answer for one received buffer, and the
// sniffer's short name for the project's netlink reader
// (nabla/common/netlink_reader.hh).
#include "nabla/common/netlink_reader.hh"

namespace nabla::sniffer {

namespace netlink = common::netlink;

// What one received buffer of replies to a request says about the exchange.
enum class DumpStep {
  kMore,    // every whole message was walked; the replies go on in the next buffer
  kDone,    // the exchange is over (NLMSG_DONE, or the reply that ends it)
  kFailed,  // an NLMSG_ERROR, or a reply that breaks the exchange
};

}  // namespace nabla::sniffer
