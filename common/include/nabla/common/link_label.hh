#pragma once
// The campaign label of a one-way link: "PROTO SRC[:SPORT] -> DST[:DPORT]",
// built from host names (campaign nodes, testbed hosts), a port written only
// when it is fixed (non-zero; ephemeral ports are folded to 0), e.g.
// "tcp web -> app:9002" (the request direction) and "tcp app:9002 -> web"
// (the response direction). An end no node owns is its address, an IPv6
// one in brackets: "tcp [fd00::1] -> [fd00::2]:8080". Campaign results, [truth] tables, the demo's
// truth and `nabla predict --set` all key links by it; the database's
// links.label is the longer form with the processes (docs/schema.md).
#include <string>
#include <string_view>

namespace nabla::common {

std::string campaign_link_label(std::string_view proto, std::string_view src_host, int src_port,
                                std::string_view dst_host, int dst_port);

}  // namespace nabla::common
