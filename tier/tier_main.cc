// nabla-tier: a synthetic multi-tier HTTP/1.1 server with known link
// gradients. Parses flags / TOML and runs TierServer until SIGINT/SIGTERM.
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "nabla/common/cli_usage.hh"
#include "nabla/tier/tier_server.hh"

namespace {

constexpr const char* kPatternHelp = R"(
URL spec (--url, repeatable):  'PATH key=value ...'
  service=fixed:D | exp:MEAN | bimodal:P:D1:D2 | lognormal:MEDIAN:SIGMA
                     durations: 250us, 1.5ms, 2s (ns/us/ms/s/m); default fixed:0ns
  mode=spin|sleep    spin burns CPU, sleep blocks the worker (default spin)
  bytes=N            response body size (default 0)
  call=TIER:PATTERN[:PATH]   downstream call, repeatable, run in order after the
                     service time; PATH defaults to the incoming path
  PATH '*' serves every path without its own spec (else 404).

Patterns and the true link gradient they imply on the link to TIER:
  serial:K     K calls one after another             gradient K per direction
  parallel:K   K concurrent calls, wait for all       gradient 1 (all K share the link)
  async        fire and forget, response never waits  gradient 0
  none         no call                                gradient 0

Response headers: X-Service-Time-Ns (worker picked the request up -> response
ready, minus downstream waits), X-Queue-Ns (wait for a worker), X-Downstream-Ns.

Example: nabla-tier --listen 0.0.0.0:8080 --tier db=10.9.0.4:8080 --tier audit=10.9.0.5:8080 \
  --url '/view service=exp:200us call=db:serial:3' --url '/auth service=fixed:100us' \
  --url '/bid call=db:serial:1 call=audit:async:/audit' --url '/browse call=db:parallel:4'
TOML (--config): [server] listen/workers/seed/split_response/split_pause, [tiers] NAME = "HOST:PORT",
  [[url]] path/service/mode/response_bytes/calls = ["db:serial:3"].
)";

}  // namespace

int main(int argc, char** argv) {
  using nabla::tier::TierAddress;
  using nabla::tier::TierConfig;
  using nabla::tier::UrlSpec;
  CLI::App app{"nabla-tier: synthetic multi-tier HTTP server with known link gradients"};
  app.footer(kPatternHelp);
  std::string config_file;
  std::string listen;
  int workers = 0;
  int64_t seed = -1;
  std::vector<std::string> tiers;
  std::vector<std::string> urls;
  app.add_option("--config", config_file, "TOML configuration file")->check(CLI::ExistingFile);
  app.add_option("--listen", listen, "listen address HOST:PORT (default 127.0.0.1:8080)");
  app.add_option("--workers", workers, "worker threads [1, 256] (default 4)");
  app.add_option("--seed", seed, "RNG seed; worker w uses seed + w (default 1)");
  app.add_option("--tier", tiers, "downstream tier NAME=HOST:PORT (repeatable)");
  app.add_option("--url", urls, "URL spec, see below (repeatable)");
  int64_t split_bytes = -1;
  std::string split_pause;
  app.add_option("--split-response", split_bytes,
                 "send each response longer than BYTES in two parts, the second after "
                 "--split-pause, with TCP_NODELAY off (Nagle's algorithm on)");
  app.add_option("--split-pause", split_pause,
                 "pause between the two parts of a split response (default 200us)");
  std::string wait_slice;
  app.add_option("--wait-slice", wait_slice,
                 "block at most this long at a time while waiting for downstream replies "
                 "(default 0: one block until they are in)");
  if (const auto code = nabla::common::parse_command_line(app, argc, argv, "nabla-tier"))
    return *code;

  try {
    TierConfig cfg;
    if (!config_file.empty()) {
      std::ifstream in(config_file);
      std::stringstream text;
      text << in.rdbuf();
      cfg = TierConfig::from_toml(text.str());
    }
    if (!listen.empty()) cfg.listen = TierAddress::parse(listen, "--listen");
    if (workers != 0) cfg.workers = workers;
    if (seed >= 0) cfg.seed = static_cast<uint64_t>(seed);
    if (split_bytes >= 0) cfg.split_response_bytes = split_bytes;
    if (!split_pause.empty()) {
      cfg.split_pause_ns = nabla::tier::parse_tier_duration_ns(split_pause, "--split-pause");
    }
    if (!wait_slice.empty()) {
      cfg.wait_slice_ns = nabla::tier::parse_tier_duration_ns(wait_slice, "--wait-slice");
    }
    for (const auto& t : tiers) {
      const size_t eq = t.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw std::invalid_argument("--tier: '" + t + "' is invalid; expected NAME=HOST:PORT");
      }
      cfg.tiers[t.substr(0, eq)] = TierAddress::parse(t.substr(eq + 1), "--tier");
    }
    for (const auto& u : urls) cfg.urls.push_back(UrlSpec::parse(u));
    cfg.validate();

    // Many keep-alive clients need many fds: lift the soft limit to the hard one.
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
      lim.rlim_cur = lim.rlim_max;
      setrlimit(RLIMIT_NOFILE, &lim);
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts

    nabla::tier::TierServer server(cfg);
    server.start();
    std::printf("nabla-tier listening on %s port %u, %d workers, seed %llu\n",
                cfg.listen.host.c_str(), server.port(), cfg.workers,
                static_cast<unsigned long long>(cfg.seed));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    server.stop();
    const auto c = server.counters();
    std::printf(
        "nabla-tier: %llu requests, %llu bad, %llu not found, %llu downstream failures, "
        "%llu async dropped\n",
        static_cast<unsigned long long>(c.requests),
        static_cast<unsigned long long>(c.bad_requests),
        static_cast<unsigned long long>(c.not_found),
        static_cast<unsigned long long>(c.downstream_failures),
        static_cast<unsigned long long>(c.async_dropped));
    for (const auto& [name, address] : cfg.tiers) {
      const auto d = server.downstream_counters(name);
      std::printf("nabla-tier: downstream %s: %llu ok, %llu failed, %llu connections opened\n",
                  name.c_str(), static_cast<unsigned long long>(d.requests_ok),
                  static_cast<unsigned long long>(d.requests_failed),
                  static_cast<unsigned long long>(d.connects));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nabla-tier: %s\n", e.what());
    return 1;
  }
}
