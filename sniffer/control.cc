// Control methods; see control.hh.
#include "nabla/sniffer/control.hh"

#include <unistd.h>

#include <stdexcept>
#include <string>

namespace nabla::sniffer {
namespace {

constexpr const char* kVersion = "0.1.0";

const char* proto_name(Proto p) {
  return p == Proto::kTcp ? "tcp" : "udp";
}

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::kOutbound:
      return "outbound";
    case Direction::kInbound:
      return "inbound";
    case Direction::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string addr_text(const IpAddr& a) {
  char buf[64];
  const size_t n = a.format(buf, sizeof buf);
  return std::string(buf, n);
}

nlohmann::json counts_json(const FlowCounts& c) {
  return {{"segments_out", c.data_segs_out},
          {"segments_in", c.data_segs_in},
          {"bytes_out", c.bytes_out},
          {"bytes_in", c.bytes_in}};
}

uint64_t get_count(const nlohmann::json& params, const char* field, uint64_t max) {
  const nlohmann::json& v = params.at(field);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    throw std::invalid_argument(std::string(field) + ": must be an integer >= 0");
  }
  const uint64_t n = v.get<uint64_t>();
  if (n > max) {
    throw std::invalid_argument(std::string(field) + ": must be <= " + std::to_string(max));
  }
  return n;
}

}  // namespace

nlohmann::json flow_to_json(const ReportedFlow& flow) {
  const FlowRecord& r = flow.record;
  return {{"proto", proto_name(r.id.proto)},
          {"local",
           {{"addr", addr_text(r.id.local)},
            {"port", r.id.local_port},
            {"pid", r.id.pid},
            {"comm", r.comm},
            {"cgroup", r.cgroup},
            {"cgroup_id", r.cgroup_id},
            {"owner", to_string(r.owner_source)}}},
          {"remote", {{"addr", addr_text(r.id.remote)}, {"port", r.id.remote_port}}},
          {"direction", direction_name(r.direction)},
          {"control", flow.control},
          {"total", counts_json(r.total)},
          {"interval", counts_json(r.last_interval)},
          {"sockets", r.sockets},
          {"conntrack_events", r.conntrack_events},
          {"closed_sockets", r.closed_sockets},
          {"first_seen_ns", r.first_seen_ns},
          {"last_seen_ns", r.last_seen_ns}};
}

nlohmann::json flows_list(const Sniffer& sniffer, const nlohmann::json& params) {
  if (!params.is_null() && !params.is_object()) {
    throw std::invalid_argument("params: must be an object");
  }
  uint64_t since = 0;
  std::optional<uint64_t> min_messages;
  bool include_control = false;
  if (params.is_object()) {
    for (const auto& [key, value] : params.items()) {
      if (key == "since") {
        since = get_count(params, "since", UINT64_MAX);
      } else if (key == "min_messages") {
        min_messages = get_count(params, "min_messages", 1'000'000'000);
      } else if (key == "include_control") {
        if (!value.is_boolean()) throw std::invalid_argument("include_control: must be a boolean");
        include_control = value.get<bool>();
      } else {
        throw std::invalid_argument(key +
                                    ": unknown parameter (since, min_messages, include_control)");
      }
    }
  }
  uint64_t next = 0;
  nlohmann::json flows = nlohmann::json::array();
  for (const ReportedFlow& f : sniffer.flows(since, min_messages, include_control, next)) {
    flows.push_back(flow_to_json(f));
  }
  return {{"cursor", next}, {"flows", std::move(flows)}};
}

nlohmann::json daemon_info(const Sniffer& sniffer) {
  const SnifferStats s = sniffer.stats();
  const SnifferOptions& o = sniffer.options();
  return {{"daemon", "nabla-sniffd"},
          {"version", kVersion},
          {"pid", ::getpid()},
          {"interval_ns", o.interval_ns},
          {"min_messages", o.min_messages},
          {"control_ports", o.control_ports},
          {"port_range", {sniffer.port_range().low, sniffer.port_range().high}},
          {"scans", s.scans},
          {"sockets_last_scan", s.sockets_last_scan},
          {"last_scan_ns", s.last_scan_ns},
          {"flows", s.flows},
          {"sock_diag",
           {{"messages", s.sock_diag.messages},
            {"malformed", s.sock_diag.malformed},
            {"short_tcp_info", s.sock_diag.short_tcp_info},
            {"errors", s.sock_diag.errors}}},
          {"conntrack",
           {{"enabled", s.conntrack_enabled},
            {"events", s.conntrack.events},
            {"ignored", s.conntrack.ignored},
            {"malformed", s.conntrack.malformed},
            {"lost", s.conntrack.lost}}},
          {"destroy",
           {{"enabled", s.destroy_enabled},
            {"notifications", s.destroy.messages},
            {"malformed", s.destroy.malformed},
            {"lost", s.destroy_lost}}}};
}

void register_control_methods(common::RpcServer& server, const Sniffer& sniffer) {
  server.add_method("flows.list", [&sniffer](const nlohmann::json& params) {
    return flows_list(sniffer, params);
  });
  server.add_method("daemon.info", [&sniffer](const nlohmann::json& params) {
    if (!params.is_null() && !(params.is_object() && params.empty())) {
      throw std::invalid_argument("params: daemon.info takes none");
    }
    return daemon_info(sniffer);
  });
}

}  // namespace nabla::sniffer
