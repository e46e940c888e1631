// `nabla load` over HTTPS, HTTP/2 (h2 over TLS, h2c) and gRPC against real
// servers this test starts on 127.0.0.1 and stops by pid, also on failure:
// nginx (TLS with a self-signed certificate the test makes with `openssl
// req`, HTTP/2, a location proxied to a nabla-tier that answers after a
// known 5 ms of sleep, one that answers 503), and a gRPC server on
// python3-grpcio with a
// unary method that answers after a known 5 ms and one that fails with
// UNAVAILABLE. What nabla counts must equal what the server logged, request
// for request; no latency is shorter than the known service time; the TLS
// handshakes are counted apart and later connections resume a session.
// nginx also closes connections after a few requests on a plain HTTP port,
// and no request sent on them may be lost. Every run is bounded by
// --max-duration and a rate of at most 2,000 rps. No root needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hh"
#include "nabla/common/netns.hh"
#include "nabla_test_support.hh"
#include "scratch_dir.hh"

namespace nabla::testing {
namespace {

namespace fs = std::filesystem;
using common::ChildProcess;
using nabla::testing::loopback_accepts;
using nabla::testing::ScratchDir;
using nlohmann::json;

constexpr int64_t kServiceNs = 5'000'000;        // what both servers wait before answering
constexpr uint64_t kRequestsPerConnection = 10;  // nginx's keepalive_requests on port 2
constexpr const char* kSystemPython = "/usr/bin/python3";  // where python3-grpcio lives

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A server process started on free loopback ports (again on others if one
// was taken meanwhile), up once every port accepts (10 s at most), killed
// by pid when destroyed.
class Server {
 public:
  using Argv = std::function<std::vector<std::string>(const std::vector<uint16_t>& ports)>;

  Server(size_t ports, const std::string& log, const Argv& argv) : log_(log) {
    for (int attempt = 0; attempt < 3 && !up_; ++attempt) {
      ports_.clear();
      for (size_t i = 0; i < ports; ++i) ports_.push_back(free_loopback_port());
      child_ = std::make_unique<ChildProcess>(argv(ports_), nullptr, log_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!up_ && child_->running() && std::chrono::steady_clock::now() < deadline) {
        up_ = std::all_of(ports_.begin(), ports_.end(), loopback_accepts);
        if (!up_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool up() const { return up_; }
  uint16_t port(size_t i) const { return ports_.at(i); }
  std::string log() const { return read_text(log_); }

 private:
  std::string log_;
  std::unique_ptr<ChildProcess> child_;
  std::vector<uint16_t> ports_;
  bool up_ = false;
};

// ----------------------------------------------------------------- nginx

// A self-signed certificate for 127.0.0.1 and localhost, made by openssl.
void make_certificate(const ScratchDir& dir) {
  common::run_checked({program_on_path("openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt",
                       "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", dir.file("key.pem"),
                       "-out", dir.file("cert.pem"), "-days", "2", "-subj", "/CN=localhost",
                       "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"});
}

// nabla-tier on 127.0.0.1, answering every path after sleeping kServiceNs
// (a sleep is never shorter; nginx's own timers run on its cached clock
// and may fire early).
std::unique_ptr<Server> start_tier(const ScratchDir& dir) {
  return std::make_unique<Server>(1, dir.file("tier.out"), [&](const std::vector<uint16_t>& p) {
    return std::vector<std::string>{
        NABLA_TIER_PATH,
        "--listen",
        "127.0.0.1:" + std::to_string(p[0]),
        "--workers",
        "16",
        "--url",
        "* service=fixed:" + std::to_string(kServiceNs / 1000) + "us mode=sleep"};
  });
}

// nginx in one process: port 0 TLS (ALPN h2 and http/1.1), port 1 h2c
// (HTTP/2 with prior knowledge). /slow is proxied to the tier on
// `tier_port` (keep-alive), /fail answers 503. Port 2 is plain HTTP/1.1
// that closes every connection after kRequestsPerConnection requests
// (nginx's keepalive_requests; its default is 1000), answering / at once,
// /slow from the tier and /fail with 503; port 3 is the same over h2c,
// where nginx ends each connection with a GOAWAY. The access log has one line per request:
// "<protocol> <status> <uri> <session reused: r or .>".
std::unique_ptr<Server> start_nginx(const ScratchDir& dir, uint16_t tier_port) {
  const std::string conf = dir.file("nginx.conf");
  const std::string nginx = program_on_path("nginx");
  return std::make_unique<Server>(4, dir.file("nginx.out"), [&](const std::vector<uint16_t>& p) {
    std::ofstream out(conf);
    out << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
        << "pid " << dir.file("nginx.pid") << ";\n"
        << "error_log " << dir.file("error.log") << " warn;\n"
        << "events { worker_connections 1024; }\n"
        << "http {\n"
        << "  log_format counted '$server_protocol $status $uri $ssl_session_reused';\n"
        << "  access_log " << dir.file("access.log") << " counted;\n";
    for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
      out << "  " << t << "_temp_path " << dir.file(std::string(t) + "_temp") << ";\n";
    }
    out << "  keepalive_requests 1000000;\n"
        << "  upstream tier { server 127.0.0.1:" << tier_port << "; keepalive 32; }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << p[0] << " ssl http2;\n"
        << "    listen 127.0.0.1:" << p[1] << " http2;\n"
        << "    ssl_certificate " << dir.file("cert.pem") << ";\n"
        << "    ssl_certificate_key " << dir.file("key.pem") << ";\n"
        << "    location = /slow { proxy_pass http://tier; proxy_http_version 1.1;"
        << " proxy_set_header Connection \"\"; }\n"
        << "    location = /fail { return 503; }\n"
        << "  }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << p[2] << ";\n"
        << "    keepalive_requests " << kRequestsPerConnection << ";\n"
        << "    location / { return 200 \"ok\\n\"; }\n"
        << "    location = /slow { proxy_pass http://tier; proxy_http_version 1.1;"
        << " proxy_set_header Connection \"\"; }\n"
        << "    location = /fail { return 503; }\n"
        << "  }\n"
        << "  server {\n"
        << "    listen 127.0.0.1:" << p[3] << " http2;\n"
        << "    keepalive_requests " << kRequestsPerConnection << ";\n"
        << "    location / { return 200 \"ok\\n\"; }\n"
        << "  }\n}\n";
    out.close();
    std::error_code ignored;
    fs::remove(dir.file("access.log"), ignored);
    return std::vector<std::string>{nginx, "-p", dir.file(""),         "-c",
                                    conf,  "-e", dir.file("error.log")};
  });
}

struct LogLine {
  std::string protocol, status, uri, reused;
};

std::vector<LogLine> access_log(const ScratchDir& dir) {
  std::vector<LogLine> lines;
  std::istringstream in(read_text(dir.file("access.log")));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    LogLine l;
    f >> l.protocol >> l.status >> l.uri >> l.reused;
    lines.push_back(l);
  }
  return lines;
}

uint64_t count(const std::vector<LogLine>& log, const std::string& protocol,
               const std::string& status, const std::string& uri) {
  return static_cast<uint64_t>(std::count_if(log.begin(), log.end(), [&](const LogLine& l) {
    return l.protocol == protocol && l.status == status && l.uri == uri;
  }));
}

// ------------------------------------------------------------ nabla load

struct LoadRun {
  int exit_code = -1;
  json result;
  std::string stderr_text;
};

// `nabla load --json` with a bounded time and rate, and `extra` (2
// connections unless `extra` says otherwise).
LoadRun run_load(const std::string& target, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{NABLA_PATH,         "load", "--target",     target,
                                "--max-duration",   "2s",   "--percentile", "50,0.001",
                                "--late-threshold", "1ms",  "--json"};
  if (std::find(extra.begin(), extra.end(), "--connections") == extra.end()) {
    argv.insert(argv.end(), {"--connections", "2"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto r = common::run_command(argv, nullptr, std::chrono::seconds(30));
  LoadRun run{r.exit_code, json::object(), r.stderr_text};
  if (r.exit_code == 0) {
    try {
      run.result = json::parse(r.stdout_text);
    } catch (const json::exception& e) {
      ADD_FAILURE() << "not JSON (" << e.what() << "): " << r.stdout_text << r.stderr_text;
    }
  }
  return run;
}

json by_type(const json& j, const std::string& type) {
  for (const auto& t : j.value("requests_by_type", json::array())) {
    if (t["type"] == type) return t;
  }
  ADD_FAILURE() << "no requests_by_type entry for " << type << ": " << j.dump();
  return {{"completed", 0}, {"server_errors", 0}};
}

double percentile(const json& ps, double p) {
  for (const auto& x : ps) {
    if (x["p"] == p) return x["value_ns"].get<double>();
  }
  ADD_FAILURE() << "no p" << p << " in " << ps.dump();
  return 0;
}

// Every request sent was answered; the errors are exactly `server_errors`
// error replies, nothing else failed.
void expect_all_answered(const json& j, uint64_t server_errors) {
  EXPECT_EQ(j["sent"].get<uint64_t>(), j["completed"].get<uint64_t>() + server_errors) << j.dump();
  for (const auto& [kind, n] : j["errors"].items()) {
    EXPECT_EQ(n.get<uint64_t>(), kind == "server" ? server_errors : 0) << kind;
  }
  EXPECT_GT(j["completed"].get<uint64_t>(), 0u);
}

// No time shorter than the service time: the smallest response time, the
// smallest sojourn from the intended send and the smallest in flight.
void expect_no_latency_below_service(const json& j) {
  for (const char* key : {"percentiles", "sojourn_percentiles", "in_flight_percentiles"}) {
    EXPECT_GE(percentile(j[key], 0.001), static_cast<double>(kServiceNs)) << key;
  }
}

class ProtocolsAgainstNginx : public ::testing::Test {
 protected:
  void SetUp() override {
    NABLA_REQUIRE_PROGRAM_OR_SKIP("nginx");
    NABLA_REQUIRE_PROGRAM_OR_SKIP("openssl");
    dir_ = std::make_unique<ScratchDir>("nabla-protocols-nginx");
    make_certificate(*dir_);
    tier_ = start_tier(*dir_);
    ASSERT_TRUE(tier_->up()) << "nabla-tier did not start: " << tier_->log();
    nginx_ = start_nginx(*dir_, tier_->port(0));
    ASSERT_TRUE(nginx_->up()) << "nginx did not start: " << nginx_->log()
                              << read_text(dir_->file("error.log"));
  }
  void TearDown() override {
    nginx_.reset();
    tier_.reset();
    dir_.reset();
  }
  std::string tls_target(const std::string& scheme, const std::string& path) const {
    return scheme + "://127.0.0.1:" + std::to_string(nginx_->port(0)) + path;
  }
  std::string ca() const { return dir_->file("cert.pem"); }

  std::unique_ptr<ScratchDir> dir_;
  std::unique_ptr<Server> tier_;
  std::unique_ptr<Server> nginx_;
};

TEST_F(ProtocolsAgainstNginx, HttpsCountsEqualNginxsAndHandshakesAreApartAndResumed) {
  const LoadRun run = run_load(tls_target("https", "/slow"), {"--rate", "200", "--ca-file", ca()});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  expect_all_answered(j, 0);
  EXPECT_EQ(count(log, "HTTP/1.1", "200", "/slow"), j["completed"].get<uint64_t>());
  EXPECT_EQ(log.size(), j["completed"].get<uint64_t>());
  expect_no_latency_below_service(j);
  // Each round opens its 2 connections anew; the rounds after the first
  // offer the session nginx issued before. Whether nginx resumes it is its
  // choice (on a busy machine it sometimes declines every offer); what it
  // did, the client's count and nginx's log agree on.
  const json& setup = j["connection_setup"];
  const auto handshakes = setup["tls_handshakes"].get<uint64_t>();
  const auto offered = setup["tls_offered"].get<uint64_t>();
  const auto resumed = setup["tls_resumed"].get<uint64_t>();
  EXPECT_GE(handshakes, 2 * j["rounds"].size()) << setup.dump();
  EXPECT_GE(offered, 2 * (j["rounds"].size() - 1)) << setup.dump();
  EXPECT_LE(offered, handshakes) << setup.dump();
  EXPECT_LE(resumed, offered) << setup.dump();
  EXPECT_GT(setup["tls_handshake_ns"]["max"].get<int64_t>(), 0);
  EXPECT_TRUE(setup["first_error"].get<std::string>().empty()) << setup.dump();
  const auto reused_lines =
      std::count_if(log.begin(), log.end(), [](const LogLine& l) { return l.reused == "r"; });
  EXPECT_EQ(reused_lines > 0, resumed > 0) << setup.dump();
}

TEST_F(ProtocolsAgainstNginx, HttpsWithoutTheCaFailsNamingTheCertificate) {
  const LoadRun run = run_load(tls_target("https", "/slow"), {"--rate", "100"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.stderr_text.find("certificate"), std::string::npos) << run.stderr_text;
  EXPECT_TRUE(access_log(*dir_).empty());
}

TEST_F(ProtocolsAgainstNginx, HttpsChecksTheServerNameOrNothingWithInsecure) {
  // The certificate names localhost and 127.0.0.1, not other.example.
  const LoadRun wrong = run_load(tls_target("https", "/slow"), {"--rate", "100", "--ca-file", ca(),
                                                                "--server-name", "other.example"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.stderr_text.find("certificate"), std::string::npos) << wrong.stderr_text;
  EXPECT_TRUE(access_log(*dir_).empty());
  const LoadRun named = run_load(tls_target("https", "/slow"), {"--rate", "100", "--ca-file", ca(),
                                                                "--server-name", "localhost"});
  ASSERT_EQ(named.exit_code, 0) << named.stderr_text;
  expect_all_answered(named.result, 0);
  const LoadRun insecure = run_load(tls_target("https", "/slow"), {"--rate", "100", "--insecure"});
  ASSERT_EQ(insecure.exit_code, 0) << insecure.stderr_text;
  expect_all_answered(insecure.result, 0);
  EXPECT_EQ(access_log(*dir_).size(), named.result["completed"].get<uint64_t>() +
                                          insecure.result["completed"].get<uint64_t>());
}

TEST_F(ProtocolsAgainstNginx, H2OverTlsCountsEqualNginxsWithManyStreams) {
  const LoadRun run =
      run_load(tls_target("h2", ""), {"--rate", "300", "--ca-file", ca(), "--mix",
                                      "/slow=0.8,/fail=0.2", "--streams-per-connection", "16"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  const uint64_t failed = count(log, "HTTP/2.0", "503", "/fail");
  EXPECT_GT(failed, 0u);
  expect_all_answered(j, failed);
  EXPECT_EQ(by_type(j, "/fail")["server_errors"].get<uint64_t>(), failed);
  EXPECT_EQ(by_type(j, "/fail")["completed"].get<uint64_t>(), 0u);
  EXPECT_EQ(by_type(j, "/slow")["completed"].get<uint64_t>(),
            count(log, "HTTP/2.0", "200", "/slow"));
  EXPECT_EQ(log.size(), j["sent"].get<uint64_t>());
  expect_no_latency_below_service(j);
  EXPECT_GE(j["connection_setup"]["tls_handshakes"].get<uint64_t>(), 2u);
}

TEST_F(ProtocolsAgainstNginx, H2cWithPriorKnowledgeCountsEqualNginxs) {
  const std::string target = "h2c://127.0.0.1:" + std::to_string(nginx_->port(1)) + "/slow";
  const LoadRun run = run_load(target, {"--rate", "300", "--streams-per-connection", "8"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  expect_all_answered(j, 0);
  EXPECT_EQ(count(log, "HTTP/2.0", "200", "/slow"), j["completed"].get<uint64_t>());
  EXPECT_EQ(log.size(), j["completed"].get<uint64_t>());
  expect_no_latency_below_service(j);
  EXPECT_EQ(j["connection_setup"]["tls_handshakes"], 0);
}

// On a port where nginx ends connections after kRequestsPerConnection
// requests: each request sent is one line of its log, and each connection
// carried at most that many (nginx ended it, or it was a round's last).
void expect_recycled_without_loss(const json& j, const std::vector<LogLine>& log) {
  EXPECT_EQ(log.size(), j["sent"].get<uint64_t>());
  const json& setup = j["connection_setup"];
  const auto closes = setup["server_closes"].get<uint64_t>();
  const uint64_t rounds = j["rounds"].size();
  EXPECT_GE(kRequestsPerConnection * (closes + rounds), j["sent"].get<uint64_t>()) << setup.dump();
}

TEST_F(ProtocolsAgainstNginx, ConnectionsNginxClosesAreReopenedAndNoRequestIsLost) {
  // Port 2 closes each connection after kRequestsPerConnection requests.
  // On one connection, requests sent close together are pipelined, so some
  // are already on their way after the closing reply and are never
  // processed; they go again on the new connection, so each request sent is
  // still exactly one line of nginx's log and nothing fails.
  const std::string target = "http://127.0.0.1:" + std::to_string(nginx_->port(2));
  const LoadRun run =
      run_load(target, {"--rate", "2000", "--connections", "1", "--mix", "/=0.8,/fail=0.2"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  const uint64_t failed = count(log, "HTTP/1.1", "503", "/fail");
  EXPECT_GT(failed, 0u);
  expect_all_answered(j, failed);
  EXPECT_EQ(count(log, "HTTP/1.1", "200", "/"), j["completed"].get<uint64_t>());
  expect_recycled_without_loss(j, log);
  EXPECT_LE(j["connection_setup"]["resent"].get<uint64_t>(), j["sent"].get<uint64_t>());
}

TEST_F(ProtocolsAgainstNginx, RequestsPipelinedPastNginxsCloseAreSentAgainAndTimedFromTheirSend) {
  // /slow takes 5 ms and one connection pipelining up to 16 requests
  // carries 150 rps (75% busy), so requests queue behind each other on it:
  // when nginx's closing reply arrives, more are on their way almost every
  // time (a close with none behind it is about 1 in 4, and there are ~30).
  const std::string target = "http://127.0.0.1:" + std::to_string(nginx_->port(2)) + "/slow";
  const LoadRun run =
      run_load(target, {"--rate", "150", "--connections", "1", "--outstanding", "16"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  expect_all_answered(j, 0);
  EXPECT_EQ(count(log, "HTTP/1.1", "200", "/slow"), j["completed"].get<uint64_t>());
  EXPECT_EQ(log.size(), j["sent"].get<uint64_t>());
  const json& setup = j["connection_setup"];
  EXPECT_GT(setup["server_closes"].get<uint64_t>(), 0u) << setup.dump();
  EXPECT_GT(setup["resent"].get<uint64_t>(), 0u) << setup.dump();
  // A request sent again is timed from its first intended send: still
  // never shorter than the service time.
  expect_no_latency_below_service(j);
}

TEST_F(ProtocolsAgainstNginx, H2cConnectionsNginxEndsWithGoawayAreReopenedAndNoStreamIsLost) {
  // After kRequestsPerConnection streams nginx sends GOAWAY: the streams
  // past it are refused (REFUSED_STREAM, never processed) and go again on
  // the next connection, which opens once the old one is done.
  const std::string target = "h2c://127.0.0.1:" + std::to_string(nginx_->port(3)) + "/";
  const LoadRun run =
      run_load(target, {"--rate", "2000", "--connections", "1", "--streams-per-connection", "8"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  const auto log = access_log(*dir_);
  expect_all_answered(j, 0);
  EXPECT_EQ(count(log, "HTTP/2.0", "200", "/"), j["completed"].get<uint64_t>());
  expect_recycled_without_loss(j, log);
}

// ------------------------------------------------------------------ gRPC

bool system_python_has_grpc() {
  if (::access(kSystemPython, X_OK) != 0) return false;
  return common::run_command({kSystemPython, "-c", "import grpc"}).exit_code == 0;
}

TEST(ProtocolsAgainstGrpc, UnaryCallsCountEqualTheServersAndStatusesAreErrorsByCode) {
  if (!system_python_has_grpc()) {
    if (root_required()) FAIL() << "python3-grpcio is not installed (scripts/install-deps.sh)";
    GTEST_SKIP() << "python3-grpcio is not installed; run scripts/install-deps.sh";
  }
  const ScratchDir dir("nabla-protocols-grpc");
  const std::string calls = dir.file("calls.log");
  const std::string message = dir.file("request.bin");
  // A protobuf message as it goes on the wire: field 1, length 5, "hello".
  std::ofstream(message, std::ios::binary) << std::string("\x0a\x05hello", 7);
  Server server(1, dir.file("grpc.out"), [&](const std::vector<uint16_t>& p) {
    return std::vector<std::string>{kSystemPython, NABLA_GRPC_SERVER, std::to_string(p[0]),
                                    std::to_string(static_cast<double>(kServiceNs) / 1e9), calls};
  });
  ASSERT_TRUE(server.up()) << "the gRPC server did not start: " << server.log();
  const LoadRun run =
      run_load("grpc://127.0.0.1:" + std::to_string(server.port(0)),
               {"--rate", "150", "--grpc-method", "/nabla.Test/Sleep", "--grpc-method",
                "/nabla.Test/Fail", "--grpc-message", message, "--mix",
                "/nabla.Test/Sleep=0.8,/nabla.Test/Fail=0.2", "--streams-per-connection", "4"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  std::map<std::string, uint64_t> seen;
  std::istringstream in(read_text(calls));
  std::string method;
  int bytes = 0;
  while (in >> method >> bytes) {
    ++seen[method];
    EXPECT_EQ(bytes, 7) << method;  // the file's message, byte for byte
  }
  EXPECT_GT(seen["Fail"], 0u);
  expect_all_answered(j, seen["Fail"]);
  EXPECT_EQ(by_type(j, "/nabla.Test/Sleep")["completed"].get<uint64_t>(), seen["Sleep"]);
  EXPECT_EQ(by_type(j, "/nabla.Test/Fail")["server_errors"].get<uint64_t>(), seen["Fail"]);
  EXPECT_EQ(j["grpc_status_errors"], json({{"14", seen["Fail"]}})) << j["grpc_status_errors"];
  expect_no_latency_below_service(j);
}

TEST(ProtocolsAgainstGrpc, GrpcsCallsOverTlsCountEqualTheServers) {
  if (!system_python_has_grpc()) {
    if (root_required()) FAIL() << "python3-grpcio is not installed (scripts/install-deps.sh)";
    GTEST_SKIP() << "python3-grpcio is not installed; run scripts/install-deps.sh";
  }
  NABLA_REQUIRE_PROGRAM_OR_SKIP("openssl");
  const ScratchDir dir("nabla-protocols-grpcs");
  make_certificate(dir);
  const std::string calls = dir.file("calls.log");
  Server server(1, dir.file("grpc.out"), [&](const std::vector<uint16_t>& p) {
    return std::vector<std::string>{kSystemPython,
                                    NABLA_GRPC_SERVER,
                                    std::to_string(p[0]),
                                    std::to_string(static_cast<double>(kServiceNs) / 1e9),
                                    calls,
                                    "127.0.0.1",
                                    dir.file("cert.pem"),
                                    dir.file("key.pem")};
  });
  ASSERT_TRUE(server.up()) << "the gRPC server did not start: " << server.log();
  const LoadRun run = run_load("grpcs://127.0.0.1:" + std::to_string(server.port(0)),
                               {"--rate", "100", "--grpc-method", "/nabla.Test/Sleep", "--ca-file",
                                dir.file("cert.pem"), "--streams-per-connection", "4"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& j = run.result;
  std::istringstream in(read_text(calls));
  uint64_t seen = 0;
  std::string method;
  int bytes = 0;
  while (in >> method >> bytes) seen += method == "Sleep";
  expect_all_answered(j, 0);
  EXPECT_EQ(by_type(j, "/nabla.Test/Sleep")["completed"].get<uint64_t>(), seen);
  EXPECT_GE(j["connection_setup"]["tls_handshakes"].get<uint64_t>(), 2u);
  expect_no_latency_below_service(j);
}

}  // namespace
}  // namespace nabla::testing
