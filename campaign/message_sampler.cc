// The segment counts of the measured links during a phase; see
// message_sampler.hh.
#include "message_sampler.hh"

#include <algorithm>
#include <limits>

#include "nabla/campaign/links.hh"

namespace nabla::campaign {
namespace {

struct LinkCount {
  std::uint64_t segments = 0;
  std::int64_t seen_ns = 0;
};

// The link's count in its direction from one node's records: what the
// source sent to the destination (outgoing), or what the destination
// received from the source. nullopt when no record of the node is the link's.
std::optional<LinkCount> count_on_node(const CampaignSpec& spec, const CampaignLink& l,
                                       const std::vector<FlowEnd>& flows, bool outgoing) {
  const LinkEnd& here = outgoing ? l.link.src : l.link.dst;
  const LinkEnd& there = outgoing ? l.link.dst : l.link.src;
  std::optional<LinkCount> out;
  for (const FlowEnd& f : flows) {
    if (f.proto != l.link.proto || f.local_port != here.port || f.remote_port != there.port) {
      continue;
    }
    if (here.known && f.pid != here.pid) continue;
    if (!node_owns_address(spec, there.host, f.remote_addr)) continue;
    if (!out) out = LinkCount{};
    out->segments += outgoing ? f.segments_out : f.segments_in;
    out->seen_ns = std::max(out->seen_ns, f.last_seen_ns);
  }
  return out;
}

}  // namespace

MessageSampler::MessageSampler(CampaignRun& run, const std::vector<const CampaignLink*>& links)
    : run_(run) {
  for (const CampaignLink* l : links) {
    LinkState s;
    s.link = l;
    for (const std::string& host : {l->link.src.host, l->link.dst.host}) {
      if (run.spec.node_by_name(host) != nullptr) node_index(host);
    }
    links_.push_back(std::move(s));
  }
  run_.on_wait_slice = [this] { poll(); };
}

MessageSampler::~MessageSampler() {
  run_.on_wait_slice = nullptr;
}

std::size_t MessageSampler::node_index(const std::string& name) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return i;
  }
  NodeState node;
  node.name = name;
  nodes_.push_back(std::move(node));
  return nodes_.size() - 1;
}

void MessageSampler::poll_node(NodeState& node) {
  if (node.failed) return;
  std::optional<FlowsPage> page;
  try {
    page = run_.env.daemons.list_flows(node.name, node.cursor);
  } catch (const std::exception& e) {
    node.failed = true;
    run_.out.warnings.push_back("node " + node.name + ": flows.list failed (" + e.what() +
                                "); no messages per transaction from it in this phase");
    return;
  }
  if (!page) {
    node.failed = true;  // no sniffd: nothing to ask again
    return;
  }
  const CampaignNode* n = run_.spec.node_by_name(node.name);
  std::erase_if(page->flows, [n](const FlowEnd& f) {
    return !flow_in_node_namespace(f, n->netns, n->container);
  });
  merge_flows(node.flows, page->flows);
  node.cursor = page->cursor;
}

void MessageSampler::observe(LinkState& s, std::int64_t polled_ns) {
  const LinkEnd& src = s.link->link.src;
  const LinkEnd& dst = s.link->link.dst;
  if (!s.node) {
    // The source's own records first, since they count what it sent.
    for (const bool outgoing : {true, false}) {
      const std::string& host = outgoing ? src.host : dst.host;
      if (run_.spec.node_by_name(host) == nullptr) continue;
      const std::size_t i = node_index(host);
      if (count_on_node(run_.spec, *s.link, nodes_[i].flows, outgoing)) {
        s.node = i;
        s.outgoing = outgoing;
        break;
      }
    }
    if (!s.node) return;
  }
  const auto c = count_on_node(run_.spec, *s.link, nodes_[*s.node].flows, s.outgoing);
  if (!c || c->seen_ns == 0) return;
  if (!s.observations.empty() && s.observations.back().seen_ns >= c->seen_ns) return;
  s.observations.push_back(Observation{c->seen_ns, polled_ns, c->segments});
}

void MessageSampler::poll() {
  for (NodeState& n : nodes_) poll_node(n);
  const std::int64_t polled = run_.now_ns();
  for (LinkState& s : links_) observe(s, polled);
}

std::vector<SegmentCount> MessageSampler::counts(std::size_t link) const {
  const LinkState& s = links_.at(link);
  std::int64_t offset = std::numeric_limits<std::int64_t>::max();
  for (const Observation& o : s.observations) offset = std::min(offset, o.polled_ns - o.seen_ns);
  std::vector<SegmentCount> out;
  for (const Observation& o : s.observations) out.push_back({o.seen_ns + offset, o.segments});
  return out;
}

void MessageSampler::fill(std::size_t link, std::vector<TypeGradient>& gradients,
                          const std::vector<analysis::LatencyRecord>& records,
                          std::int64_t start_ns, std::int64_t end_ns) const {
  const auto m = messages_per_transaction(counts(link), records, gradients.size(), start_ns, end_ns,
                                          run_.spec.gradient.confidence);
  for (std::size_t t = 0; t < gradients.size(); ++t) gradients[t].messages = m[t];
}

}  // namespace nabla::campaign
