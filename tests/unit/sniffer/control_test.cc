// Sniffer end to end on loopback: a scan finds this process's connection,
// folds the client's ephemeral port, and flows.list / daemon.info answer over
// the real control protocol (RpcServer on 127.0.0.1, no key).
#include "nabla/sniffer/control.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/rpc.hh"
#include "nabla/sniffer/daemon.hh"

namespace nabla::sniffer {
namespace {

using common::FileDescriptor;

// A listener on a free port below the ephemeral range (so it is not folded)
// and one connection to it with a few messages exchanged.
struct Link {
  FileDescriptor listener;
  FileDescriptor client;
  FileDescriptor server;
  uint16_t port = 0;

  Link() {
    const PortRange range = PortRange::read_system();
    // Below the ephemeral range; under 1024 only if the range starts that low (root).
    const uint16_t first = range.low > 20500 ? 20000 : 600;
    for (uint16_t p = first; p < range.low && port == 0; p += 7) {
      listener = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(p);
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) port = p;
    }
    EXPECT_NE(port, 0);
    EXPECT_EQ(::listen(listener.get(), 4), 0);
    client = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    server = FileDescriptor(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buf[16];
    for (int i = 0; i < 5; ++i) {
      client.write_all("request");
      EXPECT_EQ(::recv(server.get(), buf, 7, MSG_WAITALL), 7);
      server.write_all("response");
      EXPECT_EQ(::recv(client.get(), buf, 8, MSG_WAITALL), 8);
    }
  }
};

SnifferOptions quiet_options() {
  SnifferOptions o;
  o.conntrack = false;  // root netns without conntrack rules: nothing to see
  return o;
}

// The flows of this process whose remote or local port is `port`.
std::vector<nlohmann::json> ours(const nlohmann::json& result, uint16_t port) {
  std::vector<nlohmann::json> out;
  for (const auto& f : result.at("flows")) {
    if (f["local"]["pid"] == ::getpid() &&
        (f["local"]["port"] == port || f["remote"]["port"] == port)) {
      out.push_back(f);
    }
  }
  return out;
}

TEST(SnifferControl, FlowsListShowsBothEndsFolded) {
  Link link;
  Sniffer sniffer(quiet_options());
  sniffer.scan(1'000);
  const nlohmann::json result = flows_list(sniffer, nlohmann::json::object());
  const auto flows = ours(result, link.port);
  ASSERT_EQ(flows.size(), 2u) << result.dump();
  for (const auto& f : flows) {
    EXPECT_EQ(f["proto"], "tcp");
    EXPECT_EQ(f["local"]["addr"], "127.0.0.1");
    EXPECT_EQ(f["control"], false);
    EXPECT_GE(f["total"]["segments_out"].get<uint64_t>(), 5u);
    EXPECT_GE(f["total"]["segments_in"].get<uint64_t>(), 5u);
    if (f["direction"] == "outbound") {
      EXPECT_EQ(f["local"]["port"], 0);  // ephemeral client port folded
      EXPECT_EQ(f["remote"]["port"], link.port);
      EXPECT_EQ(f["total"]["bytes_out"], 35u);
      EXPECT_EQ(f["total"]["bytes_in"], 40u);
    } else {
      EXPECT_EQ(f["direction"], "inbound");
      EXPECT_EQ(f["local"]["port"], link.port);
      EXPECT_EQ(f["remote"]["port"], 0);
      EXPECT_EQ(f["total"]["bytes_in"], 35u);
    }
  }
  // Cursor: nothing changed, nothing new; more traffic shows up again.
  const uint64_t cursor = result["cursor"].get<uint64_t>();
  sniffer.scan(2'000);
  EXPECT_TRUE(ours(flows_list(sniffer, {{"since", cursor}}), link.port).empty());
  link.client.write_all("more");
  char buf[4];
  ASSERT_EQ(::recv(link.server.get(), buf, 4, MSG_WAITALL), 4);
  sniffer.scan(3'000);
  const auto changed = ours(flows_list(sniffer, {{"since", cursor}}), link.port);
  ASSERT_FALSE(changed.empty());
  for (const auto& f : changed) EXPECT_EQ(f["last_seen_ns"], 3'000);
  // Threshold above the link's message count hides it.
  EXPECT_TRUE(ours(flows_list(sniffer, {{"min_messages", 1000}}), link.port).empty());
}

// A flow's place in an answer: namespace, protocol, both ends and pid.
std::string identity(const nlohmann::json& f) {
  return std::to_string(f["netns"]["inode"].get<uint64_t>()) + " " + f["proto"].get<std::string>() +
         " " + f["local"]["addr"].get<std::string>() + ":" +
         std::to_string(f["local"]["port"].get<int>()) + " " +
         f["remote"]["addr"].get<std::string>() + ":" +
         std::to_string(f["remote"]["port"].get<int>()) + " " +
         std::to_string(f["local"]["pid"].get<int64_t>());
}

// Pages: with a page of one flow, the pages of a listing hold exactly the
// flows of the whole answer, each once, under one cursor; a flow that changes
// while the pages are read is left to the next listing, never sent twice in
// one; a token that is not the daemon's is refused naming `after`.
TEST(SnifferControl, FlowsListInPagesListsEveryFlowOnce) {
  Link a;
  Link b;
  Sniffer sniffer(quiet_options());
  sniffer.scan(1'000);
  const nlohmann::json whole = flows_list(sniffer, nlohmann::json::object());
  ASSERT_EQ(whole["more"], false);
  std::multiset<std::string> expected;
  for (const auto& f : whole["flows"]) expected.insert(identity(f));
  ASSERT_GE(expected.size(), 4u);  // both ends of a and b at least

  std::multiset<std::string> paged;
  nlohmann::json params = nlohmann::json::object();
  std::size_t pages = 0;
  for (;;) {
    const nlohmann::json page = flows_list(sniffer, params, 1);
    ++pages;
    EXPECT_EQ(page["cursor"], whole["cursor"]);
    EXPECT_EQ(page["flows"].size(), 1u);
    for (const auto& f : page["flows"]) paged.insert(identity(f));
    if (!page["more"].get<bool>()) break;
    params["after"] = page["next"];
    ASSERT_LE(pages, expected.size());
  }
  EXPECT_EQ(pages, expected.size());
  EXPECT_EQ(paged, expected);

  // The same with a change in the middle: a's flows move to the next listing.
  std::set<std::string> seen;
  params = nlohmann::json::object();
  uint64_t cursor = 0;
  for (pages = 0;; ++pages) {
    const nlohmann::json page = flows_list(sniffer, params, 1);
    cursor = page["cursor"].get<uint64_t>();
    for (const auto& f : page["flows"]) EXPECT_TRUE(seen.insert(identity(f)).second) << f.dump();
    if (!page["more"].get<bool>()) break;
    params["after"] = page["next"];
    if (pages == 0) {
      a.client.write_all("more");
      char buf[4];
      ASSERT_EQ(::recv(a.server.get(), buf, 4, MSG_WAITALL), 4);
      sniffer.scan(2'000);
    }
  }
  const auto next_listing = ours(flows_list(sniffer, {{"since", cursor}}), a.port);
  EXPECT_EQ(next_listing.size(), 2u);

  EXPECT_THROW(flows_list(sniffer, {{"after", "not/a/token"}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, {{"after", "1/2/3/"}}), std::invalid_argument);
}

TEST(SnifferControl, ControlPortsLabelledAndHidden) {
  Link link;
  SnifferOptions o = quiet_options();
  o.control_ports = {link.port};
  Sniffer sniffer(o);
  sniffer.scan(1);
  EXPECT_TRUE(ours(flows_list(sniffer, {}), link.port).empty());
  const auto shown = ours(flows_list(sniffer, {{"include_control", true}}), link.port);
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[0]["control"], true);
}

// A coordinator's calls to a load agent are nabla's own connections too, as
// its calls to the injectors and sniffers are: `nabla discover` hides them.
TEST(SnifferControl, TheThreeDaemonsDefaultPortsAreControlPorts) {
  EXPECT_EQ(SnifferOptions{}.control_ports,
            (std::vector<uint16_t>{common::kInjectdPort, common::kSniffdPort, common::kLoaddPort}));
}

TEST(SnifferControl, ParamsValidated) {
  Sniffer sniffer(quiet_options());
  EXPECT_THROW(flows_list(sniffer, {{"since", -1}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, {{"since", "3"}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, {{"min_messages", 2e9}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, {{"include_control", 1}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, {{"bogus", 1}}), std::invalid_argument);
  EXPECT_THROW(flows_list(sniffer, nlohmann::json::array()), std::invalid_argument);
  EXPECT_NO_THROW(flows_list(sniffer, nullptr));
}

TEST(SnifferControl, OverRpc) {
  Link link;
  Sniffer sniffer(quiet_options());
  sniffer.scan(1);
  asio::io_context io;
  common::RpcServerOptions opts;
  common::RpcServer server(io, opts);
  register_control_methods(server, sniffer);
  std::thread control([&] { io.run(); });
  {
    auto client = common::RpcClient::connect("127.0.0.1", server.port(), std::nullopt,
                                             std::chrono::seconds(2));
    const nlohmann::json flows = client.call("flows.list", {}, std::chrono::seconds(2));
    EXPECT_EQ(ours(flows, link.port).size(), 2u);
    const nlohmann::json info = client.call("daemon.info", {}, std::chrono::seconds(2));
    EXPECT_EQ(info["daemon"], "nabla-sniffd");
    EXPECT_EQ(info["pid"], ::getpid());
    EXPECT_EQ(info["scans"], 1u);
    EXPECT_EQ(info["sock_diag"]["malformed"], 0u);
    try {
      client.call("flows.list", {{"since", "x"}}, std::chrono::seconds(2));
      ADD_FAILURE() << "bad params accepted";
    } catch (const common::RpcError& e) {
      EXPECT_EQ(e.code(), -32602);
      EXPECT_NE(std::string(e.what()).find("since"), std::string::npos);
    }
    // The daemon keeps serving after a bad request.
    EXPECT_NO_THROW(client.call("daemon.info", {}, std::chrono::seconds(2)));
  }
  server.stop();
  control.join();
}

TEST(SnifferDaemon, PrintModeRunsBoundedScans) {
  Link link;
  DaemonOptions opts;
  opts.sniffer = quiet_options();
  opts.sniffer.interval_ns = 20'000'000;
  opts.print = true;
  opts.max_scans = 3;
  // Its one-per-namespace lock (as root) in a directory of its own, not the
  // host's /run/nabla.
  opts.run_dir = ::testing::TempDir() + "nabla-sniffd-lock-" + std::to_string(::getpid());
  std::ostringstream out;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_daemon(opts, out), 0);
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  // Scans at 0, 20 and 40 ms from the start.
  EXPECT_GE(elapsed, std::chrono::milliseconds(40));
  EXPECT_LT(elapsed, std::chrono::seconds(2));
  const std::string text = out.str();
  EXPECT_NE(text.find("segs_out"), std::string::npos);
  EXPECT_NE(text.find("127.0.0.1:" + std::to_string(link.port)), std::string::npos) << text;
  ::rmdir(opts.run_dir.c_str());  // the lock file went with the daemon
}

}  // namespace
}  // namespace nabla::sniffer
