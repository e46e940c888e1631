// nabla-sniffd's control messages: every one round-trips, matches its
// golden file key by key, and names the field of a missing or mistyped value.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "nabla/common/protocol/sniffd.hh"
#include "protocol_examples.hh"
#include "protocol_golden.hh"

namespace nabla::common::protocol {
namespace {

using nlohmann::json;

using golden::error_of;
using golden::starts_with;

TEST(SniffdMessages, EveryMessageMatchesItsGoldenFile) {
  golden::expect_matches(FlowsListParams{17, 1, true}, "flows_list_params");
  Flow control = examples::flow();
  control.proto = FlowProto::kUdp;
  control.direction = FlowDirection::kInbound;
  control.control = true;
  control.conntrack_events = 2;
  golden::expect_matches(FlowsListResult{18, {examples::flow(), control}}, "flows_list_result");
  golden::expect_matches(examples::sniffd_info(), "sniffd_daemon_info_result");
}

TEST(SniffdMessages, ParamsDefaultsAndRoundTrip) {
  EXPECT_EQ(FlowsListParams::from_json(nullptr), FlowsListParams{});
  EXPECT_EQ(FlowsListParams::from_json(json::object()), FlowsListParams{});
  const FlowsListParams daemon_default{3, std::nullopt, false};
  EXPECT_FALSE(daemon_default.to_json().contains("min_messages"));
  EXPECT_EQ(FlowsListParams::from_json(daemon_default.to_json()), daemon_default);
}

TEST(SniffdMessages, ParamsNameTheBadField) {
  EXPECT_TRUE(starts_with(error_of<FlowsListParams>({{"since", -1}}), "since:"));
  EXPECT_TRUE(starts_with(error_of<FlowsListParams>({{"since", "3"}}), "since:"));
  EXPECT_TRUE(starts_with(error_of<FlowsListParams>({{"min_messages", 2e9}}), "min_messages:"));
  EXPECT_EQ(error_of<FlowsListParams>({{"min_messages", 2'000'000'000}}),
            "min_messages: must be <= 1000000000");
  EXPECT_EQ(error_of<FlowsListParams>({{"include_control", 1}}),
            "include_control: must be a boolean");
  EXPECT_EQ(error_of<FlowsListParams>({{"bogus", 1}}),
            "bogus: unknown parameter (since, min_messages, include_control, after)");
  EXPECT_EQ(error_of<FlowsListParams>(json::array()), "params: must be an object");
}

TEST(SniffdMessages, MissingOrMistypedFlowFieldsNameTheField) {
  const json good = golden::read("flows_list_result");
  for (const std::string field :
       {"proto", "local/addr", "local/port", "local/pid", "local/comm", "remote/addr",
        "remote/port", "total/segments_out", "total/bytes_in"}) {
    const json::json_pointer p("/flows/1/" + field);
    std::string dotted = "flows[1]." + field;
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    json missing = good;
    missing.at(p.parent_pointer()).erase(p.back());
    EXPECT_TRUE(starts_with(error_of<FlowsListResult>(missing), dotted + ": required"))
        << error_of<FlowsListResult>(missing);
    json mistyped = good;
    mistyped[p] = json::array();
    EXPECT_TRUE(starts_with(error_of<FlowsListResult>(mistyped), dotted + ":"))
        << error_of<FlowsListResult>(mistyped);
  }
  EXPECT_TRUE(starts_with(error_of<FlowsListResult>(json{{"flows", json::array()}}), "cursor:"));
  EXPECT_TRUE(starts_with(error_of<SnifferInfo>(json::object()), "daemon: required"));
  json bad_range = golden::read("sniffd_daemon_info_result");
  bad_range["port_range"] = {1};
  EXPECT_TRUE(starts_with(error_of<SnifferInfo>(bad_range), "port_range:"));
}

// A reader joining flows needs only who talks to whom and how much: the
// sniffer's diagnostics may be absent and take their defaults.
TEST(SniffdMessages, FlowDiagnosticsAreOptionalForReaders) {
  json j = examples::flow().to_json();
  for (const char* key : {"direction", "control", "interval", "sockets", "conntrack_events",
                          "closed_sockets", "first_seen_ns", "last_seen_ns"}) {
    j.erase(key);
  }
  for (const char* key : {"cgroup", "cgroup_id", "owner"}) j["local"].erase(key);
  const Flow f = Flow::from_json(j);
  EXPECT_EQ(f.direction, FlowDirection::kUnknown);
  EXPECT_EQ(f.total, examples::flow().total);
  EXPECT_EQ(f.interval, FlowCounts{});
  EXPECT_EQ(f.owner, FlowOwner::kNone);
  EXPECT_EQ(f.cgroup, "");
  EXPECT_EQ(f.closed_sockets, 0u);
  j["local"]["owner"] = "neighbour";
  EXPECT_TRUE(starts_with(error_of<Flow>(j), "local.owner: must be socket|listener|tuple|none"));
  j["local"].erase("owner");
  j["direction"] = "sideways";
  EXPECT_TRUE(starts_with(error_of<Flow>(j), "direction: must be outbound|inbound|unknown"));
}

// Pages: a page token goes back as `after` with the first page's params;
// an answer without "more" (a daemon before pages) is the whole listing.
TEST(SniffdMessages, FlowsListPagesRoundTrip) {
  const FlowsListResult page{18, {examples::flow()}, true, "18/5/4026531840/tcp 10.0.0.1 0"};
  EXPECT_EQ(FlowsListResult::from_json(page.to_json()), page);
  const FlowsListParams first{17, 1, true};
  const FlowsListParams next = next_flows_page(first, page);
  EXPECT_EQ(next.since, 17u);
  EXPECT_EQ(next.after, page.next);
  EXPECT_EQ(FlowsListParams::from_json(next.to_json()), next);
  json whole = FlowsListResult{3, {}}.to_json();
  EXPECT_EQ(whole["more"], false);
  whole.erase("more");
  EXPECT_FALSE(FlowsListResult::from_json(whole).more);
  EXPECT_EQ(error_of<FlowsListResult>({{"cursor", 1}, {"flows", json::array()}, {"more", true}}),
            "next: required");
  EXPECT_TRUE(
      starts_with(error_of<FlowsListResult>(
                      {{"cursor", 1}, {"flows", json::array()}, {"more", true}, {"next", 4}}),
                  "next:"));
  EXPECT_TRUE(starts_with(error_of<FlowsListParams>({{"after", ""}}), "after:"));
  EXPECT_TRUE(starts_with(error_of<FlowsListParams>({{"after", 3}}), "after:"));
  EXPECT_TRUE(
      starts_with(error_of<FlowsListParams>({{"after", std::string(2000, 'x')}}), "after:"));
}

}  // namespace
}  // namespace nabla::common::protocol
