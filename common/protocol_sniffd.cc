// nabla-sniffd's messages; see protocol/sniffd.hh.
#include <stdexcept>

#include "nabla/common/protocol/sniffd.hh"
#include "protocol_fields.hh"

namespace nabla::common::protocol {

using nlohmann::json;

namespace {

json counts_json(const FlowCounts& c) {
  return json{{"segments_out", c.segments_out},
              {"segments_in", c.segments_in},
              {"bytes_out", c.bytes_out},
              {"bytes_in", c.bytes_in}};
}

FlowCounts read_counts(const ObjectReader& in) {
  return FlowCounts{in.unsigned_integer("segments_out"), in.unsigned_integer("segments_in"),
                    in.unsigned_integer("bytes_out"), in.unsigned_integer("bytes_in")};
}

uint16_t read_port(const ObjectReader& in) {
  return static_cast<uint16_t>(in.unsigned_integer("port", UINT16_MAX));
}

FlowProto read_proto(const ObjectReader& in) {
  const std::string proto = in.string("proto");
  if (proto == "tcp") return FlowProto::kTcp;
  if (proto == "udp") return FlowProto::kUdp;
  bad_field(in.path("proto"), "must be tcp or udp, got '" + proto + "'");
}

FlowDirection read_direction(const ObjectReader& in) {
  const std::string d = in.string_or("direction", "unknown");
  if (d == "outbound") return FlowDirection::kOutbound;
  if (d == "inbound") return FlowDirection::kInbound;
  if (d == "unknown") return FlowDirection::kUnknown;
  bad_field(in.path("direction"), "must be outbound|inbound|unknown, got '" + d + "'");
}

FlowOwner read_owner(const ObjectReader& local) {
  const std::string o = local.string_or("owner", "none");
  for (FlowOwner owner : {FlowOwner::kNone, FlowOwner::kSocket, FlowOwner::kListener,
                          FlowOwner::kTuple, FlowOwner::kCgroup, FlowOwner::kGone}) {
    if (o == to_string(owner)) return owner;
  }
  bad_field(local.path("owner"),
            "must be socket|listener|tuple|none|cgroup|gone-before-scan, got '" + o + "'");
}

// The optional identity of the local process beyond pid and comm.
void read_owner_details(const ObjectReader& local, Flow& f) {
  f.cgroup = local.string_or("cgroup", "");
  f.cgroup_id = local.unsigned_or("cgroup_id", 0);
  f.owner = read_owner(local);
}

uint32_t read_u32_or_zero(const ObjectReader& in, const char* key) {
  return static_cast<uint32_t>(in.find(key) ? in.unsigned_integer(key, UINT32_MAX) : 0);
}

// Every optional diagnostic of a flow record; see Flow::from_json.
void read_diagnostics(const ObjectReader& in, Flow& f) {
  if (in.find("interval") != nullptr) f.interval = read_counts(in.object("interval"));
  f.sockets = read_u32_or_zero(in, "sockets");
  f.conntrack_events = read_u32_or_zero(in, "conntrack_events");
  f.closed_sockets = read_u32_or_zero(in, "closed_sockets");
  f.first_seen_ns = in.integer_or("first_seen_ns", 0);
  f.last_seen_ns = in.integer_or("last_seen_ns", 0);
  if (in.find("netns") != nullptr) {
    const ObjectReader ns = in.object("netns");
    f.netns = {ns.unsigned_or("inode", 0), ns.string_or("name", ""), ns.string_or("container", ""),
               ns.boolean_or("own", true)};
  }
}

std::vector<uint16_t> read_ports(const ObjectReader& in, const char* key) {
  const json& list = in.require(key);
  if (!list.is_array()) bad_field(in.path(key), "must be an array of ports");
  std::vector<uint16_t> ports;
  for (const json& port : list) {
    if (!is_non_negative_integer(port) || port.get<uint64_t>() > UINT16_MAX) {
      bad_field(in.path(key), "must be an array of ports");
    }
    ports.push_back(port.get<uint16_t>());
  }
  return ports;
}

}  // namespace

std::string_view to_string(FlowProto proto) noexcept {
  return proto == FlowProto::kTcp ? "tcp" : "udp";
}

std::string_view to_string(FlowOwner owner) noexcept {
  switch (owner) {
    case FlowOwner::kSocket:
      return "socket";
    case FlowOwner::kListener:
      return "listener";
    case FlowOwner::kTuple:
      return "tuple";
    case FlowOwner::kCgroup:
      return "cgroup";
    case FlowOwner::kGone:
      return "gone-before-scan";
    case FlowOwner::kNone:
      break;
  }
  return "none";
}

std::string_view to_string(FlowDirection direction) noexcept {
  switch (direction) {
    case FlowDirection::kOutbound:
      return "outbound";
    case FlowDirection::kInbound:
      return "inbound";
    case FlowDirection::kUnknown:
      break;
  }
  return "unknown";
}

json FlowsListParams::to_json() const {
  json out{{"since", since}, {"include_control", include_control}};
  if (min_messages) out["min_messages"] = *min_messages;
  if (after) out["after"] = *after;
  return out;
}

FlowsListParams FlowsListParams::from_json(const json& params) {
  FlowsListParams p;
  if (params.is_null()) return p;
  const ObjectReader in(params, "");
  for (const auto& [key, value] : params.items()) {
    if (key != "since" && key != "min_messages" && key != "include_control" && key != "after") {
      bad_field(key, "unknown parameter (since, min_messages, include_control, after)");
    }
  }
  p.since = in.unsigned_or("since", 0);
  if (in.find("min_messages") != nullptr) {
    p.min_messages = in.unsigned_integer("min_messages", kMaxMinMessages);
  }
  if (const json* c = in.find("include_control")) {
    if (!c->is_boolean()) bad_field("include_control", "must be a boolean");
    p.include_control = c->get<bool>();
  }
  if (const json* a = in.find("after")) {
    if (!a->is_string() || a->get_ref<const std::string&>().empty() ||
        a->get_ref<const std::string&>().size() > kMaxPageTokenBytes) {
      bad_field("after", "must be the page token (next) of the previous answer");
    }
    p.after = a->get<std::string>();
  }
  return p;
}

FlowsListParams next_flows_page(const FlowsListParams& first, const FlowsListResult& page) {
  FlowsListParams next = first;
  next.after = page.next;
  return next;
}

json Flow::to_json() const {
  return json{{"proto", std::string(protocol::to_string(proto))},
              {"local",
               {{"addr", local_addr},
                {"port", local_port},
                {"pid", pid},
                {"comm", comm},
                {"cgroup", cgroup},
                {"cgroup_id", cgroup_id},
                {"owner", std::string(protocol::to_string(owner))}}},
              {"remote", {{"addr", remote_addr}, {"port", remote_port}}},
              {"direction", std::string(protocol::to_string(direction))},
              {"control", control},
              {"total", counts_json(total)},
              {"interval", counts_json(interval)},
              {"sockets", sockets},
              {"conntrack_events", conntrack_events},
              {"closed_sockets", closed_sockets},
              {"first_seen_ns", first_seen_ns},
              {"last_seen_ns", last_seen_ns},
              {"netns",
               {{"inode", netns.inode},
                {"name", netns.name},
                {"container", netns.container},
                {"own", netns.own}}}};
}

Flow Flow::from_json(const json& flow, const std::string& path) {
  const ObjectReader in(flow, path);
  Flow f;
  f.proto = read_proto(in);
  const ObjectReader local = in.object("local");
  const ObjectReader remote = in.object("remote");
  f.local_addr = local.string("addr");
  f.local_port = read_port(local);
  const int64_t pid = local.integer("pid");
  if (pid < INT32_MIN || pid > INT32_MAX) bad_field(local.path("pid"), "out of range");
  f.pid = static_cast<int32_t>(pid);
  f.comm = local.string("comm");
  read_owner_details(local, f);
  f.remote_addr = remote.string("addr");
  f.remote_port = read_port(remote);
  f.direction = read_direction(in);
  f.control = in.boolean_or("control", false);
  f.total = read_counts(in.object("total"));
  read_diagnostics(in, f);
  return f;
}

json FlowsListResult::to_json() const {
  json list = json::array();
  for (const Flow& f : flows) list.push_back(f.to_json());
  json out{{"cursor", cursor}, {"flows", std::move(list)}, {"more", more}};
  if (more) out["next"] = next;
  return out;
}

FlowsListResult FlowsListResult::from_json(const json& result) {
  const ObjectReader in(result, "");
  FlowsListResult r;
  r.cursor = in.unsigned_integer("cursor");
  const json& flows = in.require("flows");
  if (!flows.is_array()) bad_field("flows", "must be an array");
  for (size_t i = 0; i < flows.size(); ++i) {
    r.flows.push_back(Flow::from_json(flows[i], "flows[" + std::to_string(i) + "]"));
  }
  // A reader that predates pages takes an answer without them as whole.
  if (const json* more = in.find("more")) {
    if (!more->is_boolean()) bad_field("more", "must be a boolean");
    r.more = more->get<bool>();
  }
  if (r.more) {
    const json& next = in.require("next");
    if (!next.is_string() || next.get_ref<const std::string&>().empty() ||
        next.get_ref<const std::string&>().size() > kMaxPageTokenBytes) {
      bad_field("next", "must be a page token");
    }
    r.next = next.get<std::string>();
  }
  return r;
}

json SnifferInfo::to_json() const {
  json out{{"daemon", daemon},
           {"version", version},
           {"pid", pid},
           {"interval_ns", interval_ns},
           {"min_messages", min_messages},
           {"control_ports", control_ports},
           {"port_range", {port_range_low, port_range_high}},
           {"scans", scans},
           {"sockets_last_scan", sockets_last_scan},
           {"last_scan_ns", last_scan_ns},
           {"flows", flows},
           {"max_flows", max_flows},
           {"flows_refused", flows_refused},
           {"namespaces", namespaces},
           {"max_namespaces", max_namespaces},
           {"namespaces_skipped", namespaces_skipped},
           {"sock_diag",
            {{"messages", sock_diag.messages},
             {"malformed", sock_diag.malformed},
             {"short_tcp_info", sock_diag.short_tcp_info},
             {"errors", sock_diag.errors}}},
           {"conntrack",
            {{"enabled", conntrack.enabled},
             {"events", conntrack.events},
             {"ignored", conntrack.ignored},
             {"malformed", conntrack.malformed},
             {"lost", conntrack.lost}}},
           {"destroy",
            {{"enabled", destroy.enabled},
             {"notifications", destroy.notifications},
             {"malformed", destroy.malformed},
             {"lost", destroy.lost}}}};
  node.write_to(out);
  control.write_to(out);
  return out;
}

SnifferInfo SnifferInfo::from_json(const json& result) {
  const ObjectReader in(result, "");
  SnifferInfo s;
  s.daemon = in.string("daemon");
  s.version = in.string("version");
  s.pid = in.integer("pid");
  s.interval_ns = in.integer("interval_ns");
  s.min_messages = in.unsigned_integer("min_messages");
  s.control_ports = read_ports(in, "control_ports");
  const std::vector<uint16_t> range = read_ports(in, "port_range");
  if (range.size() != 2) bad_field("port_range", "must be [low, high]");
  s.port_range_low = range[0];
  s.port_range_high = range[1];
  s.scans = in.unsigned_integer("scans");
  s.sockets_last_scan = in.unsigned_integer("sockets_last_scan");
  s.last_scan_ns = in.integer("last_scan_ns");
  s.flows = in.unsigned_integer("flows");
  s.max_flows = in.unsigned_or("max_flows", 0);
  s.flows_refused = in.unsigned_or("flows_refused", 0);
  s.namespaces = in.unsigned_or("namespaces", 1);
  s.max_namespaces = in.unsigned_or("max_namespaces", 0);
  s.namespaces_skipped = in.unsigned_or("namespaces_skipped", 0);
  const ObjectReader sd = in.object("sock_diag");
  s.sock_diag = {sd.unsigned_integer("messages"), sd.unsigned_integer("malformed"),
                 sd.unsigned_integer("short_tcp_info"), sd.unsigned_integer("errors")};
  const ObjectReader ct = in.object("conntrack");
  s.conntrack = {ct.boolean("enabled"), ct.unsigned_integer("events"),
                 ct.unsigned_integer("ignored"), ct.unsigned_integer("malformed"),
                 ct.unsigned_integer("lost")};
  const ObjectReader d = in.object("destroy");
  s.destroy = {d.boolean("enabled"), d.unsigned_integer("notifications"),
               d.unsigned_integer("malformed"), d.unsigned_integer("lost")};
  s.node = NodeFacts::read_from(result);
  s.control = ControlCounters::read_from(result);
  return s;
}

}  // namespace nabla::common::protocol
