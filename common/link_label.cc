#include "nabla/common/link_label.hh"

namespace nabla::common {

std::string campaign_link_label(std::string_view proto, std::string_view src_host, int src_port,
                                std::string_view dst_host, int dst_port) {
  std::string s(proto);
  s += ' ';
  s += src_host;
  if (src_port != 0) s += ':' + std::to_string(src_port);
  s += " -> ";
  s += dst_host;
  if (dst_port != 0) s += ':' + std::to_string(dst_port);
  return s;
}

}  // namespace nabla::common
