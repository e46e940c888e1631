// `nabla discover`; see discover_command.hh.
#include "nabla/coordinator/discover_command.hh"

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "nabla/campaign/discover.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/protocol/sniffd.hh"
#include "nabla/common/resolve.hh"
#include "nabla/common/rpc.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {

using campaign::flow_end_of;
using campaign::FlowEnd;
using campaign::JoinOptions;
using campaign::Link;
using campaign::LinkEnd;
using campaign::NodeFlows;

namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace protocol = common::protocol;

constexpr milliseconds kCallTimeout{3000};
// A listing in pages is read whole; a daemon still paging after this many
// is not one to trust.
constexpr int kMaxFlowsPages = 10'000;

bool is_address_literal(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string end_text(const LinkEnd& e) {
  std::string s = e.host + " ";
  s += e.known ? e.comm + "[" + std::to_string(e.pid) + "]" : "(unknown process)";
  const std::string tag = netns_tag(e);
  return tag.empty() ? s : s + "@" + tag;
}

void print_table(std::ostream& out, const std::vector<Link>& links) {
  TextTable t({"proto", "src", "src port", "dst", "dst port", "segments", "bytes"});
  for (const Link& l : links) {
    t.add_row({l.proto, end_text(l.src), std::to_string(l.src.port), end_text(l.dst),
               std::to_string(l.dst.port), std::to_string(l.segments), std::to_string(l.bytes)});
  }
  t.print(out);
  out << links.size() << " one-way links (port 0: ephemeral)\n";
}

// One node's connection and accumulated records.
struct NodeState {
  const DiscoverNode* node = nullptr;
  std::optional<common::RpcClient> client;
  uint64_t cursor = 0;
  std::vector<FlowEnd> flows;
};

void poll(NodeState& s, const DiscoverOptions& o) {
  const std::string where =
      "node " + s.node->name + " (nabla-sniffd at " + s.node->address.to_string() + ")";
  protocol::FlowsListParams params;
  params.since = s.cursor;
  params.min_messages = std::min<uint64_t>(o.min_messages, 1);
  params.include_control = o.include_control;
  // Every page of the listing (a busy node answers in pages, protocol.md).
  std::vector<FlowEnd> update;
  for (int page = 1;; ++page) {
    json answer;
    try {
      answer = s.client->call(params.kMethod, params.to_json(), kCallTimeout);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": flows.list failed: " + e.what());
    }
    protocol::FlowsListResult result;
    try {
      result = protocol::FlowsListResult::from_json(answer);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": bad flows.list answer: " + e.what());
    }
    for (const protocol::Flow& f : result.flows) update.push_back(flow_end_of(f));
    s.cursor = result.cursor;
    if (!result.more) break;
    if (page >= kMaxFlowsPages) {
      throw std::runtime_error(where + ": flows.list still paging after " +
                               std::to_string(kMaxFlowsPages) + " pages");
    }
    params = protocol::next_flows_page(params, result);
  }
  merge_flows(s.flows, update);
}

}  // namespace

DiscoverNode parse_discover_node(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("--node: expected NAME=HOST[:PORT], got '" + text + "'");
  }
  DiscoverNode n;
  n.name = text.substr(0, eq);
  n.address = common::parse_host_port(text.substr(eq + 1), common::kSniffdPort);
  return n;
}

void resolve_discover_nodes(std::vector<DiscoverNode>& nodes, const common::Resolver& resolver,
                            std::ostream& log) {
  for (DiscoverNode& n : nodes) {
    common::resolve_host_port(n.address, resolver, "--node " + n.name, log);
  }
}

void check_discover_options(const DiscoverOptions& o) {
  if (o.nodes.empty()) throw std::invalid_argument("--node: give at least one node");
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (o.nodes[i].name == o.nodes[j].name) {
        throw std::invalid_argument("--node: name '" + o.nodes[i].name + "' given twice");
      }
    }
  }
  if (o.for_ns < 0) throw std::invalid_argument("--for: must be >= 0");
}

int run_discover(const DiscoverOptions& o, std::ostream& out) {
  check_discover_options(o);

  std::vector<NodeState> states(o.nodes.size());
  for (size_t i = 0; i < o.nodes.size(); ++i) {
    states[i].node = &o.nodes[i];
    const common::HostPort& a = o.nodes[i].address;
    const auto key = common::client_key_source(o.key_file, common::kSniffdKeyName, a.host, a.port);
    try {
      states[i].client.emplace(
          common::RpcClient::connect(a.host, a.port, key, kCallTimeout, common::kSniffdKeyName));
    } catch (const std::exception& e) {
      throw std::runtime_error("node " + o.nodes[i].name + ": cannot reach nabla-sniffd at " +
                               a.to_string() + ": " + e.what());
    }
  }
  // Poll every node now, then every poll_ns until --for has passed, and a
  // last time at the end (flows.list with a cursor returns only changes).
  const int64_t t0 = common::monotonic_ns();
  while (true) {
    for (NodeState& s : states) poll(s, o);
    const int64_t left = t0 + o.for_ns - common::monotonic_ns();
    if (left <= 0) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(left, o.poll_ns)));
  }

  std::vector<NodeFlows> nodes;
  for (const NodeState& s : states) {
    NodeFlows n{s.node->name, {}, s.flows};
    if (is_address_literal(s.node->address.host)) n.addrs.push_back(s.node->address.host);
    nodes.push_back(std::move(n));
  }
  JoinOptions jo;
  jo.include_control = o.include_control;
  jo.min_messages = o.min_messages;
  const std::vector<Link> links = join_flows(nodes, jo);
  switch (o.format) {
    case DiscoverOptions::Format::kJson: {
      json nodes_json = json::array();
      for (const DiscoverNode& n : o.nodes) {
        json node{{"name", n.name}, {"address", n.address.to_string()}};
        if (!n.address.name.empty()) node["host_name"] = n.address.name;
        nodes_json.push_back(std::move(node));
      }
      out << json{{"nodes", nodes_json},
                  {"duration_s", static_cast<double>(o.for_ns) / 1e9},
                  {"links", links_to_json(links)}}
                 .dump(2)
          << '\n';
      break;
    }
    case DiscoverOptions::Format::kDot:
      out << links_to_dot(links);
      break;
    case DiscoverOptions::Format::kTable:
      print_table(out, links);
      break;
  }
  return 0;
}

void register_discover_command(CLI::App& app) {
  auto o = std::make_shared<DiscoverOptions>();
  auto nodes = std::make_shared<std::vector<std::string>>();
  auto for_text = std::make_shared<std::string>("5s");
  auto json_flag = std::make_shared<bool>(false);
  auto dot_flag = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("discover", "find the links between nodes from their sniffers");
  cmd->add_option("--node", *nodes, "NAME=HOST[:PORT] of a nabla-sniffd (port 7312 by default)")
      ->required();
  cmd->add_option("--key-file", o->key_file,
                  "key file, or key directory of HOST.key per node (default: $NABLA_KEY_FILE, "
                  "/etc/nabla/keys/HOST.key, /etc/nabla/key)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--for", *for_text, "how long to watch, e.g. 5s")->default_val("5s");
  cmd->add_option("--min-messages", o->min_messages, "drop one-way links with fewer messages")
      ->default_val(1);
  cmd->add_flag("--include-control", o->include_control, "also show nabla's own connections");
  auto* j = cmd->add_flag("--json", *json_flag, "print {nodes, links[]} as JSON");
  auto* d = cmd->add_flag("--dot", *dot_flag, "print a Graphviz digraph");
  j->excludes(d);
  cmd->callback([o, nodes, for_text, json_flag, dot_flag] {
    o->nodes.clear();
    for (const std::string& n : *nodes) o->nodes.push_back(parse_discover_node(n));
    try {
      o->for_ns = common::parse_duration_ns(*for_text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--for: ") + e.what());
    }
    o->format = *json_flag  ? DiscoverOptions::Format::kJson
                : *dot_flag ? DiscoverOptions::Format::kDot
                            : DiscoverOptions::Format::kTable;
    // Names are resolved after every flag has parsed, so usage errors exit 2
    // before any lookup; a failed lookup exits 1.
    check_discover_options(*o);
    resolve_discover_nodes(o->nodes, common::system_resolver(), std::cerr);
    const int code = run_discover(*o, std::cout);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace nabla::coordinator
