// `nabla discover` against real servers on three testbed hosts (namespaces,
// servers and nabla's conntrack chains removed on exit, even on failure):
//   cli → web: nginx, 30 HTTP/1.0 connections (one request each, closed by
//              the server, each far shorter than one scan) and one HTTP/1.1
//              keep-alive connection with 10 requests;
//   web → app: nginx as a reverse proxy with keep-alive upstream connections
//              to a second nginx;
//   cli → app: memcached, 20 requests on one connection, and a UDP
//              request/response pair (10 datagrams to a python3 echo).
// The UDP pair is counted both ways while it lives (each sniffer dumps its
// namespace's live conntrack entries at every scan), so it is two links.
// The set of one-way links must be exactly these, with the process name at
// both ends, ephemeral ports folded, and the client's counts (segments and
// bytes it sent) within ±5% of what the test sent. The short connections are
// found through the kernel's socket-destroy notifications and attributed to
// the nginx worker through the listening port. (A client that connects and
// closes before the sniffer wakes cannot be named from its side; the
// keep-alive and memcached connections stay open across a scan, as such
// clients' connections do, so the client end is known.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/testbed/testbed.hh"
#include "nabla_test_support.hh"
#include "sniffed_testbed.hh"
#include "tier_probe.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::ChildProcess;
using nabla::common::FileDescriptor;
using nabla::testbed::Testbed;
using nabla::testbed::TestbedSpec;
using nlohmann::json;

// Stops a server with SIGTERM and waits, so a prefork server's workers exit
// with their master (a SIGKILLed master would leave them running).
class StopOnExit {
 public:
  explicit StopOnExit(ChildProcess& child) : child_(child) {}
  ~StopOnExit() {
    child_.signal(SIGTERM);
    child_.wait(std::chrono::seconds(5));
  }
  StopOnExit(const StopOnExit&) = delete;
  StopOnExit& operator=(const StopOnExit&) = delete;

 private:
  ChildProcess& child_;
};

// An nginx config (one worker, no logs) serving `server_block` under `dir`.
std::string write_nginx_conf(const fs::path& dir, const std::string& http_block) {
  fs::create_directories(dir / "logs");
  const std::string d = dir.string();
  std::ofstream(dir / "nginx.conf")
      << "worker_processes 1;\ndaemon off;\npid " << d << "/nginx.pid;\nerror_log " << d
      << "/logs/error.log warn;\nevents { worker_connections 256; }\n"
      << "http {\n  access_log off;\n  client_body_temp_path " << d << "/body;\n  proxy_temp_path "
      << d << "/proxy;\n"
      << "  fastcgi_temp_path " << d << "/fastcgi;\n"
      << "  uwsgi_temp_path " << d << "/uwsgi;\n"
      << "  scgi_temp_path " << d << "/scgi;\n"
      << http_block << "}\n";
  return (dir / "nginx.conf").string();
}

// Reads until the peer closes; the text read.
std::string read_to_eof(const FileDescriptor& fd) {
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::recv(fd.get(), buf, sizeof buf, 0)) > 0;) out.append(buf, r);
  return out;
}

// Reads until `out` holds `needle` (or the peer closes).
bool read_until(const FileDescriptor& fd, std::string& out, const std::string& needle) {
  char buf[4096];
  while (out.find(needle) == std::string::npos) {
    const ssize_t r = ::recv(fd.get(), buf, sizeof buf, 0);
    if (r <= 0) return false;
    out.append(buf, static_cast<size_t>(r));
  }
  return true;
}

std::string own_comm() {
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  return comm;
}

std::string end_text(const json& e) {
  return e["host"].get<std::string>() + "/" + e["comm"].get<std::string>() + ":" +
         std::to_string(e["port"].get<int>());
}

void expect_within_5_percent(uint64_t measured, uint64_t sent, const std::string& what) {
  EXPECT_GE(measured * 100, sent * 95) << what << ": " << measured << " vs sent " << sent;
  EXPECT_LE(measured * 100, sent * 105) << what << ": " << measured << " vs sent " << sent;
}

constexpr const char* kUdpEcho =
    "import socket,sys\n"
    "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
    "s.bind((sys.argv[1],9999))\n"
    "while True:\n"
    "  d,a=s.recvfrom(2048)\n"
    "  s.sendto(d,a)\n";

TEST(DiscoverRealServers, ShortAndKeepAliveHttpProxyMemcachedAndUdp) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  NABLA_REQUIRE_PROGRAM_OR_SKIP("nginx");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("memcached");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("python3");
  nabla::common::sweep_stale_namespaces();
  TestbedSpec spec;
  spec.subnet = "10.213.11.0/24";
  for (const char* name : {"cli", "web", "app"}) spec.hosts.push_back({name, {}});
  Testbed tb(spec);
  const auto& cli = tb.host("cli");
  const auto& web = tb.host("web");
  const auto& app = tb.host("app");
  const fs::path dir = fs::path(::testing::TempDir()) / ("real-" + std::to_string(::getpid()));
  struct RemoveDir {
    fs::path path;
    ~RemoveDir() { fs::remove_all(path); }
  } remove_dir{dir};

  const std::string app_conf = write_nginx_conf(
      dir / "app", "  server {\n    listen " + app.address +
                       ":8081;\n    location / { return 200 \"hello from app\\n\"; }\n  }\n");
  const std::string web_conf = write_nginx_conf(
      dir / "web", "  upstream app { server " + app.address +
                       ":8081; keepalive 4; }\n  server {\n    listen " + web.address +
                       ":8080;\n    location / {\n      proxy_pass http://app;\n"
                       "      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n"
                       "    }\n  }\n");
  StopOnExit app_nginx(tb.start("app", {"nginx", "-c", app_conf}, (dir / "app.out").string()));
  StopOnExit web_nginx(tb.start("web", {"nginx", "-c", web_conf}, (dir / "web.out").string()));
  tb.start("app", {"memcached", "-u", "nobody", "-U", "0", "-l", app.address, "-p", "11211"});
  tb.start("app", {"python3", "-c", kUdpEcho, app.address});

  const nabla::testing::KeyFile key("discover-real");
  nabla::testing::start_sniffers(tb, NABLA_SNIFFD_PATH, key, "300ms", cli.ns);
  // Servers are up (connections without data are no link) and a scan has
  // seen their listening sockets.
  nabla::testing::connect_in(cli.ns, web.address, 8080);
  nabla::testing::connect_in(cli.ns, app.address, 11211);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));

  uint64_t http_segments = 0;
  uint64_t http_bytes = 0;
  const std::string get10 = "GET / HTTP/1.0\r\nHost: web\r\n\r\n";
  for (int i = 0; i < 30; ++i) {
    FileDescriptor c = nabla::testing::connect_in(cli.ns, web.address, 8080);
    c.write_all(get10);
    const std::string reply = read_to_eof(c);
    ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
    ASSERT_NE(reply.find("hello from app"), std::string::npos) << reply;
    http_segments += 1;
    http_bytes += get10.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  {
    FileDescriptor c = nabla::testing::connect_in(cli.ns, web.address, 8080);
    const std::string get11 = "GET / HTTP/1.1\r\nHost: web\r\n\r\n";
    for (int i = 0; i < 10; ++i) {
      c.write_all(get11);
      std::string reply;
      ASSERT_TRUE(read_until(c, reply, "hello from app\n")) << reply;
      http_segments += 1;
      http_bytes += get11.size();
    }
    // Open across a scan, as a keep-alive client's connection is: the client
    // end is then known from its socket, and short connections whose client
    // closed before the sniffer could name it join this owner's flow.
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  const std::string set = "set k 0 0 5\r\nhello\r\n";
  {
    FileDescriptor c = nabla::testing::connect_in(cli.ns, app.address, 11211);
    for (int i = 0; i < 20; ++i) {
      c.write_all(set);
      std::string reply;
      ASSERT_TRUE(read_until(c, reply, "STORED\r\n")) << reply;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // seen by a scan
  }
  FileDescriptor udp = cli.ns.socket(AF_INET, SOCK_DGRAM, 0);
  const sockaddr_in echo = nabla::testing::ipv4_address(app.address, 9999);
  ASSERT_EQ(::connect(udp.get(), reinterpret_cast<const sockaddr*>(&echo), sizeof echo), 0);
  const timeval two_s{2, 0};
  ::setsockopt(udp.get(), SOL_SOCKET, SO_RCVTIMEO, &two_s, sizeof two_s);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(::send(udp.get(), "ping", 4, 0), 4);
    char buf[8];
    ASSERT_EQ(::recv(udp.get(), buf, sizeof buf, 0), 4);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // two scans

  const auto result = nabla::testing::run_discover(
      NABLA_PATH, cli.ns,
      {"--key-file", key.path(), "--for", "0s", "--json", "--node", "cli=" + cli.address, "--node",
       "web=" + web.address, "--node", "app=" + app.address},
      "discover-real");
  ASSERT_TRUE(result.has_value());
  const json links = result->value("links", json::array());

  const std::string me = own_comm();
  std::set<std::string> found;
  std::map<std::string, json> by_text;
  for (const json& l : links) {
    const std::string text =
        l["proto"].get<std::string>() + " " + end_text(l["src"]) + " -> " + end_text(l["dst"]);
    EXPECT_TRUE(found.insert(text).second) << "split link (two pids?): " << links.dump(2);
    by_text[text] = l;
  }
  const std::set<std::string> expected = {
      "tcp cli/" + me + ":0 -> web/nginx:8080",      "tcp web/nginx:8080 -> cli/" + me + ":0",
      "tcp web/nginx:0 -> app/nginx:8081",           "tcp app/nginx:8081 -> web/nginx:0",
      "tcp cli/" + me + ":0 -> app/memcached:11211", "tcp app/memcached:11211 -> cli/" + me + ":0",
      "udp cli/" + me + ":0 -> app/python3:9999",    "udp app/python3:9999 -> cli/" + me + ":0",
  };
  EXPECT_EQ(found, expected) << links.dump(2);

  const json& http = by_text["tcp cli/" + me + ":0 -> web/nginx:8080"];
  ASSERT_TRUE(http.is_object()) << links.dump(2);
  expect_within_5_percent(http["segments"], http_segments, "HTTP segments");
  expect_within_5_percent(http["bytes"], http_bytes, "HTTP bytes");
  const json& mc = by_text["tcp cli/" + me + ":0 -> app/memcached:11211"];
  ASSERT_TRUE(mc.is_object()) << links.dump(2);
  expect_within_5_percent(mc["segments"], 20, "memcached segments");
  expect_within_5_percent(mc["bytes"], 20 * set.size(), "memcached bytes");
  // UDP: the live conntrack entries' counters, both ways, before the flow ends.
  const json& ping = by_text["udp cli/" + me + ":0 -> app/python3:9999"];
  const json& pong = by_text["udp app/python3:9999 -> cli/" + me + ":0"];
  ASSERT_TRUE(ping.is_object() && pong.is_object()) << links.dump(2);
  expect_within_5_percent(ping["segments"], 10, "UDP requests");
  expect_within_5_percent(pong["segments"], 10, "UDP responses");
}

}  // namespace
