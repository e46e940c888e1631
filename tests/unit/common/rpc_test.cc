// The control protocol over real loopback sockets: RpcServer on its own
// io_context thread, RpcClient and hand-rolled raw clients that misbehave.
#include "nabla/common/rpc.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/protocol/injectd.hh"
#include "nabla/common/protocol/node.hh"
#include "rpc_test_support.hh"

namespace nabla::common {
namespace {

using namespace std::chrono_literals;
using namespace rpc_test;
using nlohmann::json;

TEST(Rpc, RoundTripWithKey) {
  ServerThread s(keyed_options());
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("echo", {{"x", 1}, {"s", "héllo"}}, 2s), json({{"x", 1}, {"s", "héllo"}}));
  EXPECT_EQ(c.call("add", {{"a", 2}, {"b", 40}}, 2s), json(42));
  EXPECT_EQ(c.call("echo", json::array({1, 2}), 2s), json::array({1, 2}));
}

// A client sends the message struct and gets its Result back; the server
// registers the message's kMethod.
TEST(Rpc, TypedCallSendsTheMessageAndReadsItsResult) {
  ServerThread s(keyed_options());
  s.server().add_method(protocol::LeaseRenewParams::kMethod, [](const json& params) {
    const auto p = protocol::LeaseRenewParams::from_json(params);
    if (p.owner != "run-5f3a9c") throw std::invalid_argument("params.owner: not the test's");
    return protocol::LeaseRenewResult{p.id, p.lease_s.value_or(0.0) / 2}.to_json();
  });
  s.server().add_method(protocol::ClockNowParams::kMethod, [](const json& params) {
    protocol::require_no_params(params, protocol::ClockNowParams::kMethod);
    return protocol::ClockNowResult{11, 22}.to_json();
  });
  s.server().add_method(protocol::DaemonInfoParams::kMethod, [](const json& params) {
    protocol::require_no_params(params, protocol::DaemonInfoParams::kMethod);
    return json{{"version", "test"}};
  });
  s.server().add_method(protocol::InjectListParams::kMethod, [](const json&) {
    return json{{"injections", 3}};
  });
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);

  const protocol::LeaseRenewResult renewed =
      c.call(protocol::LeaseRenewParams{"inj-1", 8.0, "run-5f3a9c"}, 2s);
  EXPECT_EQ(renewed, (protocol::LeaseRenewResult{"inj-1", 4.0}));
  EXPECT_EQ(c.call(protocol::ClockNowParams{}, 2s), (protocol::ClockNowResult{11, 22}));
  // daemon.info has no one Result: the JSON comes back.
  static_assert(std::is_same_v<decltype(c.call(protocol::DaemonInfoParams{}, 2s)), json>);
  EXPECT_EQ(c.call(protocol::DaemonInfoParams{}, 2s), json({{"version", "test"}}));
  // A result that does not read as the message's Result.
  EXPECT_THROW(c.call(protocol::InjectListParams{}, 2s), std::invalid_argument);
  // The server's errors pass as before.
  try {
    c.call(protocol::LeaseRenewParams{"inj-1", 8.0, "someone-else"}, 2s);
    ADD_FAILURE() << "no error";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), -32602);
  }
}

TEST(Rpc, ChallengeShape) {
  ServerThread s(keyed_options());
  RawClient raw(s.port());
  const json c = raw.challenge();
  EXPECT_EQ(c["jsonrpc"], "2.0");
  EXPECT_EQ(c["method"], "auth.challenge");
  EXPECT_FALSE(c.contains("id"));
  EXPECT_EQ(c["params"]["version"], 3);
  EXPECT_EQ(c["params"]["auth_required"], true);
  // The kind of server and the address this client reached it at.
  EXPECT_EQ(c["params"]["identity"], "rpc@127.0.0.1:" + std::to_string(s.port()));
  EXPECT_EQ(c["params"]["nonce"].get<std::string>().size(), 64u);
  RawClient other(s.port());
  EXPECT_NE(other.challenge()["params"]["nonce"], c["params"]["nonce"]);
}

TEST(Rpc, HandlerErrorsMapToCodesAndServerKeepsServing) {
  ServerThread s(keyed_options());
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  const auto code_of = [&](const std::string& method, const json& params) {
    try {
      c.call(method, params, 2s);
    } catch (const RpcError& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(0, std::string());
  };
  EXPECT_EQ(code_of("add", {{"a", 1}}),
            std::make_pair(-32602, std::string("params.b must be an integer")));
  EXPECT_EQ(code_of("nope", {}), std::make_pair(-32601, std::string("method 'nope' not found")));
  EXPECT_EQ(code_of("boom", {}), std::make_pair(-32603, std::string("kaboom")));
  EXPECT_EQ(code_of("busy", {}), std::make_pair(-32010, std::string("injection busy")));
  EXPECT_EQ(code_of("auth.challenge", {}).first, -32601);
  const auto missing = code_of("size", {});  // nlohmann .at() on a missing field
  EXPECT_EQ(missing.first, -32602);
  EXPECT_NE(missing.second.find("'s'"), std::string::npos) << missing.second;
  EXPECT_EQ(c.call("add", {{"a", 1}, {"b", 1}}, 2s), json(2));
}

TEST(Rpc, WrongKeyRejectedAndConnectionClosed) {
  ServerThread s(keyed_options());
  try {
    RpcClient::connect("127.0.0.1", s.port(), test_key(0x43), 2s);
    FAIL() << "wrong key accepted";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), -32001);
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos);
  }
  RawClient raw(s.port());
  raw.challenge();
  raw.send_json(make_request(0, "auth.response", {{"hmac", std::string(64, '0')}}));
  const auto err = raw.read();
  ASSERT_TRUE(err);
  EXPECT_EQ((*err)["error"]["code"], -32001);
  EXPECT_EQ((*err)["id"], 0);
  EXPECT_TRUE(raw.closed_within(2000ms));

  RawClient malformed(s.port());
  malformed.challenge();
  malformed.send_json(make_request(0, "auth.response", {{"hmac", 12}}));
  ASSERT_TRUE(malformed.read());
  EXPECT_TRUE(malformed.closed_within(2000ms));
  // Still serving the right key.
  RpcClient ok = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  EXPECT_EQ(ok.call("add", {{"a", 1}, {"b", 2}}, 2s), json(3));
}

TEST(Rpc, UnauthenticatedCallsNothing) {
  ServerThread s(keyed_options());
  RawClient raw(s.port());
  raw.challenge();
  raw.send_json(make_request(5, "echo", {{"x", 1}}));
  const auto err = raw.read();
  ASSERT_TRUE(err);
  EXPECT_EQ((*err)["error"]["code"], -32002);
  EXPECT_EQ((*err)["id"], 5);
  EXPECT_TRUE(raw.closed_within(2000ms));
  try {
    RpcClient::connect("127.0.0.1", s.port(), std::nullopt, 2s);
    FAIL() << "keyless client accepted by a keyed server";
  } catch (const RpcConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("requires authentication"), std::string::npos);
  }
}

TEST(Rpc, SilentClientDroppedAfterAuthTimeout) {
  ServerThread s(keyed_options(200ms));
  RawClient raw(s.port());
  const int64_t start = monotonic_ns();
  raw.challenge();
  EXPECT_TRUE(raw.closed_within(3000ms));
  const double elapsed_ms = static_cast<double>(monotonic_ns() - start) / 1e6;
  EXPECT_GE(elapsed_ms, 180.0);
  EXPECT_LT(elapsed_ms, 1500.0);
  // A slow client trickling its answer is dropped on the same deadline: data
  // before authentication does not extend it.
  RawClient slow(s.port());
  slow.challenge();
  const std::string answer = encode_frame(R"({"jsonrpc":"2.0","id":0,"method":"auth.response"})");
  const int64_t slow_start = monotonic_ns();
  bool closed = false;
  for (std::size_t i = 0; i < answer.size() && !closed; ++i) {
    slow.send_raw(answer.substr(i, 1));
    closed = slow.closed_within(50ms);
  }
  EXPECT_TRUE(closed);
  EXPECT_LT((monotonic_ns() - slow_start) / 1'000'000, 1500);
  // A client that authenticates in time is not dropped afterwards.
  RawClient good(s.port());
  good.authenticate(test_key(0x42));
  std::this_thread::sleep_for(400ms);
  good.send_json(make_request(1, "add", {{"a", 1}, {"b", 1}}));
  const auto r = good.read();
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["result"], 2);
}

TEST(Rpc, OversizedFrameRefused) {
  ServerThread s(keyed_options());
  RawClient raw(s.port());
  raw.authenticate(test_key(0x42));
  // Exactly 1 MiB is allowed.
  json req = make_request(1, "size", {{"s", ""}});
  const std::size_t overhead = req.dump().size();
  req["params"]["s"] = std::string(kMaxFrameBytes - overhead, 'x');
  ASSERT_EQ(req.dump().size(), kMaxFrameBytes);
  raw.send_json(req);
  auto r = raw.read(5000ms);
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["result"], kMaxFrameBytes - overhead);
  // One byte more is refused with an error, then the connection is closed.
  const char header[4] = {0x00, 0x10, 0x00, 0x01};
  raw.send_raw(std::string(header, 4) + std::string(1000, 'y'));
  r = raw.read();
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["error"]["code"], -32003);
  EXPECT_EQ((*r)["id"], nullptr);
  EXPECT_NE((*r)["error"]["message"].get<std::string>().find("1048577"), std::string::npos);
  EXPECT_TRUE(raw.closed_within(2000ms));
  // Oversize before authenticating is refused the same way.
  RawClient early(s.port());
  early.challenge();
  early.send_raw(std::string("\xff\xff\xff\xff", 4));
  r = early.read();
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["error"]["code"], -32003);
  EXPECT_TRUE(early.closed_within(2000ms));
}

TEST(Rpc, MalformedJsonAndUnknownMethodsWhileOthersAreServed) {
  ServerThread s(keyed_options());
  std::atomic<bool> stop{false};
  std::atomic<int> good_calls{0};
  std::atomic<int> bad_results{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
      for (int i = 0; i < 200 && !stop; ++i) {
        if (c.call("add", {{"a", t}, {"b", i}}, 2s) != json(t + i)) ++bad_results;
        ++good_calls;
      }
    });
  }
  RawClient raw(s.port());
  raw.authenticate(test_key(0x42));
  for (int round = 0; round < 20; ++round) {
    raw.send_payload("{this is not json");
    auto r = raw.read();
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["error"]["code"], -32700);
    raw.send_payload("");
    r = raw.read();
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["error"]["code"], -32700);
    raw.send_json({{"jsonrpc", "2.0"}, {"id", round}, {"method", "no.such"}});
    r = raw.read();
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["error"]["code"], -32601);
    EXPECT_EQ((*r)["id"], round);
    raw.send_json({{"jsonrpc", "2.0"}, {"id", round}});
    r = raw.read();
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)["error"]["code"], -32600);
  }
  // Notifications run but are never answered; the next request still is.
  raw.send_json(make_notification("echo", json::object()));
  raw.send_json(make_request("last", "echo", {{"ok", true}}));
  const auto last = raw.read();
  ASSERT_TRUE(last);
  EXPECT_EQ((*last)["id"], "last");
  for (auto& th : clients) th.join();
  EXPECT_EQ(good_calls, 800);
  EXPECT_EQ(bad_results, 0);
}

TEST(Rpc, KeylessLoopbackAndConstructionChecks) {
  RpcServerOptions open;  // 127.0.0.1, no key
  ServerThread s(open);
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), std::nullopt, 2s);
  EXPECT_EQ(c.call("add", {{"a", 3}, {"b", 4}}, 2s), json(7));
  // A client holding a key never talks to it unauthenticated (no downgrade).
  try {
    RpcClient::connect("localhost", s.port(), test_key(1), 2s);
    FAIL() << "a keyed client accepted a keyless server";
  } catch (const RpcConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("auth_required: false"), std::string::npos) << e.what();
  }

  asio::io_context io;
  RpcServerOptions wide;
  wide.listen_address = "0.0.0.0";
  try {
    RpcServer bad(io, wide);
    FAIL() << "non-loopback listen without a key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("without a key"), std::string::npos) << e.what();
  }
  RpcServerOptions junk;
  junk.listen_address = "not-an-address";
  EXPECT_THROW(RpcServer(io, junk), std::invalid_argument);
  RpcServerOptions taken;
  taken.port = s.port();  // already bound by the running server
  try {
    RpcServer dup(io, taken);
    FAIL() << "second bind succeeded";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(s.port())),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(s.server().add_method("auth.sneaky", [](const json&) { return json(); }),
               std::invalid_argument);
}

TEST(Rpc, IPv6Loopback) {
  RpcServerOptions o = keyed_options();
  o.listen_address = "::1";
  std::optional<ServerThread> s;
  try {
    s.emplace(o);
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  RpcClient c = RpcClient::connect("::1", s->port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("add", {{"a", 5}, {"b", 6}}, 2s), json(11));
}

TEST(Rpc, ClientTimeoutsAndConnectionErrorsNameTheServer) {
  ServerThread s(keyed_options());
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  const int64_t start = monotonic_ns();
  try {
    c.call("sleep", {{"ms", 300}}, 50ms);
    FAIL() << "no timeout";
  } catch (const RpcTimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("timed out after 50ms"), std::string::npos) << msg;
    EXPECT_NE(msg.find("127.0.0.1:" + std::to_string(s.port())), std::string::npos) << msg;
  }
  EXPECT_LT((monotonic_ns() - start) / 1'000'000, 1000);
  EXPECT_FALSE(c.connected());
  EXPECT_THROW(c.call("echo", {}, 1s), RpcConnectionError);

  // A closed port: bind one, note it, close it.
  uint16_t free_port = 0;
  {
    FileDescriptor fd = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    free_port = ntohs(addr.sin_port);
  }
  try {
    RpcClient::connect("127.0.0.1", free_port, std::nullopt, 1s);
    FAIL() << "connected to a closed port";
  } catch (const RpcConnectionError& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot connect to 127.0.0.1:" + std::to_string(free_port)),
        std::string::npos)
        << e.what();
  }
  // A listener that never sends the challenge: the handshake times out.
  FileDescriptor mute = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(mute.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(mute.get(), 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(mute.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EXPECT_THROW(RpcClient::connect("127.0.0.1", ntohs(addr.sin_port), std::nullopt, 100ms),
               RpcTimeoutError);
}

TEST(Rpc, StopClosesConnections) {
  auto s = std::make_unique<ServerThread>(keyed_options());
  RpcClient c = RpcClient::connect("127.0.0.1", s->port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("echo", {{"a", 1}}, 2s), json({{"a", 1}}));
  for (int i = 0; i < 100 && s->server().connection_count() != 1; ++i) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(s->server().connection_count(), 1u);
  s.reset();  // stop() + join: io.run() must return
  EXPECT_THROW(c.call("echo", {}, 1s), RpcConnectionError);
}

TEST(Rpc, IdleTimeoutClosesSilentAuthenticatedConnections) {
  RpcServerOptions o = keyed_options();
  // Activity every 100 ms against a 1.5 s timeout: a stall of a loaded
  // machine between two requests must be longer than 1.4 s to close it.
  o.idle_timeout = 1500ms;
  ServerThread s(o);
  RawClient raw(s.port());
  raw.authenticate(test_key(0x42));
  // Activity keeps it open past the idle timeout...
  int64_t last_send_ns = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(100ms);
    last_send_ns = monotonic_ns();
    raw.send_json(make_request(i, "echo", json::object()));
    ASSERT_TRUE(raw.read());
  }
  // ...silence closes it, never before the timeout counted from the last
  // request (the server saw it after it was sent; how soon after the
  // timeout it closes is the machine's business).
  EXPECT_TRUE(raw.closed_within(15000ms));
  const int64_t waited_ms = (monotonic_ns() - last_send_ns) / 1'000'000;
  EXPECT_GE(waited_ms, 1500);
}

TEST(Rpc, MaxConnectionsEnforced) {
  RpcServerOptions o = keyed_options();
  o.max_connections = 2;
  ServerThread s(o);
  RawClient a(s.port());
  RawClient b(s.port());
  a.challenge();
  b.challenge();
  RawClient c(s.port());
  EXPECT_TRUE(c.closed_within(2000ms));
  EXPECT_EQ(s.server().connection_count(), 2u);
}

TEST(Rpc, UnauthenticatedConnectionsAreLimitedPerPeer) {
  RpcServerOptions o = keyed_options();
  o.max_unauthenticated_per_peer = 4;
  ServerThread s(o);
  // One peer, 127.0.0.2, connects and stays silent: 4 get a challenge...
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(std::make_unique<RawClient>(s.port(), "127.0.0.2"));
    if (i > 0) silent.back()->challenge();  // the first one's is read as it authenticates
  }
  // ...the fifth is closed at once, without one.
  RawClient fifth(s.port(), "127.0.0.2");
  EXPECT_FALSE(fifth.read(2000ms));
  EXPECT_TRUE(fifth.closed_within(2000ms));
  EXPECT_EQ(s.server().counters().refused_per_peer, 1u);
  // Another peer (127.0.0.1) is served meanwhile.
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("echo", {{"a", 1}}, 2s), json({{"a", 1}}));
  // Once one of the silent four authenticates, its peer may open another.
  silent.front()->authenticate(test_key(0x42));
  RawClient next(s.port(), "127.0.0.2");
  EXPECT_EQ(next.challenge()["method"], "auth.challenge");
  EXPECT_EQ(s.server().counters().refused_per_peer, 1u);
}

TEST(Rpc, UnauthenticatedFramesAreCappedBeforeParsing) {
  RpcServerOptions o = keyed_options();
  ServerThread s(o);
  RawClient raw(s.port());
  raw.challenge();
  // A frame just over the unauthenticated limit: refused on its header,
  // not parsed as JSON (which would answer -32700).
  const std::string body(o.max_unauthenticated_frame_bytes + 1, '{');
  raw.send_raw(encode_frame_header(body.size()) + body);
  const auto answer = raw.read();
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)["error"]["code"], rpc_code::kFrameTooLarge);
  EXPECT_NE((*answer)["error"]["message"].get<std::string>().find("before authentication"),
            std::string::npos);
  EXPECT_TRUE(raw.closed_within(3000ms));
  // Once authenticated, frames up to 1 MiB are read.
  RawClient authed(s.port());
  authed.authenticate(test_key(0x42));
  const std::string big(200 * 1024, 'x');
  authed.send_json(make_request(1, "size", {{"s", big}}));
  const auto sized = authed.read();
  ASSERT_TRUE(sized);
  EXPECT_EQ((*sized)["result"], big.size());
}

// The most bytes the kernel may hold for one loopback connection: the
// server's send buffer grows up to tcp_wmem's maximum.
std::size_t largest_send_buffer() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_wmem");
  std::size_t low = 0, initial = 0, high = 0;
  if (!(in >> low >> initial >> high)) return 64u * 1024 * 1024;
  return high;
}

TEST(Rpc, PipelinedRequestsWaitForTheirAnswersToBeWritten) {
  RpcServerOptions o = keyed_options();
  ServerThread s(o);
  constexpr std::size_t kAnswerBytes = 256 * 1024;
  constexpr int kRequests = 100;
  std::atomic<int> handled{0};
  s.server().add_method("big", [&handled](const json&) {
    ++handled;
    return json(std::string(kAnswerBytes, 'a'));
  });
  RawClient raw(s.port(), nullptr, 64 * 1024);
  raw.authenticate(test_key(0x42));
  std::string requests;
  for (int i = 1; i <= kRequests; ++i)
    requests += raw.frame(make_request(i, "big", json::object()).dump());
  raw.send_raw(requests);  // all at once, and nothing read
  // Wait until the server has handled all it will while nothing is read.
  for (int i = 0; i < 250 && handled.load() == 0; ++i) std::this_thread::sleep_for(20ms);
  int seen = -1;
  for (int round = 0; round < 100 && handled.load() != seen; ++round) {
    seen = handled.load();
    std::this_thread::sleep_for(200ms);
  }
  int receive_buffer = 0;
  socklen_t len = sizeof receive_buffer;
  ::getsockopt(raw.fd(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, &len);
  // What the kernel can hold on both ends, what may wait unsent, and the
  // answer being written: nowhere near all of them.
  const std::size_t bound =
      (largest_send_buffer() + static_cast<std::size_t>(receive_buffer) + o.max_unsent_bytes) /
          kAnswerBytes +
      3;
  ASSERT_LT(bound, static_cast<std::size_t>(kRequests));
  EXPECT_GE(handled.load(), 1);
  EXPECT_LE(static_cast<std::size_t>(handled.load()), bound);
  // Reading resumes them: every answer arrives, in order.
  for (int i = 1; i <= kRequests; ++i) {
    const auto answer = raw.read(5000ms);
    ASSERT_TRUE(answer) << "answer " << i;
    ASSERT_EQ((*answer)["id"], i);
    ASSERT_TRUE(answer->contains("result")) << answer->dump().substr(0, 200);
  }
  EXPECT_EQ(handled.load(), kRequests);
}

TEST(Rpc, ClientSeesAConnectionTheServerClosedAsIdle) {
  RpcServerOptions o = keyed_options();
  o.idle_timeout = 300ms;
  ServerThread s(o);
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("echo", {{"a", 1}}, 2s), json({{"a", 1}}));
  bool closed = false;
  for (int i = 0; i < 100 && !closed; ++i) {
    std::this_thread::sleep_for(50ms);
    closed = !c.connected();
  }
  EXPECT_TRUE(closed);  // so a caller reconnects instead of sending into it
  EXPECT_EQ(s.server().counters().idle_closed, 1u);
}

TEST(Rpc, DaemonsCloseIdleConnectionsAndProbeWithKeepaliveByDefault) {
  const RpcServerOptions defaults;
  EXPECT_GT(defaults.idle_timeout.count(), 0);
  EXPECT_GT(defaults.keepalive_idle.count(), 0);
  EXPECT_LE(defaults.max_unauthenticated_frame_bytes, 16u * 1024);
}

}  // namespace
}  // namespace nabla::common
