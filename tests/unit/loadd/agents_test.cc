// Where load agents are: parse_agent and AgentAddress::name.
#include "nabla/loadd/agents.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace nabla::loadd {
namespace {

using loadgen::AgentKind;

TEST(ParseAgent, HostPortKind) {
  auto a = parse_agent("10.0.0.2");
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, common::kLoaddPort);
  EXPECT_EQ(a.kind, AgentKind::kSymmetric);
  EXPECT_EQ(a.name(), "10.0.0.2:7313");

  a = parse_agent("10.0.0.2:7400/latency");
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 7400);
  EXPECT_EQ(a.kind, AgentKind::kLatency);

  a = parse_agent("client-1.lab/throughput");
  EXPECT_EQ(a.host, "client-1.lab");
  EXPECT_EQ(a.kind, AgentKind::kThroughput);
  EXPECT_EQ(a.name(), "client-1.lab:7313");
}

TEST(ParseAgent, Ipv6) {
  auto a = parse_agent("[fd00::2]/throughput");
  EXPECT_EQ(a.host, "fd00::2");
  EXPECT_EQ(a.port, common::kLoaddPort);
  EXPECT_EQ(a.kind, AgentKind::kThroughput);
  EXPECT_EQ(a.name(), "[fd00::2]:7313");

  a = parse_agent("[::1]:9000");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 9000);
  EXPECT_EQ(a.name(), "[::1]:9000");

  a = parse_agent("fd00::3");  // no brackets: all of it is the address
  EXPECT_EQ(a.host, "fd00::3");
  EXPECT_EQ(a.port, common::kLoaddPort);
}

void expect_bad(const std::string& text, const std::string& part) {
  try {
    parse_agent(text);
    FAIL() << "accepted '" << text << "'";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + text + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(ParseAgent, ErrorsNameTheText) {
  expect_bad("", "no host");
  expect_bad(":7313", "no host");
  expect_bad("10.0.0.2:0", "port '0'");
  expect_bad("10.0.0.2:70000", "port '70000'");
  expect_bad("10.0.0.2:http", "port 'http'");
  expect_bad("10.0.0.2:", "port ''");
  expect_bad("10.0.0.2/fast", "kind 'fast'");
  expect_bad("[fd00::2", "'[' without ']'");
  expect_bad("[fd00::2]7313", "':PORT' after ']'");
  expect_bad("[10.0.0.2]:7313", "IPv6");
}

}  // namespace
}  // namespace nabla::loadd
