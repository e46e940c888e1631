// The workload's one rule set under both front ends' names, and its engine.
#include "nabla/load/workload.hh"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace nabla::load {
namespace {

std::string error_of(const WorkloadInput& in, const WorkloadKeys& keys) {
  try {
    parse_workload(in, keys);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

WorkloadInput grpc_input() {
  WorkloadInput in;
  in.target = "grpc://10.0.0.2:50051";
  in.grpc_methods = {"/shop.Cart/Get", "/shop.Cart/Put"};
  return in;
}

TEST(Workload, OneRuleNamedAsEachFrontEndNamesTheValue) {
  WorkloadInput in = grpc_input();
  in.mix = Mix{{"/shop.Cart/Del", 1}};
  EXPECT_EQ(error_of(in, flag_keys()), "--mix: \"/shop.Cart/Del\" is not one of --grpc-method");
  EXPECT_EQ(error_of(in, table_keys("workload")),
            "workload.mix: \"/shop.Cart/Del\" is not one of grpc_methods");

  WorkloadInput tls;
  tls.target = "https://10.0.0.2:443/";
  tls.insecure = true;
  tls.ca_file = "ca.pem";
  EXPECT_EQ(error_of(tls, flag_keys()), "--insecure: give either --insecure or --ca-file");
  EXPECT_EQ(error_of(tls, table_keys("workload")),
            "workload.insecure: give either insecure or ca_file");
}

TEST(Workload, TheCommandLineMixAndATableGiveTheSameEngine) {
  WorkloadInput text = grpc_input();
  text.mix = parse_mix_list("/shop.Cart/Get=3,/shop.Cart/Put=1", "--mix");
  WorkloadInput table = grpc_input();
  table.mix = Mix{{"/shop.Cart/Get", 3}, {"/shop.Cart/Put", 1}};
  const auto a = engine_config(parse_workload(text, flag_keys()));
  const auto b = engine_config(parse_workload(table, table_keys("workload")));
  ASSERT_EQ(a.protocol.grpc_calls.size(), 2u);
  ASSERT_EQ(b.protocol.grpc_calls.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.protocol.grpc_calls[i].method, b.protocol.grpc_calls[i].method);
    EXPECT_DOUBLE_EQ(a.protocol.grpc_calls[i].weight, b.protocol.grpc_calls[i].weight);
  }
  EXPECT_DOUBLE_EQ(a.protocol.grpc_calls[0].weight, 3);
  EXPECT_EQ(a.protocol.kind, loadgen::ProtocolSpec::Kind::kGrpc);
  EXPECT_EQ(a.protocol.host_header, b.protocol.host_header);
  EXPECT_EQ(a.port, 50051);
  EXPECT_FALSE(parse_mix_list("", "--mix").has_value());
  EXPECT_THROW(parse_mix_list("/a", "--mix"), std::invalid_argument);
}

TEST(Workload, EngineOfAnHttpWorkload) {
  WorkloadInput in;
  in.target = "h2://web.lab:8443/view";
  in.connections = 8;
  in.threads = 2;
  in.streams_per_connection = 16;
  in.interarrival = "lognormal:0.5";
  in.timeout_ns = 500'000'000;
  in.seed = 9;
  const Workload w = parse_workload(in, flag_keys());
  EXPECT_EQ(w.mix, (Mix{{"/view", 1.0}}));
  const loadgen::EngineConfig c = engine_config(w);
  EXPECT_EQ(c.protocol.kind, loadgen::ProtocolSpec::Kind::kHttp2);
  EXPECT_EQ(c.protocol.scheme, "https");
  EXPECT_EQ(c.max_outstanding, 16);
  EXPECT_EQ(c.schedule.kind, loadgen::ScheduleKind::kLognormal);
  EXPECT_DOUBLE_EQ(c.schedule.lognormal_sigma, 0.5);
  EXPECT_TRUE(c.tls.enabled);
  EXPECT_EQ(c.tls.server_name, "web.lab");
  EXPECT_EQ(c.request_timeout_ns, 500'000'000);
  EXPECT_EQ(c.seed, 9u);
  ASSERT_EQ(c.protocol.urls.size(), 1u);
  EXPECT_EQ(c.protocol.urls[0].path, "/view");
}

TEST(Workload, AFrontEndsSchemesAndPortRules) {
  const TargetRules campaign{{"http", "echo"}, false, false};
  EXPECT_EQ(parse_target("http://[FD00:0::2]:80/", "t", campaign).host, "fd00::2");
  try {
    parse_target("redis://10.0.0.2:6379", "workload.target", campaign);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload.target: scheme must be http or echo, got \"redis://10.0.0.2:6379\"");
  }
  EXPECT_THROW(parse_target("http://10.0.0.2/", "t", campaign), std::invalid_argument);
  EXPECT_EQ(parse_target("http://10.0.0.2", "t", load_target_rules()).port, 80);
}

}  // namespace
}  // namespace nabla::load
