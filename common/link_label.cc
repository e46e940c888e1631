#include "nabla/common/link_label.hh"

namespace nabla::common {

namespace {

// A host name as is; an IPv6 address (an end no campaign node owns) in
// brackets, so its port cannot be read as part of it.
void append_end(std::string& s, std::string_view host, int port) {
  if (host.find(':') == std::string_view::npos) {
    s += host;
  } else {
    s += '[';
    s += host;
    s += ']';
  }
  if (port != 0) s += ':' + std::to_string(port);
}

}  // namespace

std::string campaign_link_label(std::string_view proto, std::string_view src_host, int src_port,
                                std::string_view dst_host, int dst_port) {
  std::string s(proto);
  s += ' ';
  append_end(s, src_host, src_port);
  s += " -> ";
  append_end(s, dst_host, dst_port);
  return s;
}

}  // namespace nabla::common
