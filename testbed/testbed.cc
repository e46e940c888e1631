// The namespace testbed; see testbed.hh.
#include "nabla/testbed/testbed.hh"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/stat.h>
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "nabla/common/log.hh"

namespace nabla::testbed {
namespace {

constexpr size_t kMaxHosts = 200;
constexpr size_t kMaxNameLength = 12;
constexpr const char* kBridge = "br0";

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > kMaxNameLength) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// Replaces every "{host}" with that host's address.
std::string substitute(std::string arg, const TestbedSpec& spec) {
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    const std::string token = "{" + spec.hosts[i].name + "}";
    const std::string addr = testbed_host_address(spec.subnet, i);
    for (size_t p = arg.find(token); p != std::string::npos; p = arg.find(token, p + addr.size())) {
      arg.replace(p, token.size(), addr);
    }
  }
  return arg;
}

}  // namespace

std::string testbed_host_address(const std::string& subnet, size_t index) {
  const size_t slash = subnet.find('/');
  if (slash == std::string::npos || subnet.substr(slash + 1) != "24") {
    throw std::invalid_argument("subnet: must be an IPv4 /24, got '" + subnet + "'");
  }
  in_addr a{};
  if (::inet_pton(AF_INET, subnet.substr(0, slash).c_str(), &a) != 1) {
    throw std::invalid_argument("subnet: bad address in '" + subnet + "'");
  }
  if (index >= kMaxHosts) throw std::invalid_argument("hosts: at most 200");
  const uint32_t net = ntohl(a.s_addr) & 0xFFFFFF00u;
  a.s_addr = htonl(net + static_cast<uint32_t>(index) + 1);
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

TestbedSpec parse_testbed_spec(std::string_view toml_text) {
  toml::table t;
  try {
    t = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "spec: " << e.description() << " at line " << e.source().begin.line;
    throw std::invalid_argument(msg.str());
  }
  TestbedSpec spec;
  for (const auto& [key, value] : t) {
    if (key != "subnet" && key != "host") {
      throw std::invalid_argument("spec: unknown key '" + std::string(key.str()) + "'");
    }
  }
  if (const toml::node* s = t.get("subnet")) {
    if (!s->is_string()) throw std::invalid_argument("subnet: must be a string");
    spec.subnet = s->as_string()->get();
  }
  testbed_host_address(spec.subnet, 0);  // validates the subnet
  const toml::array* hosts = t["host"].as_array();
  if (hosts == nullptr || hosts->empty()) {
    throw std::invalid_argument("host: give at least one [[host]]");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < hosts->size(); ++i) {
    const toml::table* h = hosts->get(i)->as_table();
    const std::string where = "host[" + std::to_string(i) + "]";
    if (h == nullptr) throw std::invalid_argument(where + ": must be a table");
    TestbedHostSpec hs;
    const auto name = (*h)["name"].value<std::string>();
    if (!name || !valid_name(*name)) {
      throw std::invalid_argument(where + ".name: 1-12 characters of a-z 0-9 _ -");
    }
    if (!names.insert(*name).second) {
      throw std::invalid_argument(where + ".name: '" + *name + "' given twice");
    }
    hs.name = *name;
    for (const auto& [key, value] : *h) {
      if (key != "name" && key != "process") {
        throw std::invalid_argument(where + ": unknown key '" + std::string(key.str()) + "'");
      }
    }
    if (const toml::array* procs = (*h)["process"].as_array()) {
      for (size_t k = 0; k < procs->size(); ++k) {
        const std::string pw = where + ".process[" + std::to_string(k) + "]";
        const toml::table* p = procs->get(k)->as_table();
        const toml::array* argv = p != nullptr ? (*p)["argv"].as_array() : nullptr;
        if (argv == nullptr || argv->empty()) {
          throw std::invalid_argument(pw + ".argv: must be a non-empty array of strings");
        }
        TestbedProcessSpec ps;
        for (const toml::node& a : *argv) {
          if (!a.is_string()) throw std::invalid_argument(pw + ".argv: strings only");
          ps.argv.push_back(a.as_string()->get());
        }
        if (const toml::node* out = p->get("output")) {
          if (!out->is_string()) throw std::invalid_argument(pw + ".output: must be a string");
          ps.output = out->as_string()->get();
        }
        hs.processes.push_back(std::move(ps));
      }
    }
    spec.hosts.push_back(std::move(hs));
  }
  if (spec.hosts.size() > kMaxHosts) throw std::invalid_argument("host: at most 200 hosts");
  for (TestbedHostSpec& h : spec.hosts) {
    for (TestbedProcessSpec& p : h.processes) {
      for (std::string& a : p.argv) a = substitute(a, spec);
    }
  }
  return spec;
}

TestbedSpec load_testbed_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("spec: cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_testbed_spec(buf.str());
}

Testbed::Testbed(const TestbedSpec& spec) : subnet_(spec.subnet) {
  switch_ = std::make_unique<common::NetNamespace>("tb-switch");
  switch_->run_checked({"ip", "link", "add", kBridge, "type", "bridge"});
  switch_->set_up(kBridge);
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    const std::string& name = spec.hosts[i].name;
    auto host = std::make_unique<TestbedHost>(
        TestbedHost{name, testbed_host_address(subnet_, i), common::NetNamespace("tb-" + name)});
    // Port names in the switch: "p<index>" (fits the 15-character limit).
    const std::string port = "p" + std::to_string(i);
    links_.push_back(std::make_unique<common::VethPair>(host->ns, "eth0", *switch_, port));
    switch_->run_checked({"ip", "link", "set", port, "master", kBridge});
    switch_->set_up(port);
    host->ns.add_address("eth0", host->address + "/24");
    host->ns.set_up("eth0");
    hosts_.push_back(std::move(host));
  }
  for (const TestbedHostSpec& h : spec.hosts) {
    for (const TestbedProcessSpec& p : h.processes) start(h.name, p.argv, p.output);
  }
}

Testbed::~Testbed() {
  // Processes first (by pid, in reverse start order), then links, hosts, switch.
  while (!processes_.empty()) processes_.pop_back();
  while (!links_.empty()) links_.pop_back();
  while (!hosts_.empty()) hosts_.pop_back();
  switch_.reset();
}

const TestbedHost& Testbed::host(const std::string& name) const {
  for (const auto& h : hosts_) {
    if (h->name == name) return *h;
  }
  throw std::out_of_range("testbed: no host '" + name + "'");
}

common::ChildProcess& Testbed::start(const std::string& host_name,
                                     const std::vector<std::string>& argv,
                                     const std::string& output) {
  const TestbedHost& h = host(host_name);
  processes_.push_back(
      {host_name, argv.at(0), std::make_unique<common::ChildProcess>(argv, &h.ns, output)});
  return *processes_.back().child;
}

nlohmann::json Testbed::describe() const {
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& h : hosts_) {
    hosts.push_back({{"name", h->name}, {"address", h->address}, {"namespace", h->ns.name()}});
  }
  nlohmann::json procs = nlohmann::json::array();
  for (const Proc& p : processes_) {
    procs.push_back({{"host", p.host}, {"pid", p.child->pid()}, {"argv0", p.argv0}});
  }
  return {{"subnet", subnet_}, {"switch", switch_->name()}, {"hosts", hosts}, {"processes", procs}};
}

size_t remove_testbed_leftovers(const nlohmann::json& state) noexcept {
  size_t removed = 0;
  try {
    // Processes a crashed `up` left behind (nothing kills them when their
    // parent dies): SIGKILL by pid, but only a pid that still runs the
    // recorded program inside the recorded host's namespace (no pid reuse
    // can make this hit another process).
    std::map<std::string, std::string> ns_of;
    for (const auto& h : state.value("hosts", nlohmann::json::array())) {
      ns_of[h.at("name").get<std::string>()] = h.at("namespace").get<std::string>();
    }
    for (const auto& p : state.value("processes", nlohmann::json::array())) {
      const pid_t pid = p.at("pid").get<pid_t>();
      const std::string ns = ns_of[p.at("host").get<std::string>()];
      const std::string exe = std::filesystem::path(p.at("argv0").get<std::string>()).filename();
      std::ifstream comm_file("/proc/" + std::to_string(pid) + "/comm");
      std::string comm;
      if (pid <= 1 || ns.empty() || !std::getline(comm_file, comm) || comm != exe.substr(0, 15)) {
        continue;
      }
      struct stat proc_ns {};
      struct stat host_ns {};
      if (::stat(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), &proc_ns) == 0 &&
          ::stat(("/run/netns/" + ns).c_str(), &host_ns) == 0 && proc_ns.st_ino == host_ns.st_ino &&
          proc_ns.st_dev == host_ns.st_dev) {
        ::kill(pid, SIGKILL);
      }
    }
    std::vector<std::string> names;
    if (state.contains("switch")) names.push_back(state["switch"].get<std::string>());
    for (const auto& h : state.value("hosts", nlohmann::json::array())) {
      names.push_back(h.at("namespace").get<std::string>());
    }
    for (const std::string& n : names) {
      // Only nabla's testbed namespaces: never delete a name we did not make.
      if (n.rfind(common::kNamespacePrefix, 0) != 0 || n.find("-tb-") == std::string::npos) {
        continue;
      }
      std::ifstream probe("/run/netns/" + n);
      if (!probe) continue;
      if (common::run_command({"ip", "netns", "del", n}).exit_code == 0) ++removed;
    }
  } catch (const std::exception& e) {
    common::log(common::LogLevel::kWarn, "testbed: state file unreadable: ", e.what());
  }
  return removed + common::sweep_stale_namespaces();
}

}  // namespace nabla::testbed
