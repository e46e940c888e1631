#pragma once
// A testbed of named hosts: one network namespace per host, all joined by a
// Linux bridge `br0` that lives in a dedicated "switch" namespace, each host
// reaching it through a veth pair (host side `eth0`). Hosts are addressed in
// a private /24 (default 10.213.0.0/24, host i gets .i+1) INSIDE their
// namespaces only: the root namespace's interfaces, addresses and routes are
// never touched.
//
// Everything is RAII: destroying the Testbed kills its processes (by pid),
// then deletes the veths and namespaces. Namespaces are named
// nb-<creator pid>-<seq>-tb-<host> (common/netns.hh), so leftovers of a
// crashed run are found by that prefix and removed by
// common::sweep_stale_namespaces() or remove_testbed_leftovers().
//
// Spec (TOML):
//   subnet = "10.213.0.0/24"          # optional, must be a /24
//   [[host]]
//   name = "web"                      # [a-z0-9_-], 1..12 characters
//   [[host.process]]                  # optional, started in host order
//   argv = ["nabla-tier", "--listen", "{web}:9001", "--tier", "app={app}:9002"]
//   output = "/tmp/web.log"           # optional (default: /dev/null)
// "{name}" in an argument is replaced by that host's address.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/netns.hh"

namespace nabla::testbed {

struct TestbedProcessSpec {
  std::vector<std::string> argv;
  std::string output = "/dev/null";
};

struct TestbedHostSpec {
  std::string name;
  std::vector<TestbedProcessSpec> processes;
};

struct TestbedSpec {
  std::string subnet = "10.213.0.0/24";
  std::vector<TestbedHostSpec> hosts;
};

// Parses and validates a spec; throws std::invalid_argument naming the
// field (and the TOML position for syntax errors).
TestbedSpec parse_testbed_spec(std::string_view toml_text);
TestbedSpec load_testbed_spec(const std::string& path);

// The address of the i-th host (0-based) in `subnet`, e.g. "10.213.0.1".
std::string testbed_host_address(const std::string& subnet, size_t index);

struct TestbedHost {
  std::string name;
  std::string address;  // without prefix length
  common::NetNamespace ns;
};

class Testbed {
 public:
  // Builds the switch and every host, then starts the spec's processes.
  // Throws (and removes whatever was built) on failure.
  explicit Testbed(const TestbedSpec& spec);
  ~Testbed();
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  const std::vector<std::unique_ptr<TestbedHost>>& hosts() const { return hosts_; }
  // Throws std::out_of_range naming the host.
  const TestbedHost& host(const std::string& name) const;
  // Starts a process inside a host; it is killed when the Testbed dies (or
  // earlier if the caller drops the returned reference's owner: never).
  common::ChildProcess& start(const std::string& host, const std::vector<std::string>& argv,
                              const std::string& output = "/dev/null");
  // {"switch": ns, "hosts": [{name, address, namespace}], "processes": [{host, pid, argv0}]}
  nlohmann::json describe() const;

 private:
  std::string subnet_;
  std::unique_ptr<common::NetNamespace> switch_;
  std::vector<std::unique_ptr<TestbedHost>> hosts_;
  std::vector<std::unique_ptr<common::VethPair>> links_;
  struct Proc {
    std::string host;
    std::string argv0;
    std::unique_ptr<common::ChildProcess> child;
  };
  std::vector<Proc> processes_;
};

// Cleans up after a crashed `nabla testbed up`: SIGKILLs the processes its
// state file lists (only a pid still running that program inside that
// host's namespace), deletes the nb-*-tb-* namespaces it names, then every
// stale nb-* namespace; returns how many namespaces were removed.
size_t remove_testbed_leftovers(const nlohmann::json& state) noexcept;

}  // namespace nabla::testbed
