// The sealed channel after the handshake (protocol version 3): FrameSealer on
// its own, then forged frames on real loopback sockets against a real
// RpcServer (each closes only its own connection), a forged server frame
// against RpcClient, several keys per server, version mismatches, and
// sessions through a port forward.
#include "nabla/common/rpc_session.hh"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "loopback.hh"
#include "rpc_test_support.hh"
#include "tcp_forward.hh"

namespace nabla::common {
namespace {

using namespace std::chrono_literals;
using namespace rpc_test;
using nlohmann::json;
using Verdict = FrameSealer::Verdict;

Nonce nonce_of(uint8_t fill) {
  Nonce n{};
  n.fill(fill);
  return n;
}

// A client and a server sealer of one session.
struct SealerPair {
  SealerPair()
      : client(derive_session_key(test_key(7), nonce_of(1), nonce_of(2), kIdentity),
               FrameSealer::Peer::kClient),
        server(derive_session_key(test_key(7), nonce_of(1), nonce_of(2), kIdentity),
               FrameSealer::Peer::kServer) {}
  static constexpr const char* kIdentity = "injectd@10.0.0.12:7311";
  FrameSealer client;
  FrameSealer server;
};

// The body FrameDecoder would hand over for a whole sealed frame.
std::string body_of(const std::string& frame) {
  return frame.substr(kFrameHeaderBytes);
}

TEST(FrameSealer, RoundTripsBothDirectionsInSequence) {
  SealerPair p;
  std::string payload;
  for (int i = 0; i < 3; ++i) {
    const std::string sent = "request " + std::to_string(i);
    const std::string frame = p.client.seal(sent);
    EXPECT_EQ(frame.size(), kFrameHeaderBytes + kSealOverheadBytes + sent.size());
    EXPECT_EQ(frame.substr(0, 4), encode_frame_header(sent.size()));  // header counts the payload
    ASSERT_EQ(p.server.open(body_of(frame), payload), Verdict::kOk);
    EXPECT_EQ(payload, sent);
    ASSERT_EQ(p.client.open(body_of(p.server.seal("answer")), payload), Verdict::kOk);
    EXPECT_EQ(payload, "answer");
  }
  EXPECT_EQ(p.server.next_receive_seq(), 3u);
  EXPECT_THROW(p.client.seal(std::string(kMaxFrameBytes + 1, 'x')), std::length_error);
}

TEST(FrameSealer, RefusesTamperedReplayedReorderedReflectedAndTruncated) {
  SealerPair p;
  std::string payload;
  const std::string first = body_of(p.client.seal("first"));
  const std::string second = body_of(p.client.seal("second"));
  std::string flipped = first;
  flipped[kFrameSeqBytes + 2] ^= 0x01;
  EXPECT_EQ(p.server.open(flipped, payload), Verdict::kBadMac);
  std::string bumped_seq = first;
  bumped_seq[kFrameSeqBytes - 1] ^= 0x01;
  EXPECT_EQ(p.server.open(bumped_seq, payload), Verdict::kBadMac);
  EXPECT_EQ(p.server.open(second, payload), Verdict::kOutOfOrder);
  EXPECT_EQ(p.server.open(first.substr(0, kSealOverheadBytes - 1), payload), Verdict::kTruncated);
  EXPECT_EQ(p.server.open(first.substr(0, first.size() - 1), payload), Verdict::kBadMac);
  // A client frame sent back to the client: the direction byte differs.
  EXPECT_EQ(p.client.open(first, payload), Verdict::kBadMac);
  // A failed open changes nothing: the honest frames still open, once.
  ASSERT_EQ(p.server.open(first, payload), Verdict::kOk);
  EXPECT_EQ(payload, "first");
  EXPECT_EQ(p.server.open(first, payload), Verdict::kOutOfOrder);
  ASSERT_EQ(p.server.open(second, payload), Verdict::kOk);
  EXPECT_EQ(payload, "second");
  EXPECT_NE(std::string(FrameSealer::describe(Verdict::kOutOfOrder)).find("replayed"),
            std::string::npos);
}

TEST(FrameSealer, EveryNonceKeyAndIdentityGivesItsOwnSession) {
  const Key k = test_key(7);
  const std::string a = "injectd@10.0.0.12:7311";
  const auto bytes = [](const Key& key) { return key.bytes(); };
  const auto base = bytes(derive_session_key(k, nonce_of(1), nonce_of(2), a));
  EXPECT_NE(base, bytes(derive_session_key(k, nonce_of(1), nonce_of(3), a)));
  EXPECT_NE(base, bytes(derive_session_key(k, nonce_of(4), nonce_of(2), a)));
  EXPECT_NE(base, bytes(derive_session_key(test_key(8), nonce_of(1), nonce_of(2), a)));
  // Another node, another daemon of the node, another port: another session.
  for (const char* other :
       {"injectd@10.0.0.13:7311", "sniffd@10.0.0.12:7311", "injectd@10.0.0.12:7312", ""}) {
    EXPECT_NE(base, bytes(derive_session_key(k, nonce_of(1), nonce_of(2), other))) << other;
    EXPECT_NE(client_proof(k, nonce_of(1), nonce_of(2), a),
              client_proof(k, nonce_of(1), nonce_of(2), other))
        << other;
  }
  const Mac proof = client_proof(k, nonce_of(1), nonce_of(2), a);
  EXPECT_FALSE(std::equal(proof.begin(), proof.end(), base.begin()));
  EXPECT_NE(client_proof(k, nonce_of(1), nonce_of(2), a),
            client_proof(k, nonce_of(2), nonce_of(1), a));
}

TEST(SessionIdentity, NamesTheKindAndTheAddressAsBothEndsWriteIt) {
  EXPECT_EQ(session_identity("injectd", {*IpAddress::parse("10.0.0.12"), 7311}),
            "injectd@10.0.0.12:7311");
  EXPECT_EQ(session_identity("sniffd", {*IpAddress::parse("fd00::2"), 7312}),
            "sniffd@[fd00::2]:7312");
  // A dual-stack listener sees an IPv4 client's address IPv4-mapped.
  EXPECT_EQ(session_identity("injectd", {*IpAddress::parse("::ffff:10.0.0.12"), 7311}),
            "injectd@10.0.0.12:7311");
}

// Sends `forged` on an authenticated connection and expects it closed with
// no answer.
void expect_forgery_closes(RawClient& raw, const std::string& forged) {
  raw.send_raw(forged);
  EXPECT_FALSE(raw.read(2000ms).has_value());
  EXPECT_TRUE(raw.closed_within(2000ms));
}

std::string echo_request(int id) {
  return make_request(id, "echo", {{"n", id}}).dump();
}

TEST(RpcSealed, ForgedFramesCloseOnlyTheirConnection) {
  ServerThread s(keyed_options());
  RpcClient bystander = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
  const std::vector<std::pair<std::string, std::function<std::string(RawClient&)>>> forgeries = {
      {"flipped payload byte",
       [](RawClient& raw) {
         std::string f = raw.frame(echo_request(1));
         f[kFrameHeaderBytes + kFrameSeqBytes + 5] ^= 0x20;
         return f;
       }},
      {"replayed frame",
       [](RawClient& raw) {
         const std::string f = raw.frame(echo_request(1));
         raw.send_raw(f);
         EXPECT_TRUE(raw.read().has_value());  // the original is answered
         return f;
       }},
      {"reordered frames",
       [](RawClient& raw) {
         raw.frame(echo_request(1));  // frame 0, never sent
         return raw.frame(echo_request(2));
       }},
      {"injected frame with a guessed MAC",
       [](RawClient&) {
         const std::string payload = echo_request(1);
         return encode_frame_header(payload.size()) + std::string(kFrameSeqBytes, '\0') + payload +
                std::string(kFrameMacBytes, '\x5a');
       }},
      {"truncated MAC",
       [](RawClient& raw) {
         const std::string payload = echo_request(1);
         const std::string f = raw.frame(payload);
         // Self-consistent length, 16 bytes of MAC missing.
         return encode_frame_header(payload.size() - 16) +
                f.substr(kFrameHeaderBytes, f.size() - kFrameHeaderBytes - 16);
       }},
      {"unsealed frame after authenticating",
       // Read as the start of a sealed frame, whose MAC then fails.
       [](RawClient& raw) { return encode_frame(echo_request(1)) + raw.frame(echo_request(2)); }},
  };
  for (const auto& [name, forge] : forgeries) {
    SCOPED_TRACE(name);
    RawClient raw(s.port());
    raw.authenticate(test_key(0x42));
    expect_forgery_closes(raw, forge(raw));
    // The daemon serves on: a new honest client and the one already open.
    RpcClient fresh = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s);
    EXPECT_EQ(fresh.call("add", {{"a", 1}, {"b", 2}}, 2s), json(3));
    EXPECT_EQ(bystander.call("echo", {{"still", name}}, 2s), json({{"still", name}}));
  }
}

TEST(RpcSealed, FrameFromAnotherConnectionIsRefused) {
  ServerThread s(keyed_options());
  RawClient a(s.port());
  a.authenticate(test_key(0x42));
  RawClient b(s.port());
  b.authenticate(test_key(0x42));
  const std::string recorded = a.frame(echo_request(1));
  a.send_raw(recorded);
  ASSERT_TRUE(a.read());
  // Same key, same sequence number 0, but another session key.
  expect_forgery_closes(b, recorded);
  a.send_json(make_request(9, "echo", {{"a", true}}));
  const auto r = a.read();
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["id"], 9);
}

// One scripted connection on a loopback listener: what a forged or old
// server would do.
class ScriptedServer {
 public:
  using Script = std::function<void(FileDescriptor&, FrameDecoder&)>;
  explicit ScriptedServer(Script script)
      : listener_(FileDescriptor::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_.get(), 1) != 0) {
      throw std::runtime_error("listen failed");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, script = std::move(script)] {
      FileDescriptor conn(::accept(listener_.get(), nullptr, nullptr));
      FrameDecoder decoder;
      if (conn) script(conn, decoder);
    });
  }
  ~ScriptedServer() { thread_.join(); }
  uint16_t port() const { return port_; }

  // Blocking: the next frame's body from the client ("" on EOF).
  static std::string next_frame(FileDescriptor& conn, FrameDecoder& decoder) {
    std::string frame;
    while (decoder.next(frame) != FrameDecoder::Status::kFrame) {
      char buf[4096];
      const ssize_t n = ::recv(conn.get(), buf, sizeof buf, 0);
      if (n <= 0) return {};
      decoder.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
    return frame;
  }

 private:
  FileDescriptor listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// The identity a client of the scripted server on `conn` means: an
// RpcServer that is no daemon at the address the client connected to.
std::string identity_of(const FileDescriptor& conn) {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  ::getsockname(conn.get(), reinterpret_cast<sockaddr*>(&local), &length);
  return session_identity(kAnyDaemon, *endpoint_of(local));
}

json challenge_message(int version, const Nonce& nonce, const std::string& identity) {
  return make_notification("auth.challenge", {{"version", version},
                                              {"nonce", to_hex(nonce.data(), nonce.size())},
                                              {"auth_required", true},
                                              {"identity", identity}});
}

TEST(RpcSealed, ClientRefusesATamperedServerFrame) {
  const Key key = test_key(0x42);
  ScriptedServer server([&](FileDescriptor& conn, FrameDecoder& decoder) {
    const Nonce server_nonce = nonce_of(9);
    conn.write_all(
        encode_frame(challenge_message(kProtocolVersion, server_nonce, identity_of(conn)).dump()));
    const json response = json::parse(ScriptedServer::next_frame(conn, decoder));
    std::vector<uint8_t> bytes;
    from_hex(response["params"]["nonce"].get<std::string>(), bytes);
    Nonce client_nonce{};
    std::copy(bytes.begin(), bytes.end(), client_nonce.begin());
    Key session = derive_session_key(key, server_nonce, client_nonce, identity_of(conn));
    const Mac proof = server_proof(session);
    conn.write_all(encode_frame(
        make_result(0, {{"authenticated", true}, {"proof", to_hex(proof.data(), proof.size())}})
            .dump()));
    decoder.expect_sealed();
    FrameSealer sealer(std::move(session), FrameSealer::Peer::kServer);
    std::string request;
    sealer.open(ScriptedServer::next_frame(conn, decoder), request);
    std::string answer = sealer.seal(make_result(json::parse(request)["id"], 42).dump());
    answer[kFrameHeaderBytes + kFrameSeqBytes + 3] ^= 0x01;  // tampered on the path
    conn.write_all(answer);
    ScriptedServer::next_frame(conn, decoder);  // until the client closes
  });
  RpcClient c = RpcClient::connect("127.0.0.1", server.port(), key, 2s);
  try {
    c.call("echo", {}, 2s);
    FAIL() << "tampered answer accepted";
  } catch (const RpcConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("MAC does not verify"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(c.connected());
}

TEST(RpcSealed, ClientRefusesAServerWithoutTheKey) {
  ScriptedServer server([](FileDescriptor& conn, FrameDecoder& decoder) {
    conn.write_all(
        encode_frame(challenge_message(kProtocolVersion, nonce_of(3), identity_of(conn)).dump()));
    ScriptedServer::next_frame(conn, decoder);
    // "Authenticated", with a proof made up without the key.
    conn.write_all(encode_frame(
        make_result(0, {{"authenticated", true}, {"proof", std::string(64, 'a')}}).dump()));
    ScriptedServer::next_frame(conn, decoder);
  });
  try {
    RpcClient::connect("127.0.0.1", server.port(), test_key(0x42), 2s);
    FAIL() << "server without the key accepted";
  } catch (const RpcConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("could not prove"), std::string::npos) << e.what();
  }
}

// No downgrade: a fake server that answers the handshake with
// auth_required: false is refused by a client holding a key (given as a key
// or found by a key source, as the nabla CLI finds its key), before the
// client sends anything: no inject.start in plaintext. A client without any
// key still talks to a keyless server (in-process tests only).
TEST(RpcSealed, ClientWithAKeyRefusesAServerSayingAuthRequiredFalse) {
  const auto no_auth_server = [](std::vector<std::string>& received) {
    return [&received](FileDescriptor& conn, FrameDecoder& decoder) {
      conn.write_all(
          encode_frame(make_notification("auth.challenge",
                                         {{"version", kProtocolVersion}, {"auth_required", false}})
                           .dump()));
      for (std::string f; !(f = ScriptedServer::next_frame(conn, decoder)).empty();) {
        received.push_back(f);
      }
    };
  };
  const json start = {{"link", "udp 10.0.0.1 -> 10.0.0.2:9000"}, {"delay", "20ms"}};
  const std::vector<std::function<RpcClient(uint16_t)>> keyed = {
      [](uint16_t port) { return RpcClient::connect("127.0.0.1", port, test_key(0x42), 2s); },
      [](uint16_t port) {
        return RpcClient::connect(
            "127.0.0.1", port, [] { return test_key(0x42); }, 2s);
      },
  };
  for (const auto& connect : keyed) {
    std::vector<std::string> received;
    std::string error;
    {
      ScriptedServer server(no_auth_server(received));
      try {
        RpcClient c = connect(server.port());
        c.call("inject.start", start, 1s);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    EXPECT_NE(error.find("does not ask for authentication (auth_required: false)"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("holds a key"), std::string::npos) << error;
    EXPECT_TRUE(received.empty()) << "the client sent: " << received.front();
    for (const auto& frame : received) EXPECT_EQ(frame.find("inject.start"), std::string::npos);
  }
  // Without a key there is nothing to downgrade from.
  std::vector<std::string> received;
  {
    ScriptedServer server(no_auth_server(received));
    RpcClient c = RpcClient::connect("127.0.0.1", server.port(), std::nullopt, 2s);
    EXPECT_TRUE(c.connected());
  }
  EXPECT_TRUE(received.empty());
}

TEST(RpcVersions, BothEndsRefuseVersionOneNamingBothVersions) {
  ScriptedServer old_server([](FileDescriptor& conn, FrameDecoder& decoder) {
    conn.write_all(encode_frame(challenge_message(1, nonce_of(3), identity_of(conn)).dump()));
    ScriptedServer::next_frame(conn, decoder);
  });
  try {
    RpcClient::connect("127.0.0.1", old_server.port(), test_key(0x42), 2s);
    FAIL() << "version 1 server accepted";
  } catch (const RpcConnectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("version 1, this nabla speaks version 3"), std::string::npos) << msg;
  }
  ServerThread s(keyed_options());
  RawClient old_client(s.port());
  old_client.challenge();
  // A version 1 answer: the HMAC of the server nonce alone, no version.
  old_client.send_json(make_request(0, "auth.response", {{"hmac", std::string(64, '0')}}));
  const auto err = old_client.read();
  ASSERT_TRUE(err);
  EXPECT_EQ((*err)["error"]["code"], -32001);
  const std::string msg = (*err)["error"]["message"];
  EXPECT_NE(msg.find("version 1, this server speaks version 3"), std::string::npos) << msg;
  EXPECT_TRUE(old_client.closed_within(2000ms));
}

class KeyRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-keyring-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Replaces the key file by rename (a new inode), as editors do.
  std::string write_keys(const std::vector<uint8_t>& fills) {
    const std::string path = dir_ + "/keys";
    const std::string tmp = path + ".new";
    {
      std::ofstream out(tmp);
      out << "# control keys, newest first\n\n";
      for (const uint8_t f : fills) {
        const Key k = test_key(f);
        out << "  " << to_hex(k.bytes().data(), k.bytes().size()) << "\n";
      }
    }
    ::chmod(tmp.c_str(), 0600);
    std::rename(tmp.c_str(), path.c_str());
    return path;
  }

  std::string dir_;
};

bool authenticates(uint16_t port, uint8_t fill) {
  try {
    RpcClient c = RpcClient::connect("127.0.0.1", port, test_key(fill), 2s);
    return c.call("add", {{"a", 1}, {"b", 1}}, 2s) == json(2);
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), -32001);
    return false;
  }
}

TEST_F(KeyRingTest, AnyKeyOfTheFileAuthenticatesAndChangesApplyWithoutRestart) {
  RpcServerOptions o;
  o.key_file = write_keys({0x01, 0x02});
  ServerThread s(o);
  EXPECT_TRUE(authenticates(s.port(), 0x01));
  EXPECT_TRUE(authenticates(s.port(), 0x02));
  EXPECT_FALSE(authenticates(s.port(), 0x03));
  // Rotation: the new key is added, later the old one is retired.
  write_keys({0x03, 0x01});
  EXPECT_TRUE(authenticates(s.port(), 0x03));
  EXPECT_TRUE(authenticates(s.port(), 0x01));
  EXPECT_FALSE(authenticates(s.port(), 0x02));
  // A broken file keeps the keys loaded before.
  {
    std::ofstream out(dir_ + "/keys.new");
    out << "not hex\n";
  }
  ::chmod((dir_ + "/keys.new").c_str(), 0600);
  std::rename((dir_ + "/keys.new").c_str(), (dir_ + "/keys").c_str());
  EXPECT_TRUE(authenticates(s.port(), 0x03));
  // Fixed keys and a file together.
  RpcServerOptions both;
  both.keys = {test_key(0x09)};
  both.key_file = write_keys({0x04});
  ServerThread s2(both);
  EXPECT_TRUE(authenticates(s2.port(), 0x09));
  EXPECT_TRUE(authenticates(s2.port(), 0x04));
  EXPECT_FALSE(authenticates(s2.port(), 0x03));
}

TEST_F(KeyRingTest, ABadKeyFileStopsTheServerFromStarting) {
  asio::io_context io;
  RpcServerOptions o;
  o.key_file = dir_ + "/missing";
  EXPECT_THROW(RpcServer(io, o), std::system_error);
  {
    std::ofstream out(dir_ + "/bad");
    out << "# one good, one bad\n" << std::string(64, 'a') << "\nxyz\n";
  }
  ::chmod((dir_ + "/bad").c_str(), 0600);
  o.key_file = dir_ + "/bad";
  try {
    RpcServer server(io, o);
    FAIL() << "bad key file accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_ + "/bad line 3"), std::string::npos) << e.what();
  }
}

// Keys scoped per node: node B refuses node A's key, and says whose key it
// was and whose it is.
TEST(RpcIdentity, AKeyForNodeAIsRefusedByNodeBNamingIt) {
  RpcServerOptions a = keyed_options();
  a.keys = {test_key(0xa1)};
  RpcServerOptions b = keyed_options();
  b.keys = {test_key(0xb2)};
  ServerThread node_a(a);
  ServerThread node_b(b);
  const std::string b_identity = "rpc@127.0.0.1:" + std::to_string(node_b.port());
  try {
    RpcClient::connect("127.0.0.1", node_b.port(), test_key(0xa1), 2s);
    FAIL() << "node B accepted node A's key";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), -32001);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("authentication failed: wrong key: key '" + key_id(test_key(0xa1)) +
                       "' is not a key of " + b_identity),
              std::string::npos)
        << msg;
  }
  RpcClient own_a = RpcClient::connect("127.0.0.1", node_a.port(), test_key(0xa1), 2s);
  RpcClient own_b = RpcClient::connect("127.0.0.1", node_b.port(), test_key(0xb2), 2s);
  EXPECT_EQ(own_a.call("add", {{"a", 1}, {"b", 2}}, 2s), json(3));
  EXPECT_EQ(own_b.call("add", {{"a", 2}, {"b", 2}}, 2s), json(4));
}

// The session is bound to the kind of daemon meant: the same key and
// address, but an injectd where a sniffd was meant, is refused by the client
// before it proves anything.
TEST(RpcIdentity, ClientRefusesAnotherKindOfDaemonAtTheAddress) {
  RpcServerOptions o = keyed_options();
  o.daemon = "injectd";
  ServerThread s(o);
  const std::string at = "127.0.0.1:" + std::to_string(s.port());
  try {
    RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s, "sniffd");
    FAIL() << "an injectd served a client that meant a sniffd";
  } catch (const RpcConnectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(
        msg.find(at + " is \"injectd@" + at + "\", not sniffd@" + at + " as this nabla meant"),
        std::string::npos)
        << msg;
  }
  RpcClient c = RpcClient::connect("127.0.0.1", s.port(), test_key(0x42), 2s, "injectd");
  EXPECT_EQ(c.call("add", {{"a", 1}, {"b", 1}}, 2s), json(2));
}

// A connection meant for node A that lands on node B, which an operator gave
// the same key: B announces itself, and the client sends nothing.
TEST(RpcIdentity, ClientRefusesADaemonThatIsNotTheNodeItMeant) {
  std::vector<std::string> received;
  {
    ScriptedServer node_b([&](FileDescriptor& conn, FrameDecoder& decoder) {
      conn.write_all(encode_frame(
          challenge_message(kProtocolVersion, nonce_of(5), "rpc@10.0.0.13:7311").dump()));
      for (std::string f; !(f = ScriptedServer::next_frame(conn, decoder)).empty();) {
        received.push_back(f);
      }
    });
    const std::string meant = "rpc@127.0.0.1:" + std::to_string(node_b.port());
    try {
      RpcClient::connect("127.0.0.1", node_b.port(), test_key(0x42), 2s);
      FAIL() << "client authenticated to another node";
    } catch (const RpcConnectionError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("is \"rpc@10.0.0.13:7311\", not " + meant + " as this nabla meant"),
                std::string::npos)
          << msg;
    }
  }
  EXPECT_TRUE(received.empty()) << "the client sent: " << received.front();
}

// The server side of the same: a client that means another node (its
// claim, or, when a relay rewrote the claim, its proof) is refused.
TEST(RpcIdentity, ServerRefusesASessionMeantForAnotherNode) {
  ServerThread node_b(keyed_options());
  const std::string b = "rpc@127.0.0.1:" + std::to_string(node_b.port());
  const std::string a = "rpc@127.0.0.1:1";
  {
    RawClient raw(node_b.port());
    const json answer = raw.answer_challenge(test_key(0x42), a);
    ASSERT_TRUE(answer.contains("error")) << answer.dump();
    EXPECT_EQ(answer["error"]["code"], -32001);
    EXPECT_EQ(answer["error"]["message"],
              "authentication failed: this is " + b + ", not '" + a +
                  "' as the client meant: a session is bound to the daemon and node it was "
                  "meant for (a redirected or relayed connection, or a NAT between client and "
                  "daemon)");
    EXPECT_TRUE(raw.closed_within(2000ms));
  }
  {
    // The claim rewritten to B's identity on the path, the proof still A's.
    RawClient raw(node_b.port());
    const json answer = raw.answer_challenge(test_key(0x42), b, a);
    ASSERT_TRUE(answer.contains("error")) << answer.dump();
    EXPECT_EQ(answer["error"]["code"], -32001);
    EXPECT_NE(answer["error"]["message"].get<std::string>().find("wrong key"), std::string::npos)
        << answer.dump();
    EXPECT_TRUE(raw.closed_within(2000ms));
  }
  RawClient honest(node_b.port());
  EXPECT_TRUE(honest.answer_challenge(test_key(0x42)).contains("result"));
}

// Through a port forward the client reaches the server at another address
// than the server's own, so their identities differ and the client refuses
// the server; with the forward's address advertised the session
// authenticates, and a client that connects to the server's own address is
// the one refused.
TEST(RpcIdentity, APortForwardAuthenticatesOnlyWhenItsAddressIsAdvertised) {
  const auto refused = [](uint16_t port, const std::string& says, const std::string& meant) {
    try {
      RpcClient::connect("127.0.0.1", port, test_key(0x42), 2s);
      ADD_FAILURE() << "authenticated at " << port;
    } catch (const RpcConnectionError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("is \"" + says + "\", not " + meant + " as this nabla meant"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("--advertise 127.0.0.1:" + std::to_string(port) + ")"), std::string::npos)
          << msg;
    }
  };
  const auto at = [](uint16_t port) { return "rpc@127.0.0.1:" + std::to_string(port); };
  {
    ServerThread s(keyed_options());
    testing::TcpForward forward(s.port());
    refused(forward.port(), at(s.port()), at(forward.port()));
  }
  RpcServerOptions o = keyed_options();
  o.port = testing::free_loopback_port();
  testing::TcpForward forward(o.port);
  o.advertise = Endpoint{*IpAddress::parse("127.0.0.1"), forward.port()};
  ServerThread s(o);
  RpcClient c = RpcClient::connect("127.0.0.1", forward.port(), test_key(0x42), 2s);
  EXPECT_EQ(c.call("add", {{"a", 2}, {"b", 3}}, 2s), json(5));
  refused(s.port(), at(forward.port()), at(s.port()));
}

}  // namespace
}  // namespace nabla::common
