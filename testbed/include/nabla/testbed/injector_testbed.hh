#pragma once
// A two-host testbed for nabla-injectd integration tests: namespaces
// "snd" and "rcv" joined by a veth pair (10.77.0.1/24 <-> 10.77.0.2/24 and
// fd77::1/64 <-> fd77::2/64, inside those namespaces only), the daemon running inside "snd" (so its
// iptables rules live and die with that namespace), JSON-RPC calls made from a helper thread that
// entered "snd", and UDP probes stamped with CLOCK_MONOTONIC (namespaces share the clock, so
// one-way delay is exact).
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::testbed {

inline constexpr const char* kSenderIp = "10.77.0.1";
inline constexpr const char* kReceiverIp = "10.77.0.2";
inline constexpr const char* kSenderIp6 = "fd77::1";
inline constexpr const char* kReceiverIp6 = "fd77::2";

class InjectorTestbed {
 public:
  InjectorTestbed();
  ~InjectorTestbed();

  common::NetNamespace& sender() { return *snd_; }
  common::NetNamespace& receiver() { return *rcv_; }

  // Which host the daemon runs on: the sender (links "out" of it, the
  // default) or the receiver (links "in" to it).
  enum class Host { kSender, kReceiver };

  // Starts nabla-injectd inside the chosen namespace and waits until it
  // answers daemon.info (at most 5 s). Extra flags are appended.
  void start_daemon(const std::vector<std::string>& extra_flags = {}, Host host = Host::kSender);
  // SIGKILL, no cleanup: simulates a crash.
  void kill_daemon_hard();
  void stop_daemon();
  pid_t daemon_pid() const;
  std::string daemon_log() const;

  // Key used by call(); the daemon must then run with --key-file.
  void set_client_key(std::optional<common::Key> key) { key_ = std::move(key); }

  // One JSON-RPC call to the daemon (throws common::RpcError on an error).
  nlohmann::json call(const std::string& method, const nlohmann::json& params);

  // Probes time delivery by the receiving thread's clock after recvmsg
  // instead of the kernel's receive stamp. Needed for a daemon on the
  // receiving host: the kernel stamps a datagram when it enters that host's
  // stack, before the INPUT hook that delays it.
  void set_probe_receive_call_stamps(bool on) { probe_receive_call_stamps_ = on; }
  bool probe_receive_call_stamps() const { return probe_receive_call_stamps_; }
  // SCHED_FIFO priority of the probes' receiving thread (default 5, below
  // the daemon's default 10). Timed after recvmsg, a receiver that shares a
  // CPU with a polling daemon of higher priority measures its own wait.
  void set_probe_receiver_priority(int priority) { probe_receiver_priority_ = priority; }
  int probe_receiver_priority() const { return probe_receiver_priority_; }

  // `iptables-save` lines in the daemon's namespace mentioning nabla.
  std::vector<std::string> nabla_rules();

 private:
  std::unique_ptr<common::NetNamespace> snd_;
  std::unique_ptr<common::NetNamespace> rcv_;
  std::unique_ptr<common::VethPair> veth_;
  std::unique_ptr<common::ChildProcess> daemon_;
  common::NetNamespace* daemon_ns_ = nullptr;  // snd_ (from construction on) or rcv_
  bool probe_receive_call_stamps_ = false;
  int probe_receiver_priority_ = 5;
  // Holds SO_TIMESTAMPNS on for the testbed's life: the kernel enables RX
  // stamps (a global static key) lazily, so probes would lose their first stamps.
  common::FileDescriptor stamp_keeper_;
  std::string log_path_;
  std::optional<common::Key> key_;
};

struct ProbeResult {
  uint32_t seq = 0;
  int64_t send_ns = 0;  // stamped by the sender (intended = actual here)
  // Receiver's kernel stamp - send stamp of the first copy (the path's
  // one-way delay, excluding the receiving thread's wake-up); -1 when lost.
  int64_t delay_ns = -1;
  int copies = 0;      // datagrams received with this seq
  bool intact = true;  // every copy's filler bytes as sent
};

enum class ProbeFamily { kIpv4, kIpv6 };

// What send_udp_probes sends: `count` UDP probes of `size` bytes from the
// sender namespace to receiver:port (kReceiverIp, or kReceiverIp6 from
// kSenderIp6) at `rate_pps`, received in the receiver namespace; it waits
// `drain` after the last send for stragglers. Bounded: count and time.
struct ProbePlan {
  ProbeFamily family = ProbeFamily::kIpv4;
  uint16_t port = 9000;
  int count = 0;
  double rate_pps = 1000.0;
  size_t size = 64;
  std::chrono::milliseconds drain{300};
};

// What came back: one result per probe (in send order), and the datagrams
// whose sequence number was out of range (a corrupted header).
struct ProbeRun {
  std::vector<ProbeResult> probes;
  size_t unknown_datagrams = 0;
};

ProbeRun send_udp_probes(InjectorTestbed& bed, const ProbePlan& plan);

// The probes of send_udp_probes, over IPv4.
std::vector<ProbeResult> run_udp_probes(
    InjectorTestbed& bed, uint16_t port, int count, double rate_pps, size_t size = 64,
    std::chrono::milliseconds drain = std::chrono::milliseconds(300));

// The same, in `family`.
std::vector<ProbeResult> run_udp_probes(
    InjectorTestbed& bed, ProbeFamily family, uint16_t port, int count, double rate_pps,
    size_t size = 64, std::chrono::milliseconds drain = std::chrono::milliseconds(300));

// Percentile (nearest rank) of the delays of received probes, in ns.
int64_t delay_percentile(const std::vector<ProbeResult>& probes, double q);
double delay_mean(const std::vector<ProbeResult>& probes);
size_t lost(const std::vector<ProbeResult>& probes);

}  // namespace nabla::testbed
