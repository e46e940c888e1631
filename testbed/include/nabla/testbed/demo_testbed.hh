#pragma once
// The live half of `nabla demo`: the namespace testbed with the demo service
// running in it (demo_service.hh), nabla-injectd and nabla-sniffd on every
// host with a freshly generated key of its own (as on a cluster, each node
// holds its key and the coordinator a key directory of all of them,
// common/local_keys.hh), and the campaign file that points
// `nabla run` at all of it. Shared with the demo's acceptance tests, which
// drive the same testbed in other ways (kill -9 mid-campaign, constant delay
// versus `nabla predict`).
//
// Cleanup is RAII, in reverse order of construction: the Testbed kills every
// process it started (daemons remove their iptables rules on SIGTERM; their
// namespaces vanish anyway) and deletes the namespaces; then the private
// work directory (mode 0700, holding the key directory of 0600 keys, the
// campaign file and the logs unless --keep-logs) is removed.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/testbed/demo_service.hh"
#include "nabla/testbed/testbed.hh"

namespace nabla::testbed {

inline constexpr int kDemoInjectdPort = 7311;
inline constexpr int kDemoSniffdPort = 7312;

// Paths of the programs the demo starts. Each is searched in order: the
// directory of this executable (an installed layout), its sibling build
// directories (<build>/coordinator/nabla next to <build>/tier/nabla-tier,
// <build>/injector/nabla-injectd, <build>/sniffer/nabla-sniffd), the
// directory in $NABLA_BIN_DIR, then PATH. Throws std::runtime_error naming
// what is missing and where it looked.
struct DemoBinaries {
  std::string nabla, tier, injectd, sniffd;
  static DemoBinaries find();
};

// A directory only root can enter, removed (recursively) by the destructor.
class PrivateDir {
 public:
  explicit PrivateDir(const std::string& prefix);  // mkdtemp under $TMPDIR or /tmp
  ~PrivateDir();
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct DemoTestbedOptions {
  std::uint64_t seed = 42;
  std::optional<std::string> log_dir;  // process logs here (kept); else in the work dir
  std::string sniffer_interval = "500ms";
  // Polled between setup steps; when it returns true, setup stops with
  // DemoInterrupted (and everything built so far is removed).
  std::function<bool()> interrupted = [] { return false; };
};

class DemoInterrupted : public std::runtime_error {
 public:
  DemoInterrupted() : std::runtime_error("interrupted") {}
};

class DemoTestbed {
 public:
  DemoTestbed(const DemoBinaries& binaries, ServiceModel model, const DemoTestbedOptions& options);
  DemoTestbed(const DemoTestbed&) = delete;
  DemoTestbed& operator=(const DemoTestbed&) = delete;

  Testbed& testbed() { return *testbed_; }
  const ServiceModel& model() const { return model_; }
  const std::string& address(const std::string& host) const { return addresses_.at(host); }
  const std::map<std::string, std::string>& addresses() const { return addresses_; }
  const std::string& work_dir() const { return dir_.path(); }
  // The key directory: ADDRESS.key for every host, what the campaign's
  // key_file and `nabla inject --key-file` take.
  const std::string& key_file() const { return key_file_; }
  const std::string& log_dir() const { return log_dir_; }
  // The key of the host at `address`: KEY_DIR/ADDRESS.key.
  std::string host_key_file(const std::string& address) const;
  // "ADDR:7311" of a host's nabla-injectd.
  std::string injectd(const std::string& host) const;
  // http://ADDR:PORT of the entry tier.
  std::string target() const;

 private:
  ServiceModel model_;
  PrivateDir dir_;  // destroyed after the testbed
  std::string key_file_;
  std::string log_dir_;
  std::map<std::string, std::string> addresses_;
  std::unique_ptr<Testbed> testbed_;
};

// Everything of the campaign file that is not the testbed.
struct DemoCampaign {
  std::string name = "demo";
  std::uint64_t seed = 42;
  double rate_rps = 1000;
  int connections = 16;
  std::string warmup = "1s";
  std::string discover_for = "2s";
  // Links measured: "all" discovered, or only these campaign labels (the
  // others are excluded after discovery).
  std::optional<std::vector<std::string>> only_links;
  int bins = 64;
  int chunks = 9;
  int requests_per_bin = 5;
  double delay_scale = 30;
  std::string max_amplitude = "2ms";
  std::string min_amplitude = "200us";
  double confidence = 0.95;
  std::string lease = "3s";
  int repeats = 1;                        // [gradient] repeats: noisy active phases measured again
  double precision = 0;                   // [gradient] precision (0: off)
  std::string schedule = "simultaneous";  // [gradient] schedule
  // [gradient] verify: a constant-delay step on every link after its active
  // phase, the oracle a demo on a busy machine is judged against beside the
  // structural truth (sequential schedule only).
  bool verify = false;
  // [gradient] amplitudes: a sweep of every link (sequential schedule only).
  std::vector<std::string> amplitudes;
};

// The campaign TOML for this testbed: one [[node]] per host (address,
// injectd, sniffd, the key), the workload against the entry tier with the
// service's mix, the gradient parameters, and [truth] from true_gradients().
// Links not in only_links are excluded by their address-level link spec.
std::string demo_campaign_toml(const ServiceModel& model,
                               const std::map<std::string, std::string>& addresses,
                               const std::string& key_file, const DemoCampaign& campaign);
std::string demo_campaign_toml(const DemoTestbed& testbed, const DemoCampaign& campaign);

// Connects from `from`'s namespace to address:port until it succeeds or
// `timeout` passes (then throws std::runtime_error naming the endpoint).
void wait_for_listener(const common::NetNamespace& from, const std::string& address, int port,
                       std::chrono::milliseconds timeout);

}  // namespace nabla::testbed
