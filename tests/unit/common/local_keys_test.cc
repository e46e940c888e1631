// Where daemons and clients find the control key without --key-file
// (local_keys.hh), with every path in a temporary directory, and a daemon
// key end to end over a real RpcServer.
#include "nabla/common/local_keys.hh"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "rpc_test_support.hh"

namespace nabla::common {
namespace {

using namespace std::chrono_literals;
using namespace rpc_test;

std::string hex_of(const Key& key) {
  return to_hex(key.bytes().data(), key.bytes().size());
}

class LocalKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-localkeys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    at_.system_key = dir_ + "/etc-key";
    at_.run_dir = dir_ + "/run";
    at_.key_dir = dir_ + "/keys";
    at_.group = "nabla-test-no-such-group";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string write_key_file(const std::string& name, const std::vector<uint8_t>& fills) {
    const std::string path = dir_ + "/" + name;
    {
      std::ofstream out(path);
      for (const uint8_t f : fills) out << hex_of(test_key(f)) << "\n";
    }
    ::chmod(path.c_str(), 0600);
    return path;
  }

  static mode_t mode_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

  std::string dir_;
  KeyLocations at_;
};

TEST_F(LocalKeysTest, DaemonUsesKeyFileThenSystemKeyThenAFreshKeyOnLoopbackOnly) {
  const std::string given = write_key_file("given", {1});
  RpcServerOptions o;
  DaemonKey::choose(given, "injectd", "10.0.0.1", at_).apply(o);
  EXPECT_EQ(o.key_file, given);
  EXPECT_TRUE(o.keys.empty());

  ::rename(write_key_file("system", {2}).c_str(), at_.system_key.c_str());
  RpcServerOptions from_system;
  const DaemonKey system = DaemonKey::choose(std::nullopt, "injectd", "10.0.0.1", at_);
  system.apply(from_system);
  EXPECT_EQ(from_system.key_file, at_.system_key);
  EXPECT_EQ(system.describe(), "key file " + at_.system_key);

  ::unlink(at_.system_key.c_str());
  for (const char* loopback : {"127.0.0.1", "127.3.0.1", "::1"}) {
    RpcServerOptions fresh;
    DaemonKey::choose(std::nullopt, "injectd", loopback, at_).apply(fresh);
    EXPECT_FALSE(fresh.key_file) << loopback;
    ASSERT_EQ(fresh.keys.size(), 1u) << loopback;
    EXPECT_EQ(fresh.keys[0].bytes().size(), kMinKeyBytes);
  }
  try {
    DaemonKey::choose(std::nullopt, "injectd", "10.0.0.1", at_);
    FAIL() << "non-loopback address without a key accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("refusing to listen on 10.0.0.1 without a key"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nabla key new"), std::string::npos) << msg;
  }
  // A bad key file fails at once, naming it.
  EXPECT_THROW(DaemonKey::choose(dir_ + "/missing", "injectd", "127.0.0.1", at_),
               std::system_error);
}

TEST_F(LocalKeysTest, FreshKeyIsPublishedPrivatelyForItsNamespaceAndRemovedOnExit) {
  const std::string path = run_key_path(at_, "injectd", 7311);
  struct stat ns {};
  ASSERT_EQ(::stat("/proc/thread-self/ns/net", &ns), 0);
  EXPECT_EQ(path, at_.run_dir + "/injectd-7311-net" + std::to_string(ns.st_ino) + ".key");
  {
    DaemonKey key = DaemonKey::choose(std::nullopt, "injectd", "127.0.0.1", at_);
    RpcServerOptions o;
    key.apply(o);
    key.publish(7311);
    EXPECT_EQ(key.describe(), "fresh key in " + path);
    EXPECT_EQ(mode_of(at_.run_dir), 0750u);
    EXPECT_EQ(mode_of(path), 0600u);  // no key group here: owner only
    for (const char* host : {"127.0.0.1", "localhost"}) {
      EXPECT_EQ(client_key(std::nullopt, "injectd", host, 7311, at_).bytes(), o.keys[0].bytes());
    }
    // Another daemon's port or name is another file.
    EXPECT_THROW(client_key(std::nullopt, "injectd", "127.0.0.1", 7312, at_), KeyUnavailableError);
    EXPECT_THROW(client_key(std::nullopt, "sniffd", "127.0.0.1", 7311, at_), KeyUnavailableError);
  }
  EXPECT_EQ(mode_of(path), 0u) << "run file left behind";
  // A file another daemon has since replaced is left alone.
  {
    DaemonKey key = DaemonKey::choose(std::nullopt, "sniffd", "127.0.0.1", at_);
    key.publish(7312);
    const std::string run = run_key_path(at_, "sniffd", 7312);
    ::rename(write_key_file("other", {9}).c_str(), run.c_str());
  }
  EXPECT_EQ(mode_of(run_key_path(at_, "sniffd", 7312)), 0600u);
}

TEST_F(LocalKeysTest, KeyGroupMayReadTheRunFile) {
  const group* own = ::getgrgid(::getegid());
  ASSERT_NE(own, nullptr);
  at_.group = own->gr_name;
  DaemonKey key = DaemonKey::choose(std::nullopt, "injectd", "127.0.0.1", at_);
  RpcServerOptions o;
  key.apply(o);
  key.publish(7311);
  const std::string path = run_key_path(at_, "injectd", 7311);
  EXPECT_EQ(mode_of(path), 0640u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, ::getegid());
  EXPECT_EQ(client_key(std::nullopt, "injectd", "127.0.0.1", 7311, at_).bytes(), o.keys[0].bytes());
  // Readable by a group that is not the key group: refused.
  if (at_.group != kKeyGroup) {
    try {
      load_key_file(path);
      FAIL() << "group-readable key file of another group accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("chmod 600 " + path), std::string::npos) << e.what();
    }
  }
}

TEST_F(LocalKeysTest, ClientOrderIsKeyFileEnvironmentRunFileSystemKey) {
  const std::string given = write_key_file("given", {1, 5});
  const std::string env = write_key_file("env", {2});
  DaemonKey daemon = DaemonKey::choose(std::nullopt, "injectd", "127.0.0.1", at_);
  RpcServerOptions o;
  daemon.apply(o);
  daemon.publish(7311);
  ASSERT_EQ(o.keys.size(), 1u);
  ::rename(write_key_file("system", {4}).c_str(), at_.system_key.c_str());

  KeyLocations with_env = at_;
  with_env.env_key_file = env;
  // The first key of a file is the client's.
  EXPECT_EQ(client_key(given, "injectd", "127.0.0.1", 7311, with_env).bytes(), test_key(1).bytes());
  EXPECT_EQ(client_key(std::nullopt, "injectd", "127.0.0.1", 7311, with_env).bytes(),
            test_key(2).bytes());
  EXPECT_EQ(client_key(std::nullopt, "injectd", "127.0.0.1", 7311, at_).bytes(), o.keys[0].bytes());
  EXPECT_EQ(client_key(std::nullopt, "injectd", "10.0.0.1", 7311, at_).bytes(),
            test_key(4).bytes());
  // A key file that is given must load.
  KeyLocations broken_env = at_;
  broken_env.env_key_file = dir_ + "/missing";
  EXPECT_THROW(client_key(std::nullopt, "injectd", "127.0.0.1", 7311, broken_env),
               std::system_error);
}

TEST_F(LocalKeysTest, ClientWithoutKeyNamesWhatItTried) {
  try {
    client_key(std::nullopt, "injectd", "127.0.0.1", 7311, at_);
    FAIL() << "no key, no error";
  } catch (const KeyUnavailableError& e) {
    EXPECT_EQ(std::string(e.what()),
              "127.0.0.1:7311 requires a key: no key file (" + run_key_path(at_, "injectd", 7311) +
                  ", " + at_.key_dir + "/127.0.0.1.key, " + at_.system_key +
                  " do not exist); run as root, join group " + at_.group + ", or pass --key-file");
  }
  try {
    client_key(std::nullopt, "sniffd", "fd00::2", 7312, at_);
    FAIL() << "no key, no error";
  } catch (const KeyUnavailableError& e) {
    EXPECT_EQ(std::string(e.what()), "[fd00::2]:7312 requires a key: no key file (" + at_.key_dir +
                                         "/fd00::2.key, " + at_.system_key +
                                         " do not exist); run as root, join "
                                         "group " +
                                         at_.group + ", or pass --key-file");
  }
}

// Per-node keys: a coordinator's key directory holds HOST.key per node. It
// is found by default, and --key-file or $NABLA_KEY_FILE may name a
// directory too; a node missing from it is named with the file looked for.
TEST_F(LocalKeysTest, ClientFindsEachNodesKeyInTheKeyDirectory) {
  ASSERT_EQ(::mkdir(at_.key_dir.c_str(), 0700), 0);
  ::rename(write_key_file("a", {0xa1}).c_str(), (at_.key_dir + "/10.0.0.11.key").c_str());
  ::rename(write_key_file("b", {0xb2}).c_str(), (at_.key_dir + "/node-b.lab.key").c_str());
  ::rename(write_key_file("v6", {0xc3}).c_str(), (at_.key_dir + "/fd00::2.key").c_str());
  ::rename(write_key_file("system", {4}).c_str(), at_.system_key.c_str());
  EXPECT_EQ(client_key(std::nullopt, "injectd", "10.0.0.11", 7311, at_).bytes(),
            test_key(0xa1).bytes());
  EXPECT_EQ(client_key(std::nullopt, "sniffd", "node-b.lab", 7312, at_).bytes(),
            test_key(0xb2).bytes());
  EXPECT_EQ(client_key(std::nullopt, "sniffd", "fd00::2", 7312, at_).bytes(),
            test_key(0xc3).bytes());
  // A node without a file of its own: the system key, the single-key setup.
  EXPECT_EQ(client_key(std::nullopt, "injectd", "10.0.0.99", 7311, at_).bytes(),
            test_key(4).bytes());
  // The directory given as the key file, or through the environment.
  EXPECT_EQ(client_key(at_.key_dir, "injectd", "10.0.0.11", 7311, at_).bytes(),
            test_key(0xa1).bytes());
  KeyLocations with_env = at_;
  with_env.env_key_file = at_.key_dir;
  EXPECT_EQ(client_key(std::nullopt, "injectd", "node-b.lab", 7311, with_env).bytes(),
            test_key(0xb2).bytes());
  try {
    client_key(at_.key_dir, "injectd", "10.0.0.99", 7311, at_);
    FAIL() << "a node missing from the key directory got a key";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "no key for node 10.0.0.99 in the key directory " + at_.key_dir + ": " + at_.key_dir +
                  "/10.0.0.99.key does not exist (each node has its own key: make it with nabla "
                  "key new " +
                  at_.key_dir + "/10.0.0.99.key and install it on that node as /etc/nabla/key)");
  }
  EXPECT_THROW(node_key_path(at_.key_dir, "../etc"), std::invalid_argument);
  EXPECT_EQ(node_key_path(at_.system_key, "10.0.0.11"), at_.system_key);
}

TEST_F(LocalKeysTest, DaemonKeyEndToEndOverRpc) {
  DaemonKey key = DaemonKey::choose(std::nullopt, "sniffd", "127.0.0.1", at_);
  RpcServerOptions o;
  key.apply(o);
  ServerThread s(o);
  key.publish(s.port());
  // What the nabla CLI does: look the key up only when the daemon asks.
  bool looked_up = false;
  RpcClient c = RpcClient::connect(
      "127.0.0.1", s.port(),
      [&] {
        looked_up = true;
        return client_key(std::nullopt, "sniffd", "127.0.0.1", s.port(), at_);
      },
      2s);
  EXPECT_TRUE(looked_up);
  EXPECT_EQ(c.call("add", {{"a", 20}, {"b", 22}}, 2s), json(42));
  try {
    RpcClient::connect(
        "127.0.0.1", s.port(),
        [&] { return client_key(std::nullopt, "injectd", "127.0.0.1", s.port(), at_); }, 2s);
    FAIL() << "connected without a key";
  } catch (const KeyUnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("requires a key"), std::string::npos);
  }
}

}  // namespace
}  // namespace nabla::common
