// `nabla load`'s flags for https://, h2://, h2c:// and grpc:// targets
// (load_options.cc), without a socket; and what the binary says when a TLS
// target cannot be reached at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loopback.hh"
#include "nabla/common/netns.hh"
#include "nabla/coordinator/load_command.hh"

namespace nabla::coordinator {
namespace {

namespace fs = std::filesystem;
using loadgen::ProtocolSpec;

LoadOptions base(const std::string& target) {
  LoadOptions o;
  o.target = target;
  o.rate = "100";
  return o;
}

void expect_bad(const LoadOptions& o, const std::string& flag, const std::string& words = "") {
  try {
    parse_load_options(o);
    ADD_FAILURE() << "accepted, expected an error naming " << flag;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(flag + ":", 0), 0u) << what;
    EXPECT_NE(what.find(words), std::string::npos) << what;
  }
}

// A file with `bytes` in the temp dir, removed at the end.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& bytes)
      : path_(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(LoadProtocolFlags, HttpsIsHttpOverTlsCheckedAgainstTheAddressOrName) {
  const LoadPlan p = parse_load_options(base("https://127.0.0.1/view"));
  const auto& e = p.controller.engine;
  EXPECT_EQ(p.target.port, 443);
  EXPECT_EQ(e.protocol.kind, ProtocolSpec::Kind::kHttp);
  EXPECT_TRUE(e.tls.enabled);
  EXPECT_TRUE(e.tls.verify);
  EXPECT_TRUE(e.tls.server_name.empty());  // an address: its IP SAN is checked
  EXPECT_NE(e.tls.sessions, nullptr);      // one cache for every round
  EXPECT_FALSE(e.software_rx_timestamps);
  const LoadPlan named = parse_load_options(base("https://web.lab:8443/view"));
  EXPECT_EQ(named.controller.engine.tls.server_name, "web.lab");
  EXPECT_EQ(named.controller.engine.protocol.host_header, "web.lab");
  LoadOptions o = base("https://127.0.0.1:8443/");
  o.server_name = "shop.example";
  o.insecure = true;
  const LoadPlan insecure = parse_load_options(o);
  EXPECT_EQ(insecure.controller.engine.tls.server_name, "shop.example");
  EXPECT_FALSE(insecure.controller.engine.tls.verify);
  EXPECT_FALSE(parse_load_options(base("http://127.0.0.1/")).controller.engine.tls.enabled);
}

TEST(LoadProtocolFlags, H2IsOverTlsAndH2cIsCleartextWithStreamsAsK) {
  LoadOptions o = base("h2://127.0.0.1/a");
  o.streams_per_connection = 32;
  o.mix = "/a=0.5,/b=0.5";
  const LoadPlan h2 = parse_load_options(o);
  EXPECT_EQ(h2.target.port, 443);
  EXPECT_EQ(h2.controller.engine.protocol.kind, ProtocolSpec::Kind::kHttp2);
  EXPECT_EQ(h2.controller.engine.protocol.scheme, "https");
  EXPECT_EQ(h2.controller.engine.protocol.urls.size(), 2u);
  EXPECT_TRUE(h2.controller.engine.tls.enabled);
  EXPECT_EQ(h2.controller.engine.max_outstanding, 32);
  EXPECT_FALSE(h2.controller.engine.software_rx_timestamps);  // through TLS records: user space
  const LoadPlan h2c = parse_load_options(base("h2c://127.0.0.1/a"));
  EXPECT_EQ(h2c.target.port, 80);
  EXPECT_EQ(h2c.controller.engine.protocol.kind, ProtocolSpec::Kind::kHttp2);
  EXPECT_EQ(h2c.controller.engine.protocol.scheme, "http");
  EXPECT_FALSE(h2c.controller.engine.tls.enabled);
  EXPECT_TRUE(h2c.controller.engine.software_rx_timestamps);  // no TLS record in the way
  EXPECT_EQ(h2c.controller.engine.max_outstanding, 1);
}

TEST(LoadProtocolFlags, GrpcMethodsTakeTheirMessagesFromFilesAndWeightsFromTheMix) {
  const TempFile get("nabla-grpc-get", std::string("\x08\x01", 2));
  const TempFile put("nabla-grpc-put", std::string("\x0a\x03"
                                                   "abc",
                                                   5));
  LoadOptions o = base("grpcs://10.0.0.5:50051");
  o.grpc_methods = {"/shop.Cart/Get", "/shop.Cart/Put"};
  o.grpc_messages = {get.path(), put.path()};
  o.mix = "/shop.Cart/Get=0.75,/shop.Cart/Put=0.25";
  o.ca_file = get.path();  // any readable file; the PEM is read at run time
  const LoadPlan p = parse_load_options(o);
  const auto& spec = p.controller.engine.protocol;
  EXPECT_EQ(spec.kind, ProtocolSpec::Kind::kGrpc);
  EXPECT_EQ(spec.scheme, "https");
  ASSERT_EQ(spec.grpc_calls.size(), 2u);
  EXPECT_EQ(spec.grpc_calls[0].method, "/shop.Cart/Get");
  EXPECT_EQ(spec.grpc_calls[0].message, std::string("\x08\x01", 2));
  EXPECT_DOUBLE_EQ(spec.grpc_calls[0].weight, 0.75);
  EXPECT_EQ(spec.grpc_calls[1].message, std::string("\x0a\x03"
                                                    "abc",
                                                    5));
  EXPECT_DOUBLE_EQ(spec.grpc_calls[1].weight, 0.25);
  EXPECT_EQ(loadgen::type_names(spec),
            (std::vector<std::string>{"/shop.Cart/Get", "/shop.Cart/Put"}));
  EXPECT_TRUE(p.controller.engine.tls.enabled);
  // One message for every method; none: empty messages.
  o.grpc_messages = {put.path()};
  o.mix.clear();
  EXPECT_EQ(parse_load_options(o).controller.engine.protocol.grpc_calls[0].message.size(), 5u);
  o.grpc_messages.clear();
  o.ca_file.clear();
  o.target = "grpc://10.0.0.5:50051";
  const LoadPlan plain = parse_load_options(o);
  EXPECT_TRUE(plain.controller.engine.protocol.grpc_calls[1].message.empty());
  EXPECT_FALSE(plain.controller.engine.tls.enabled);
}

TEST(LoadProtocolFlags, EveryBadValueNamesItsFlag) {
  auto with = [](const std::string& target, auto change) {
    LoadOptions o = base(target);
    change(o);
    return o;
  };
  auto none = [](LoadOptions&) {};
  expect_bad(with("gopher://127.0.0.1:70", none), "--target", "h2c");
  expect_bad(with("grpc://127.0.0.1:50051/pkg.S/M", none), "--target", "no path");
  expect_bad(with("grpc://127.0.0.1", none), "--target", "needs a port");
  expect_bad(with("grpc://127.0.0.1:50051", none), "--grpc-method", "required");
  expect_bad(with("grpc://127.0.0.1:50051", [](LoadOptions& o) { o.grpc_methods = {"Get"}; }),
             "--grpc-method", "/package.Service/Method");
  expect_bad(with("grpc://127.0.0.1:50051",
                  [](LoadOptions& o) {
                    o.grpc_methods = {"/a.S/M", "/a.S/M"};
                  }),
             "--grpc-method", "twice");
  expect_bad(with("grpc://127.0.0.1:50051",
                  [](LoadOptions& o) {
                    o.grpc_methods = {"/a.S/M"};
                    o.grpc_messages = {"/nonexistent/nabla.bin"};
                  }),
             "--grpc-message", "cannot read");
  expect_bad(with("grpc://127.0.0.1:50051",
                  [](LoadOptions& o) {
                    o.grpc_methods = {"/a.S/M", "/a.S/N", "/a.S/O"};
                    o.grpc_messages = {"x", "y"};
                  }),
             "--grpc-message", "one file per");
  expect_bad(with("grpc://127.0.0.1:50051",
                  [](LoadOptions& o) {
                    o.grpc_methods = {"/a.S/M", "/a.S/N"};
                    o.mix = "/a.S/M=1,/a.S/X=1";
                  }),
             "--mix", "not one of");
  expect_bad(with("grpc://127.0.0.1:50051",
                  [](LoadOptions& o) {
                    o.grpc_methods = {"/a.S/M", "/a.S/N"};
                    o.mix = "/a.S/M=1";
                  }),
             "--mix", "every");
  expect_bad(with("http://127.0.0.1/", [](LoadOptions& o) { o.grpc_methods = {"/a.S/M"}; }),
             "--grpc-method", "grpc://");
  expect_bad(with("http://127.0.0.1/", [](LoadOptions& o) { o.ca_file = "ca.pem"; }), "--ca-file",
             "https://");
  expect_bad(with("h2c://127.0.0.1/", [](LoadOptions& o) { o.insecure = true; }), "--ca-file");
  expect_bad(with("https://127.0.0.1/",
                  [](LoadOptions& o) {
                    o.insecure = true;
                    o.ca_file = "ca.pem";
                  }),
             "--insecure");
  expect_bad(with("https://127.0.0.1/", [](LoadOptions& o) { o.ca_file = "/nonexistent.pem"; }),
             "--ca-file", "cannot read");
  expect_bad(with("https://127.0.0.1/", [](LoadOptions& o) { o.streams_per_connection = 8; }),
             "--streams-per-connection", "h2://");
  expect_bad(with("h2c://127.0.0.1/", [](LoadOptions& o) { o.streams_per_connection = -1; }),
             "--streams-per-connection", "1..100000");
  expect_bad(with("h2c://127.0.0.1/",
                  [](LoadOptions& o) {
                    o.streams_per_connection = 8;
                    o.outstanding = 4;
                  }),
             "--streams-per-connection", "same K");
}

TEST(LoadProtocolFlags, AnUnreachableTlsTargetFailsWithTheFirstConnectError) {
  const uint16_t port = nabla::testing::free_loopback_port();  // nothing listens
  const auto r = common::run_command(
      {NABLA_BINARY, "load", "--target", "https://127.0.0.1:" + std::to_string(port) + "/",
       "--rate", "100", "--max-duration", "1s"},
      nullptr, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("first: connect: Connection refused"), std::string::npos)
      << r.stderr_text;
}

TEST(LoadAgentFlags, AgentsAreParsedWithTheirKindsAndTheLease) {
  LoadOptions o = base("memcache://10.0.0.5:11211");
  o.agents = {"10.0.0.11", "10.0.0.12:7400/throughput", "[fd00::3]/latency"};
  o.agent_lease = "10s";
  const LoadPlan plan = parse_load_options(o);
  ASSERT_EQ(plan.agents.size(), 3u);
  EXPECT_EQ(plan.agents[0].name(), "10.0.0.11:7313");
  EXPECT_EQ(plan.agents[0].kind, loadgen::AgentKind::kSymmetric);
  EXPECT_EQ(plan.agents[1].port, 7400);
  EXPECT_EQ(plan.agents[1].kind, loadgen::AgentKind::kThroughput);
  EXPECT_EQ(plan.agents[2].host, "fd00::3");
  EXPECT_EQ(plan.agents[2].kind, loadgen::AgentKind::kLatency);
  EXPECT_EQ(plan.agent_lease, std::chrono::seconds(10));
  EXPECT_TRUE(parse_load_options(base("memcache://10.0.0.5:11211")).agents.empty());
}

TEST(LoadAgentFlags, BadAgentsAndTheAgentsOwnFlagsAreRefusedNamingTheFlag) {
  auto with = [](const std::string& target, std::vector<std::string> agents,
                 void (*set)(LoadOptions&)) {
    LoadOptions o = base(target);
    o.agents = std::move(agents);
    set(o);
    return o;
  };
  const std::string mc = "memcache://10.0.0.5:11211";
  expect_bad(with(mc, {"10.0.0.11/fast"}, [](LoadOptions&) {}), "--agent", "fast");
  expect_bad(with(mc, {"10.0.0.11", "10.0.0.11:7313/latency"}, [](LoadOptions&) {}), "--agent",
             "twice");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.cpus = "0"; }), "--cpus",
             "nabla-loadd");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.rt_priority = 10; }), "--rt-priority");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.cpu_latency_us = "0"; }),
             "--cpu-latency-us");
  // The default holds nothing here when the agents measure.
  EXPECT_EQ(parse_load_options(with(mc, {"10.0.0.11"}, [](LoadOptions&) {})).cpu_latency_us,
            std::nullopt);
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.spin = "50us"; }), "--spin");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.slice = "off"; }), "--slice");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.agent_lease = "1500ms"; }),
             "--agent-lease", "whole seconds");
  expect_bad(with(mc, {"10.0.0.11"}, [](LoadOptions& o) { o.agent_lease = "0s"; }),
             "--agent-lease");
  // A loopback target is each agent's own loopback.
  expect_bad(with("memcache://127.0.0.1:11211", {"10.0.0.11"}, [](LoadOptions&) {}), "--target",
             "10.0.0.11:7313");
  EXPECT_NO_THROW(parse_load_options(
      with("memcache://127.0.0.1:11211", {"127.0.0.1:7400"}, [](LoadOptions&) {})));
}

}  // namespace
}  // namespace nabla::coordinator
