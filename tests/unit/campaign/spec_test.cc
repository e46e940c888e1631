// Campaign file parsing: a complete spec, defaults, unknown keys and bad
// values (the message names the key path and the value).
#include "nabla/campaign/spec.hh"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using nabla::campaign::CampaignSpec;
using nabla::campaign::parse_campaign_spec;

constexpr const char* kMinimal = R"(
name = "mini"
[[node]]
name = "web"
address = "10.213.0.2"
sniffd = "10.213.0.2:7312"
[workload]
target = "http://10.213.0.2:8080"
rate = 400
)";

constexpr const char* kFull = R"(
name = "rubis"
seed = 42
db = "x.db"
key_file = "/etc/nabla/key"
[[node]]
name = "web"
address = "10.213.0.2"
injectd = "10.213.0.2:7311"
sniffd  = "10.213.0.2"
[[node]]
name = "app"
addresses = ["10.213.0.3", "10.9.0.3"]
injectd = "10.213.0.3:9311"
key_file = "/tmp/app.key"
[workload]
target = "http://10.213.0.2:8080"
rate = 250.5
connections = 8
threads = 2
outstanding = 2
interarrival = "lognormal:0.5"
timeout = "500ms"
mix = { "/view" = 0.4, "/auth" = 0.6 }
warmup = "2s"
[links]
discover = true
discover_for = "1500ms"
include = ["tcp 10.213.0.3 -> 10.213.0.4:9003"]
exclude = ["tcp 10.213.0.1:* -> 10.213.0.2:8080"]
min_messages = 3
[gradient]
bins = 64
chunks = 5
requests_per_bin = 4
delay_scale = 20
min_bins_per_period = 16
max_amplitude = "3ms"
min_amplitude = "100us"
confidence = 0.9
lease = "4s"
repeats = 2
repeat_noise_ratio = 3.5
[truth]
"tcp web -> app:9002" = { "/view" = 2, "/auth" = 0 }
)";

std::string error_of(const std::string& text) {
  try {
    parse_campaign_spec(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CampaignSpec, ParsesEveryField) {
  const CampaignSpec s = parse_campaign_spec(kFull);
  EXPECT_EQ(s.name, "rubis");
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(s.db, "x.db");
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].injectd->to_string(), "10.213.0.2:7311");
  EXPECT_EQ(s.nodes[0].sniffd->port, 7312);  // default port
  EXPECT_EQ(s.nodes[1].addresses.size(), 2u);
  EXPECT_FALSE(s.nodes[1].sniffd.has_value());
  EXPECT_EQ(s.key_file_for(s.nodes[0]), "/etc/nabla/key");
  EXPECT_EQ(s.key_file_for(s.nodes[1]), "/tmp/app.key");
  EXPECT_EQ(s.node_by_address("10.9.0.3"), &s.nodes[1]);
  EXPECT_EQ(s.node_by_address("10.9.0.4"), nullptr);
  EXPECT_TRUE(s.workload.http);
  EXPECT_EQ(s.workload.host, "10.213.0.2");
  EXPECT_EQ(s.workload.port, 8080);
  EXPECT_DOUBLE_EQ(s.workload.rate_rps, 250.5);
  EXPECT_EQ(s.workload.threads, 2);
  EXPECT_DOUBLE_EQ(s.workload.lognormal_sigma, 0.5);
  EXPECT_EQ(s.workload.timeout_ns, 500'000'000);
  EXPECT_EQ(s.workload.warmup_ns, 2'000'000'000);
  ASSERT_EQ(s.workload.mix.size(), 2u);
  EXPECT_EQ(s.links.discover_for_ns, 1'500'000'000);
  EXPECT_EQ(s.links.include.size(), 1u);
  EXPECT_EQ(s.links.min_messages, 3u);
  EXPECT_EQ(s.gradient.bins, 64u);
  EXPECT_EQ(s.gradient.chunks, 5u);
  EXPECT_EQ(s.gradient.requests_per_bin, 4u);
  EXPECT_DOUBLE_EQ(s.gradient.delay_scale, 20);
  EXPECT_EQ(s.gradient.min_bins_per_period, 16u);
  EXPECT_EQ(s.gradient.max_amplitude_ns, 3'000'000);
  EXPECT_EQ(s.gradient.min_amplitude_ns, 100'000);
  EXPECT_DOUBLE_EQ(s.gradient.confidence, 0.9);
  EXPECT_EQ(s.gradient.lease_ns, 4'000'000'000);
  EXPECT_EQ(s.gradient.repeats, 2u);
  EXPECT_DOUBLE_EQ(s.gradient.repeat_noise_ratio, 3.5);
  EXPECT_DOUBLE_EQ(s.truth.at("tcp web -> app:9002").at("/view"), 2.0);
  const auto j = to_json(s);
  EXPECT_EQ(j["gradient"]["bins"], 64);
  EXPECT_EQ(j["workload"]["mix"]["/auth"], 0.6);
  EXPECT_EQ(j["seed"], 42);
}

// The simultaneous schedule uses its training only to rank frequencies and
// size the first amplitudes, so it trains on 2 chunks unless told otherwise.
TEST(CampaignSpec, TrainingChunksDefaultByScheduleAndAnExplicitValueWins) {
  const std::string base = std::string(kMinimal);
  EXPECT_EQ(parse_campaign_spec(base + "[gradient]\nschedule = \"simultaneous\"\n").gradient.chunks,
            nabla::campaign::kSimultaneousChunks);
  EXPECT_EQ(parse_campaign_spec(base + "[gradient]\nschedule = \"sequential\"\n").gradient.chunks,
            nabla::campaign::kSequentialChunks);
  EXPECT_EQ(parse_campaign_spec(base + "[gradient]\nschedule = \"simultaneous\"\nchunks = 6\n")
                .gradient.chunks,
            6u);
}

// Without a schedule a campaign is sequential, with the sequential training,
// so a sweep or a step verification (one link at a time) needs no schedule.
TEST(CampaignSpec, SweepsAndStepsDefaultToTheSequentialSchedule) {
  using nabla::campaign::Schedule;
  const std::string base = std::string(kMinimal) + "[gradient]\n";
  const auto sweep = parse_campaign_spec(base + "amplitudes = [\"1ms\", \"4ms\"]\n").gradient;
  EXPECT_EQ(sweep.schedule, Schedule::kSequential);
  EXPECT_EQ(sweep.chunks, nabla::campaign::kSequentialChunks);
  EXPECT_EQ(parse_campaign_spec(base + "verify = false\n").gradient.schedule,
            Schedule::kSequential);
  EXPECT_EQ(parse_campaign_spec(base + "bins = 64\n").gradient.schedule, Schedule::kSequential);
}

TEST(CampaignSpec, DefaultsFollowThePaper) {
  const CampaignSpec s = parse_campaign_spec(kMinimal);
  EXPECT_FALSE(s.seed.has_value());
  EXPECT_EQ(s.gradient.bins, 128u);
  EXPECT_EQ(s.gradient.schedule, nabla::campaign::Schedule::kSequential);
  EXPECT_EQ(s.gradient.chunks, 9u);  // the sequential schedule's training
  EXPECT_EQ(s.gradient.requests_per_bin, 5u);
  EXPECT_DOUBLE_EQ(s.gradient.delay_scale, 30);
  EXPECT_EQ(s.gradient.min_bins_per_period, 8u);
  EXPECT_EQ(s.gradient.max_amplitude_ns, 5'000'000);
  EXPECT_EQ(s.gradient.min_amplitude_ns, 200'000);
  EXPECT_DOUBLE_EQ(s.gradient.confidence, 0.95);
  EXPECT_EQ(s.gradient.lease_ns, 5'000'000'000);
  EXPECT_EQ(s.gradient.repeats, 1u);  // one more active phase when it was 2x as noisy
  EXPECT_DOUBLE_EQ(s.gradient.repeat_noise_ratio, 2.0);
  EXPECT_TRUE(s.links.discover);
  EXPECT_EQ(s.links.discover_for_ns, 3'000'000'000);
  EXPECT_EQ(s.workload.connections, 16);
  EXPECT_EQ(s.workload.interarrival, "exp");
  EXPECT_EQ(s.workload.warmup_ns, 1'000'000'000);
  ASSERT_EQ(s.workload.mix.size(), 1u);
  EXPECT_EQ(s.workload.mix[0].first, "/");
}

TEST(CampaignSpec, UnknownKeysNameTheFullPath) {
  const std::string base = kMinimal;
  EXPECT_EQ(error_of(base + "[gradient]\nbinz = 64\n"), "unknown key gradient.binz");
  EXPECT_EQ(error_of("colour = 1\n" + base), "unknown key colour");
  EXPECT_EQ(error_of(base + "[[node]]\nname = \"db\"\naddress = \"10.0.0.9\"\ninjectdd = \"x\"\n"),
            "unknown key node[1].injectdd");
  EXPECT_EQ(error_of(base + "[links]\ndiscover_four = \"1s\"\n"),
            "unknown key links.discover_four");
}

TEST(CampaignSpec, BadValuesNameKeyAndValue) {
  const std::string base = kMinimal;
  EXPECT_EQ(error_of(base + "[gradient]\nbins = 100\n"),
            "gradient.bins: must be a power of two >= 8, got 100");
  EXPECT_NE(error_of(base + "[gradient]\nmax_amplitude = \"5\"\n").find("gradient.max_amplitude: "),
            std::string::npos);
  EXPECT_NE(error_of(base + "[gradient]\nconfidence = 1.5\n").find("gradient.confidence"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[gradient]\nchunks = 1\n").find("gradient.chunks: must be in [2"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[gradient]\nmin_amplitude = \"9ms\"\n").find("gradient.min_amplitude"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[gradient]\nrepeats = 6\n").find("gradient.repeats: must be in [0"),
            std::string::npos);
  EXPECT_EQ(error_of(base + "[gradient]\nrepeat_noise_ratio = -1\n"),
            "gradient.repeat_noise_ratio: must be in [0, 100], got -1.000000");
  EXPECT_NE(error_of(base + "[links]\ninclude = [\"tcp 10.0.0.300 -> 10.0.0.2\"]\n")
                .find("links.include: bad link spec"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[links]\ninclude = [\"any 10.0.0.1 -> 10.0.0.2\"]\n")
                .find("links.include: \"any 10.0.0.1 -> 10.0.0.2\": give tcp or udp"),
            std::string::npos);
  // A bad value inside [workload]: build the text rather than append a second table.
  std::string bad_rate = base;
  bad_rate.replace(bad_rate.find("rate = 400"), 10, "rate = -3");
  EXPECT_NE(error_of(bad_rate).find("workload.rate: must be in (0, 1e7], got -3"),
            std::string::npos);
  std::string bad_target = base;
  bad_target.replace(bad_target.find("http://"), 7, "ftp://");
  EXPECT_NE(error_of(bad_target)
                .find("workload.target: scheme must be http, https, h2, h2c, grpc, grpcs or echo"),
            std::string::npos);
  std::string bad_ia = base + "";
  bad_ia.replace(bad_ia.find("rate = 400"), 10, "rate = 4\ninterarrival = \"poisson\"");
  EXPECT_NE(error_of(bad_ia).find("workload.interarrival: must be exp, fixed"), std::string::npos);
  std::string bad_name = base;
  bad_name.replace(bad_name.find("name = \"mini\""), 13, "name = 7");
  EXPECT_EQ(error_of(bad_name), "name: must be a string, got 7");
  EXPECT_EQ(error_of("name = \"x\"\n[workload]\ntarget=\"http://1.2.3.4:1\"\nrate=1\n"),
            "node: give at least one [[node]]");
  EXPECT_NE(error_of(base + "[[node]]\nname = \"web\"\naddress = \"10.0.0.9\"\n")
                .find("node[1].name: \"web\" given twice"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[[node]]\nname = \"Db\"\naddress = \"10.0.0.9\"\n")
                .find("node[1].name: must be 1-64 characters"),
            std::string::npos);
  EXPECT_NE(error_of(base + "[truth]\n\"tcp a -> b\" = { \"/x\" = \"one\" }\n").find("truth."),
            std::string::npos);
  EXPECT_NE(error_of("seed = -1\n" + base).find("seed: must be in [0,"), std::string::npos);
  EXPECT_NE(error_of("name = \n").find("at line 1"), std::string::npos);
}

// IPv6 everywhere an address goes: node addresses (kept as inet_ntop prints
// them, the sniffers' form), bracketed daemon addresses and target.
TEST(CampaignSpec, Ipv6AddressesDaemonsAndTarget) {
  const CampaignSpec s = parse_campaign_spec(R"(
name = "v6"
[[node]]
name = "web"
addresses = ["FD00:0:0::2", "10.213.0.2"]
injectd = "[fd00::2]:7311"
sniffd = "[fd00::2]"
[workload]
target = "http://[fd00::2]:8080/"
rate = 400
)");
  EXPECT_EQ(s.nodes[0].addresses, (std::vector<std::string>{"fd00::2", "10.213.0.2"}));
  EXPECT_EQ(s.nodes[0].injectd->host, "fd00::2");
  EXPECT_EQ(s.nodes[0].injectd->port, 7311);
  EXPECT_EQ(s.nodes[0].sniffd->to_string(), "[fd00::2]:7312");
  EXPECT_EQ(s.workload.host, "fd00::2");
  EXPECT_EQ(s.workload.port, 8080);

  std::string unbracketed = kMinimal;
  unbracketed.replace(unbracketed.find("10.213.0.2:8080"), 15, "fd00::2:8080");
  EXPECT_NE(error_of(unbracketed)
                .find("workload.target: bad HOST:PORT in \"http://fd00::2:8080\" "
                      "(an IPv6 address goes in brackets"),
            std::string::npos)
      << error_of(unbracketed);
  std::string no_port = kMinimal;
  no_port.replace(no_port.find("10.213.0.2:8080"), 15, "[fd00::2]");
  EXPECT_NE(error_of(no_port).find("workload.target: needs a port"), std::string::npos);
}

TEST(CampaignSpec, DiscoveryNeedsASniffer) {
  std::string text = kMinimal;
  text.replace(text.find("sniffd = \"10.213.0.2:7312\"\n"), 27, "");
  EXPECT_EQ(error_of(text), "links.discover: needs at least one node with a sniffd");
  EXPECT_EQ(error_of(text + "[links]\ndiscover = false\n"),
            "links.include: with discover = false, give at least one link");
}

TEST(CampaignSpec, ExampleFileParses) {
  // NABLA_SOURCE_DIR: the repository root, from CMake (__FILE__ is relative
  // when ccache rewrites paths under its base directory).
  const CampaignSpec s = nabla::campaign::load_campaign_spec(std::string(NABLA_SOURCE_DIR) +
                                                             "/examples/campaign.toml");
  EXPECT_FALSE(s.nodes.empty());
  EXPECT_GE(s.workload.mix.size(), 2u);
}

TEST(CampaignSpec, ANodeMayBeANamespaceOrAContainer) {
  const std::string head =
      "name = \"c\"\n[[node]]\nname = \"web\"\naddress = \"10.213.0.2\"\n"
      "sniffd = \"10.213.0.1\"\n";
  const std::string tail = "[workload]\ntarget = \"http://10.213.0.2:8080\"\nrate = 400\n";
  const CampaignSpec named = parse_campaign_spec(head + "netns = \"web-ns\"\n" + tail);
  EXPECT_EQ(named.nodes[0].netns, "web-ns");
  EXPECT_FALSE(named.nodes[0].container.has_value());
  EXPECT_EQ(to_json(named)["nodes"][0]["netns"], "web-ns");
  const CampaignSpec ctr = parse_campaign_spec(head + "container = \"3f2a9c1d0b7e\"\n" + tail);
  EXPECT_EQ(ctr.nodes[0].container, "3f2a9c1d0b7e");
  EXPECT_EQ(parse_campaign_spec(head + "netns = \"pid:812\"\n" + tail).nodes[0].netns, "pid:812");
  EXPECT_NE(error_of(head + "netns = \"a/b\"\n" + tail).find("node[0].netns: "), std::string::npos);
  EXPECT_NE(error_of(head + "container = \"xyz\"\n" + tail).find("node[0].container: must be"),
            std::string::npos);
  EXPECT_NE(
      error_of(head + "netns = \"a\"\ncontainer = \"3f2a9c1d0b7e\"\n" + tail).find("not both"),
      std::string::npos);
}

}  // namespace

namespace {

// [gradient] amplitudes and verify: sorted, distinct, in range; neither with
// the simultaneous schedule; every error names the key.
TEST(CampaignSpec, SweepAmplitudesAndVerify) {
  const std::string base = kMinimal;
  const CampaignSpec plain = parse_campaign_spec(base);
  EXPECT_TRUE(plain.gradient.amplitudes_ns.empty());
  EXPECT_FALSE(plain.gradient.verify);
  const CampaignSpec s = parse_campaign_spec(
      base + "[gradient]\namplitudes = [\"16ms\", \"1ms\", \"4ms\"]\nverify = true\n");
  EXPECT_EQ(s.gradient.amplitudes_ns,
            (std::vector<std::int64_t>{1'000'000, 4'000'000, 16'000'000}));
  EXPECT_TRUE(s.gradient.verify);
  EXPECT_EQ(to_json(s)["gradient"]["amplitudes_ns"].size(), 3u);
  EXPECT_EQ(to_json(s)["gradient"]["verify"], true);
  EXPECT_EQ(error_of(base + "[gradient]\namplitudes = [\"1ms\", \"1000us\"]\n"),
            "gradient.amplitudes: lists an amplitude twice");
  EXPECT_EQ(error_of(base + "[gradient]\namplitudes = [\"0ms\"]\n"),
            "gradient.amplitudes: each must be in (0, 10s], got \"0ms\"");
  EXPECT_EQ(error_of(base + "[gradient]\namplitudes = [\"11s\"]\n"),
            "gradient.amplitudes: each must be in (0, 10s], got \"11s\"");
  EXPECT_NE(error_of(base + "[gradient]\namplitudes = [\"5\"]\n").find("gradient.amplitudes: "),
            std::string::npos);
  EXPECT_NE(error_of(base + "[gradient]\namplitudes = [5]\n")
                .find("gradient.amplitudes: must be an array of strings"),
            std::string::npos);
  EXPECT_EQ(
      error_of(base + "[gradient]\namplitudes = [\"1ms\",\"2ms\",\"3ms\",\"4ms\",\"5ms\",\"6ms\","
                      "\"7ms\",\"8ms\",\"9ms\"]\n"),
      "gradient.amplitudes: at most 8 amplitudes, got 9");
  EXPECT_EQ(error_of(base + "[gradient]\nverify = 1\n"),
            "gradient.verify: must be true or false, got 1");
  EXPECT_EQ(error_of(base + "[gradient]\nschedule = \"simultaneous\"\namplitudes = [\"1ms\"]\n"),
            "gradient.amplitudes: needs schedule = \"sequential\" (a sweep measures one link at "
            "a time)");
  EXPECT_EQ(error_of(base + "[gradient]\nschedule = \"simultaneous\"\nverify = true\n"),
            "gradient.verify: needs schedule = \"sequential\" (a step holds one link's delay)");
}

}  // namespace

namespace {

constexpr const char* kGrpcWorkload = R"(
name = "grpc"
[[node]]
name = "api"
address = "10.213.0.2"
sniffd = "10.213.0.2:7312"
[workload]
target = "grpcs://10.213.0.2:50051"
rate = 400
streams_per_connection = 8
insecure = true
grpc_methods = ["/shop.Cart/Get", "/shop.Cart/Put"]
)";

TEST(CampaignSpec, WorkloadOverTlsHttp2AndGrpc) {
  const std::string message_file = ::testing::TempDir() + "nabla-spec-grpc-message.bin";
  std::ofstream(message_file, std::ios::binary) << std::string("\x08\x01", 2);
  const CampaignSpec s =
      parse_campaign_spec(std::string(kGrpcWorkload) + "grpc_messages = [\"" + message_file +
                          "\"]\nmix = { \"/shop.Cart/Get\" = 3, "
                          "\"/shop.Cart/Put\" = 1 }\n");
  const auto& w = s.workload;
  EXPECT_EQ(w.scheme, "grpcs");
  EXPECT_TRUE(w.insecure);
  EXPECT_EQ(w.streams_per_connection, 8);
  ASSERT_EQ(w.grpc_methods.size(), 2u);
  EXPECT_EQ(w.grpc_methods[1].method, "/shop.Cart/Put");
  EXPECT_EQ(w.grpc_methods[1].message, std::string("\x08\x01", 2));  // one file for all
  ASSERT_EQ(w.mix.size(), 2u);
  // Without a mix every method weighs 1.
  const CampaignSpec even = parse_campaign_spec(kGrpcWorkload);
  ASSERT_EQ(even.workload.mix.size(), 2u);
  EXPECT_DOUBLE_EQ(even.workload.mix[0].second, 1.0);
  EXPECT_TRUE(even.workload.grpc_methods[0].message.empty());
  std::remove(message_file.c_str());

  const std::string h2 = R"(
name = "h2"
[[node]]
name = "web"
address = "10.213.0.2"
sniffd = "10.213.0.2:7312"
[workload]
rate = 400
)";
  const CampaignSpec https = parse_campaign_spec(h2 + "target = \"h2://10.213.0.2:8443\"\n");
  EXPECT_EQ(https.workload.scheme, "h2");
  EXPECT_TRUE(https.workload.http);
  EXPECT_NE(error_of(h2 + "target = \"h2c://10.213.0.2:80\"\nca_file = \"x.pem\"\n")
                .find("workload.ca_file: only for https, h2 and grpcs"),
            std::string::npos);
  EXPECT_NE(error_of(h2 + "target = \"https://10.213.0.2:443\"\nstreams_per_connection = 4\n")
                .find("workload.streams_per_connection: only for h2"),
            std::string::npos);
  EXPECT_NE(error_of(h2 + "target = \"grpc://10.213.0.2:50051\"\n")
                .find("workload.grpc_methods: required"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kGrpcWorkload) + "mix = { \"/shop.Cart/Del\" = 1 }\n")
                .find("workload.mix: \"/shop.Cart/Del\" is not one of grpc_methods"),
            std::string::npos);
  EXPECT_NE(error_of(h2 + "target = \"ftp://10.213.0.2:21\"\n").find("scheme must be http, https"),
            std::string::npos);
}

}  // namespace

namespace agents_test {

std::string with_agents(const std::string& agents) {
  return std::string(kMinimal) + "agents = " + agents + "\n";
}

TEST(CampaignSpec, WorkloadAgentsAreParsedAndStored) {
  const CampaignSpec none = parse_campaign_spec(kMinimal);
  EXPECT_TRUE(none.workload.agents.empty());
  EXPECT_EQ(to_json(none)["workload"]["agents"], nlohmann::json::array());

  const CampaignSpec s = parse_campaign_spec(
      with_agents(R"(["10.213.0.1", "10.213.0.5:9313/latency", "[fd00::1]/throughput"])"));
  ASSERT_EQ(s.workload.agents.size(), 3u);
  EXPECT_EQ(s.workload.agents[0].host, "10.213.0.1");
  EXPECT_EQ(s.workload.agents[0].port, nabla::common::kLoaddPort);
  EXPECT_EQ(s.workload.agents[0].kind, nabla::loadgen::AgentKind::kSymmetric);
  EXPECT_EQ(s.workload.agents[1].port, 9313);
  EXPECT_EQ(s.workload.agents[1].kind, nabla::loadgen::AgentKind::kLatency);
  EXPECT_EQ(s.workload.agents[2].host, "fd00::1");
  EXPECT_EQ(s.workload.agents[2].kind, nabla::loadgen::AgentKind::kThroughput);
  const nlohmann::json stored = to_json(s)["workload"]["agents"];
  ASSERT_EQ(stored.size(), 3u);
  EXPECT_EQ(stored[1], "10.213.0.5:9313/latency");
  // What is stored parses back to the same agents.
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const auto again = nabla::loadd::parse_agent(stored[i].get<std::string>());
    EXPECT_EQ(again.name(), s.workload.agents[i].name());
    EXPECT_EQ(again.kind, s.workload.agents[i].kind);
  }
}

TEST(CampaignSpec, BadWorkloadAgentsNameTheEntry) {
  EXPECT_EQ(error_of(with_agents(R"(["10.213.0.1", "10.213.0.2/fast"])"))
                .rfind("workload.agents[1]: agent '10.213.0.2/fast': kind 'fast'", 0),
            0u)
      << error_of(with_agents(R"(["10.213.0.1", "10.213.0.2/fast"])"));
  EXPECT_EQ(error_of(with_agents(R"([""])")).rfind("workload.agents[0]: ", 0), 0u);
  EXPECT_EQ(error_of(with_agents(R"(["[fd00::1"])")).rfind("workload.agents[0]: ", 0), 0u);
  EXPECT_EQ(error_of(with_agents(R"(["10.213.0.1", "10.213.0.1:7313"])")),
            "workload.agents[1]: \"10.213.0.1:7313\": agent 10.213.0.1:7313 given twice");
  EXPECT_EQ(error_of(with_agents("[]")),
            "workload.agents: empty (leave it out to send the load from here)");
  EXPECT_EQ(error_of(with_agents("\"10.213.0.1\"")).rfind("workload.agents: must be an array", 0),
            0u);
  EXPECT_EQ(error_of(with_agents("[1]")).rfind("workload.agents", 0), 0u);
  EXPECT_EQ(error_of(with_agents(R"(["10.213.0.1/throughput"])"))
                .rfind("workload.agents: every agent is a throughput agent", 0),
            0u);
}

TEST(CampaignSpec, AgentsAreRefusedWithExperiments) {
  std::string text = with_agents(R"(["10.213.0.1"])");
  text.replace(text.find("sniffd ="), 0, "injectd = \"10.213.0.2:7311\"\n");
  text += R"(
[[experiment]]
name = "slow"
nodes = ["web"]
delay = "20ms"
baseline = "2s"
fault = "3s"
recovery = "1s"
slo = { p99 = "50ms" }
)";
  EXPECT_EQ(error_of(text).rfind("workload.agents: not with [[experiment]]", 0), 0u)
      << error_of(text);
}

}  // namespace agents_test
