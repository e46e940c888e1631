// nabla-injectd safety: a crashed daemon leaves traffic flowing (fail-open via
// --queue-bypass) and its next start removes the stale chains; neither an
// injection nor its stale rule after kill -9 lets a packet past a DROP of
// the host's filter table (the chains live in mangle); lapsed leases
// remove injections; bad and unauthenticated requests are refused while the
// daemon keeps serving.
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "cpu_steal.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/cpu_latency.hh"
#include "nabla/common/json_rpc.hh"
#include "nabla/testbed/injector_testbed.hh"
#include "nabla_test_support.hh"

namespace nabla::testing {
namespace {

using testbed::delay_percentile;
using testbed::InjectorTestbed;
using testbed::lost;
using testbed::ProbeResult;
using testbed::run_udp_probes;

constexpr int64_t kMs = 1'000'000;

size_t count_containing(const std::vector<std::string>& lines, const std::string& needle) {
  size_t n = 0;
  for (const auto& l : lines) n += l.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

TEST(InjectorFailsafe, Kill9KeepsTrafficFlowingAndNextStartRemovesStaleChains) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon();
  bed.call("inject.start",
           {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"delay", "20ms"}, {"lease_s", 30}});
  // No CPU latency limit unless asked for (--cpu-latency-us).
  const auto latency = bed.call("daemon.info", nlohmann::json::object()).at("cpu_latency");
  EXPECT_TRUE(latency.at("limit_us").is_null()) << latency.dump();
  EXPECT_FALSE(latency.at("held").get<bool>()) << latency.dump();
  int64_t killed_at = 0;
  std::thread killer([&] {
    ::usleep(500'000);
    killed_at = common::monotonic_ns();
    bed.kill_daemon_hard();
  });
  CpuSteal steal;
  const auto probes = run_udp_probes(bed, 9000, 1500, 1000.0);
  killer.join();
  // Every probe sent 100 ms after the kill arrives and none carries the
  // 20 ms delay (bound 10 ms: a lone probe can meet ~1-3 ms of scheduling
  // noise on a loaded CI VM; 19 ms while the hypervisor parks vCPUs, seen:
  // one probe 10.7 ms late); their p95 is below 2 ms.
  const int64_t lone_bound = (steal.calm() ? 10 : 19) * kMs;
  std::printf("machine %s\n", steal.describe().c_str());
  std::vector<ProbeResult> after;
  for (const auto& p : probes) {
    if (p.send_ns < killed_at + 100 * kMs) continue;
    after.push_back(p);
    EXPECT_GT(p.copies, 0) << "probe " << p.seq << " lost after the daemon died";
    EXPECT_LT(p.delay_ns, lone_bound)
        << "probe " << p.seq << " still delayed after the daemon died";
  }
  EXPECT_GT(after.size(), 800u);
  EXPECT_LT(delay_percentile(after, 0.95), 2 * kMs);
  // Before the kill, probes were delayed.
  EXPECT_GT(probes[100].delay_ns, 19 * kMs);

  // The crashed daemon left its chains and its rule behind...
  const auto stale = bed.nabla_rules();
  EXPECT_EQ(count_containing(stale, "nabla:inj-1"), 1u);
  // ...and the next start removes them and makes fresh, empty ones.
  bed.start_daemon();
  const auto fresh = bed.nabla_rules();
  EXPECT_EQ(count_containing(fresh, "nabla:"), 0u);
  EXPECT_EQ(count_containing(fresh, "-A OUTPUT -j NABLA-OUT"), 1u);
  EXPECT_EQ(count_containing(fresh, ":NABLA-OUT"), 1u);
  // SIGTERM removes everything.
  bed.stop_daemon();
  EXPECT_TRUE(bed.nabla_rules().empty());
}

// The host firewall keeps deciding: a DROP in filter INPUT for the matched
// traffic drops every probe while the link is delayed (the queue's ACCEPT
// ends only the mangle chain) and after the daemon is killed with -9 (its
// stale rule lets packets by with --queue-bypass, again only past mangle).
TEST(InjectorFailsafe, FilterDropKeepsDroppingWhileDelayedAndAfterKill9) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon({}, InjectorTestbed::Host::kReceiver);
  bed.set_probe_receive_call_stamps(true);  // delayed after the kernel's stamp
  const auto started = bed.call("inject.start", {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"},
                                                 {"direction", "in"},
                                                 {"delay", "5ms"},
                                                 {"lease_s", 30}});
  const std::string id = started.at("id");
  // The rules match: without a DROP the probes arrive, delayed.
  const auto delayed = run_udp_probes(bed, 9000, 50, 500.0);
  EXPECT_EQ(lost(delayed), 0u);
  EXPECT_GE(delay_percentile(delayed, 0.5), 5 * kMs);
  // The chains are in mangle, none in filter.
  EXPECT_NE(bed.receiver()
                .run({"iptables", "-w", "5", "-t", "mangle", "-S"})
                .stdout_text.find("-A INPUT -j NABLA-IN"),
            std::string::npos);
  EXPECT_EQ(
      bed.receiver().run({"iptables", "-w", "5", "-t", "filter", "-S"}).stdout_text.find("NABLA"),
      std::string::npos);

  const std::vector<std::string> drop = {"INPUT", "-p", "udp", "--dport", "9000", "-j", "DROP"};
  std::vector<std::string> add = {"iptables", "-w", "5", "-A"};
  add.insert(add.end(), drop.begin(), drop.end());
  bed.receiver().run_checked(add);
  const auto during = run_udp_probes(bed, 9000, 200, 500.0);
  EXPECT_EQ(lost(during), during.size()) << "a filter DROP was skipped during the injection";
  // They were queued (and released) before filter dropped them.
  const auto stats = bed.call("inject.stats", {{"id", id}});
  EXPECT_GE(stats.at("packets").get<uint64_t>(), 250u) << stats.dump();

  bed.kill_daemon_hard();
  EXPECT_EQ(count_containing(bed.nabla_rules(), "nabla:" + id), 1u);  // the stale rule stays
  const auto after_kill = run_udp_probes(bed, 9000, 200, 500.0);
  EXPECT_EQ(lost(after_kill), after_kill.size()) << "a filter DROP was skipped after kill -9";

  // Fail-open still: without the DROP, the stale rule lets traffic by.
  std::vector<std::string> del = {"iptables", "-w", "5", "-D"};
  del.insert(del.end(), drop.begin(), drop.end());
  bed.receiver().run_checked(del);
  EXPECT_EQ(lost(run_udp_probes(bed, 9000, 50, 500.0)), 0u);
}

TEST(InjectorFailsafe, LapsedLeaseRemovesTheInjectionWithinOneSecond) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  bed.start_daemon({"--cpu-latency-us", "0"});
  const auto started =
      bed.call("inject.start",
               {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"delay", "20ms"}, {"lease_s", 1.0}});
  const std::string id = started.at("id");
  ::usleep(600'000);
  bed.call("lease.renew", {{"id", id}});
  const int64_t lapse_at = common::monotonic_ns() + 1000 * kMs;
  ::usleep(600'000);  // 1.2 s after start: alive only thanks to the renewal
  EXPECT_EQ(bed.call("inject.list", nlohmann::json::object()).at("injections").size(), 1u);
  EXPECT_EQ(count_containing(bed.nabla_rules(), "nabla:" + id), 1u);
  // While an injection runs the daemon holds a 0 us CPU latency limit, and
  // the kernel applies it (other holders can only lower it, never raise it).
  const auto held = bed.call("daemon.info", nlohmann::json::object()).at("cpu_latency");
  EXPECT_EQ(held.at("limit_us"), 0);
  if (::access(common::kCpuLatencyDevice, F_OK) == 0) {
    EXPECT_TRUE(held.at("held").get<bool>()) << held.dump();
    EXPECT_EQ(common::current_cpu_latency_us(), 0);
  }
  int64_t gone_at = 0;
  while (common::monotonic_ns() < lapse_at + 3000 * kMs) {
    if (count_containing(bed.nabla_rules(), "nabla:" + id) == 0) {
      gone_at = common::monotonic_ns();
      break;
    }
    ::usleep(20'000);
  }
  ASSERT_GT(gone_at, 0) << "rule still present 3 s after the lease lapsed";
  EXPECT_LE(gone_at - lapse_at, 1000 * kMs);
  EXPECT_GE(gone_at - lapse_at, -50 * kMs);  // not removed before the lapse
  EXPECT_TRUE(bed.call("inject.list", nlohmann::json::object()).at("injections").empty());
  // ...and lets it go with the last injection.
  EXPECT_FALSE(
      bed.call("daemon.info", nlohmann::json::object()).at("cpu_latency").at("held").get<bool>());
  const auto probes = run_udp_probes(bed, 9000, 100, 1000.0);
  EXPECT_EQ(lost(probes), 0u);
  EXPECT_LT(delay_percentile(probes, 0.95), 2 * kMs);  // the 20 ms delay is gone
}

int error_code_of(InjectorTestbed& bed, const std::string& method, const nlohmann::json& params,
                  std::string* message) {
  try {
    bed.call(method, params);
  } catch (const common::RpcError& e) {
    *message = e.what();
    return e.code();
  }
  return 0;
}

TEST(InjectorFailsafe, MalformedAndUnauthenticatedRequestsAreRefused) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  const std::string key_path = "/tmp/nabla-injectd-key-" + std::to_string(::getpid());
  const common::Key key = common::generate_key_file(key_path);
  bed.set_client_key(key);
  bed.start_daemon({"--key-file", key_path});
  std::string message;
  EXPECT_EQ(
      error_code_of(bed, "inject.start", {{"link", "udp 10.77.0.300 -> 10.77.0.2:9000"}}, &message),
      common::rpc_code::kInvalidParams);
  EXPECT_EQ(message.rfind("link", 0), 0u) << message;
  EXPECT_EQ(error_code_of(
                bed, "inject.start",
                {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"faults", {{"loss", {{"p", 1.5}}}}}},
                &message),
            common::rpc_code::kInvalidParams);
  EXPECT_EQ(message.rfind("faults.loss.p", 0), 0u) << message;
  EXPECT_EQ(error_code_of(bed, "inject.start",
                          {{"link", "udp 10.77.0.1 -> 10.77.0.2:9000"}, {"lease_s", -1}}, &message),
            common::rpc_code::kInvalidParams);
  EXPECT_EQ(message.rfind("lease_s", 0), 0u) << message;
  EXPECT_EQ(error_code_of(bed, "inject.stop", {{"id", "inj-99"}}, &message),
            common::rpc_code::kInvalidParams);
  EXPECT_EQ(error_code_of(bed, "inject.nonsense", nlohmann::json::object(), &message),
            common::rpc_code::kMethodNotFound);
  // Nothing was started, and no rule was touched by the bad requests.
  EXPECT_TRUE(bed.call("inject.list", nlohmann::json::object()).at("injections").empty());
  EXPECT_EQ(count_containing(bed.nabla_rules(), "nabla:"), 0u);
  // A client without the key can call nothing; with a wrong key neither.
  bed.set_client_key(std::nullopt);
  EXPECT_ANY_THROW(bed.call("daemon.info", nlohmann::json::object()));
  common::Key wrong = common::generate_key_file(key_path + ".wrong");
  bed.set_client_key(wrong);
  EXPECT_ANY_THROW(bed.call("inject.list", nlohmann::json::object()));
  // The daemon keeps serving.
  bed.set_client_key(key);
  EXPECT_EQ(bed.call("daemon.info", nlohmann::json::object()).at("injections"), 0);
  std::remove(key_path.c_str());
  std::remove((key_path + ".wrong").c_str());
}

TEST(InjectorFailsafe, CheckReportsAUsableEnvironment) {
  NABLA_REQUIRE_ROOT_OR_SKIP();
  InjectorTestbed bed;
  const auto r = bed.sender().run({NABLA_INJECTD_PATH, "--check", "--queue-num", "9"});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("ok:"), std::string::npos) << r.stdout_text;
  // The CPU latency limit is reported (advisory, never a failure): off by
  // default, and whether it can be held when asked for.
  EXPECT_NE(r.stdout_text.find("note: no CPU latency limit requested"), std::string::npos)
      << r.stdout_text;
  // The host's timer wake-up lateness is measured and the lead it implies
  // printed; a fixed --spin-us is reported as fixed, a bad one refused.
  EXPECT_NE(r.stdout_text.find("ok: timer wake-up lateness p50 "), std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("ok: self-calibrated release lead "), std::string::npos)
      << r.stdout_text;
  const auto fixed =
      bed.sender().run({NABLA_INJECTD_PATH, "--check", "--queue-num", "9", "--spin-us", "40"});
  EXPECT_NE(fixed.stdout_text.find("ok: fixed release lead 40 us (--spin-us)"), std::string::npos)
      << fixed.stdout_text;
  const auto unknown = bed.sender().run({NABLA_INJECTD_PATH, "--bogus"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.stderr_text.find("nabla-injectd: "), std::string::npos) << unknown.stderr_text;
  const auto bad_spin = bed.sender().run({NABLA_INJECTD_PATH, "--check", "--spin-us", "lots"});
  EXPECT_EQ(bad_spin.exit_code, 2);
  EXPECT_NE(bad_spin.stderr_text.find("--spin-us"), std::string::npos) << bad_spin.stderr_text;
  if (::access(common::kCpuLatencyDevice, F_OK) == 0) {
    const auto on = bed.sender().run(
        {NABLA_INJECTD_PATH, "--check", "--queue-num", "9", "--cpu-latency-us", "0"});
    EXPECT_EQ(on.exit_code, 0) << on.stdout_text << on.stderr_text;
    EXPECT_NE(on.stdout_text.find("ok: CPU latency limit of 0 us can be held"), std::string::npos)
        << on.stdout_text;
  }
  const auto bad_latency =
      bed.sender().run({NABLA_INJECTD_PATH, "--check", "--cpu-latency-us", "soon"});
  EXPECT_EQ(bad_latency.exit_code, 2);
  EXPECT_NE(bad_latency.stderr_text.find("--cpu-latency-us"), std::string::npos)
      << bad_latency.stderr_text;
  // A bad flag value is refused with a message naming it.
  const auto bad = bed.sender().run({NABLA_INJECTD_PATH, "--listen", "localhost:99999"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE((bad.stdout_text + bad.stderr_text).find("--listen"), std::string::npos)
      << bad.stdout_text << bad.stderr_text;
}

}  // namespace
}  // namespace nabla::testing
