#include "nabla/testbed/demo_testbed.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/log.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::testbed {
namespace {

namespace fs = std::filesystem;

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string find_binary(const std::string& name, const std::string& build_subdir) {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = self.parent_path();
    candidates.push_back(dir / name);
    candidates.push_back(dir.parent_path() / build_subdir / name);
  }
  if (const char* env = std::getenv("NABLA_BIN_DIR")) candidates.push_back(fs::path(env) / name);
  for (const fs::path& c : candidates) {
    if (executable(c)) return c.string();
  }
  const std::string in_path = common::find_program(name);
  if (!in_path.empty()) return in_path;
  std::string where;
  for (const fs::path& c : candidates) where += " " + c.string();
  throw std::runtime_error("cannot find " + name + " (looked in" + where +
                           " and PATH); build it (make build) or set NABLA_BIN_DIR");
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "tcp app -> db:8083" -> "tcp 10.213.0.3:* -> 10.213.0.4:8083" (the
// address-level link spec a campaign's exclude list takes).
std::string link_spec_for_label(const std::string& label,
                                const std::map<std::string, std::string>& addresses) {
  std::istringstream in(label);
  std::string proto, src, arrow, dst;
  in >> proto >> src >> arrow >> dst;
  auto endpoint = [&](const std::string& end) {
    const auto colon = end.find(':');
    const std::string host = end.substr(0, colon);
    const std::string port = colon == std::string::npos ? "*" : end.substr(colon + 1);
    return addresses.at(host) + ":" + port;
  };
  return proto + " " + endpoint(src) + " -> " + endpoint(dst);
}

}  // namespace

DemoBinaries DemoBinaries::find() {
  DemoBinaries b;
  b.nabla = find_binary("nabla", "coordinator");
  b.tier = find_binary("nabla-tier", "tier");
  b.injectd = find_binary("nabla-injectd", "injector");
  b.sniffd = find_binary("nabla-sniffd", "sniffer");
  return b;
}

PrivateDir::PrivateDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp(" + templ + ")");
  }
  path_ = templ;  // mkdtemp creates it with mode 0700
}

PrivateDir::~PrivateDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) common::log_warn("demo: cannot remove ", path_, ": ", ec.message());
}

void wait_for_listener(const common::NetNamespace& from, const std::string& address, int port,
                       std::chrono::milliseconds timeout) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    throw std::invalid_argument("not an IPv4 address: " + address);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    common::FileDescriptor fd = from.socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("nothing listens on " + address + ":" + std::to_string(port) +
                               " after " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

DemoTestbed::DemoTestbed(const DemoBinaries& bin, ServiceModel model,
                         const DemoTestbedOptions& options)
    : model_(std::move(model)), dir_("nabla-demo-") {
  auto check = [&] {
    if (options.interrupted()) throw DemoInterrupted();
  };
  key_file_ = dir_.path() + "/keys";
  fs::create_directory(key_file_);  // inside the 0700 work directory
  log_dir_ = options.log_dir.value_or(dir_.path());
  fs::create_directories(log_dir_);

  TestbedSpec spec;
  for (const std::string& h : model_.hosts()) spec.hosts.push_back({h, {}});
  testbed_ = std::make_unique<Testbed>(spec);
  for (const auto& h : testbed_->hosts()) {
    addresses_[h->name] = h->address;
    common::generate_key_file(host_key_file(h->address));  // O_EXCL, mode 0600
  }
  check();

  // Tiers, callees first, each waited for from its first caller's host.
  std::vector<const TierDef*> order;
  for (auto it = model_.tiers.rbegin(); it != model_.tiers.rend(); ++it) order.push_back(&*it);
  std::uint64_t tier_seed = options.seed;
  for (const TierDef* t : order) {
    testbed_->start(t->host, tier::tier_argv(model_, *t, bin.tier, addresses_, ++tier_seed),
                    log_dir_ + "/tier-" + t->name + ".log");
    wait_for_listener(testbed_->host(model_.client_host).ns, addresses_.at(t->host), t->port,
                      std::chrono::seconds(5));
    check();
  }
  for (const auto& h : testbed_->hosts()) {
    testbed_->start(h->name,
                    {bin.injectd, "--listen", h->address + ":" + std::to_string(kDemoInjectdPort),
                     "--key-file", host_key_file(h->address), "--log-level", "warn"},
                    log_dir_ + "/injectd-" + h->name + ".log");
    testbed_->start(
        h->name,
        {bin.sniffd, "--listen", h->address + ":" + std::to_string(kDemoSniffdPort), "--key-file",
         host_key_file(h->address), "--interval", options.sniffer_interval},
        log_dir_ + "/sniffd-" + h->name + ".log");
  }
  for (const auto& h : testbed_->hosts()) {
    wait_for_listener(h->ns, h->address, kDemoInjectdPort, std::chrono::seconds(10));
    wait_for_listener(h->ns, h->address, kDemoSniffdPort, std::chrono::seconds(10));
    check();
  }
}

std::string DemoTestbed::host_key_file(const std::string& address) const {
  return key_file_ + "/" + address + ".key";
}

std::string DemoTestbed::injectd(const std::string& host) const {
  return address(host) + ":" + std::to_string(kDemoInjectdPort);
}

std::string DemoTestbed::target() const {
  const TierDef& entry = model_.tier(model_.entry_tier);
  return "http://" + address(entry.host) + ":" + std::to_string(entry.port);
}

std::string demo_campaign_toml(const DemoTestbed& tb, const DemoCampaign& c) {
  return demo_campaign_toml(tb.model(), tb.addresses(), tb.key_file(), c);
}

std::string demo_campaign_toml(const ServiceModel& model,
                               const std::map<std::string, std::string>& addresses,
                               const std::string& key_file, const DemoCampaign& c) {
  const TruthTable truth = true_gradients(model);
  const TierDef& entry = model.tier(model.entry_tier);
  const std::string target =
      "http://" + addresses.at(entry.host) + ":" + std::to_string(entry.port);
  std::ostringstream o;
  o << "# Written by `nabla demo`: the RUBiS-like nabla-tier service on a namespace\n"
       "# testbed; [truth] holds the gradients the tiers' call patterns imply.\n";
  o << "name = " << toml_string(c.name) << "\nseed = " << c.seed
    << "\nkey_file = " << toml_string(key_file) << "\n";
  for (const auto& [host, address] : addresses) {
    o << "\n[[node]]\nname = " << toml_string(host) << "\naddress = " << toml_string(address)
      << "\ninjectd = " << toml_string(address + ":" + std::to_string(kDemoInjectdPort))
      << "\nsniffd = " << toml_string(address + ":" + std::to_string(kDemoSniffdPort)) << "\n";
  }
  o << "\n[workload]\ntarget = " << toml_string(target) << "\nrate = " << c.rate_rps
    << "\nconnections = " << c.connections << "\nthreads = 1\noutstanding = 1"
    << "\ninterarrival = \"exp\"\ntimeout = \"1s\"\nwarmup = " << toml_string(c.warmup)
    << "\nmix = { ";
  bool first = true;
  for (const auto& [url, weight] : model.mix) {
    o << (first ? "" : ", ") << toml_string(url) << " = " << weight;
    first = false;
  }
  o << " }\n";
  o << "\n[links]\ndiscover = true\ndiscover_for = " << toml_string(c.discover_for)
    << "\nmin_messages = 1\nexclude = [";
  if (c.only_links) {
    first = true;
    for (const auto& [label, by_type] : truth) {
      if (std::find(c.only_links->begin(), c.only_links->end(), label) != c.only_links->end())
        continue;
      o << (first ? "\n  " : ",\n  ") << toml_string(link_spec_for_label(label, addresses));
      first = false;
    }
    if (!first) o << "\n";
  }
  o << "]\n";
  o << "\n[gradient]\nschedule = " << toml_string(c.schedule) << "\nbins = " << c.bins
    << "\nchunks = " << c.chunks << "\nrequests_per_bin = " << c.requests_per_bin
    << "\ndelay_scale = " << c.delay_scale
    << "\nmin_bins_per_period = 8\nmax_amplitude = " << toml_string(c.max_amplitude)
    << "\nmin_amplitude = " << toml_string(c.min_amplitude) << "\nconfidence = " << c.confidence
    << "\nlease = " << toml_string(c.lease) << "\nrepeats = " << c.repeats
    << "\nprecision = " << c.precision << "\n";
  if (c.verify) o << "verify = true\n";
  if (!c.amplitudes.empty()) {
    o << "amplitudes = [";
    for (std::size_t i = 0; i < c.amplitudes.size(); ++i) {
      o << (i ? ", " : "") << toml_string(c.amplitudes[i]);
    }
    o << "]\n";
  }
  o << "\n[truth]\n";
  for (const auto& [label, by_type] : truth) {
    if (c.only_links &&
        std::find(c.only_links->begin(), c.only_links->end(), label) == c.only_links->end())
      continue;
    o << toml_string(label) << " = { ";
    first = true;
    for (const auto& [type, g] : by_type) {
      o << (first ? "" : ", ") << toml_string(type) << " = " << g;
      first = false;
    }
    o << " }\n";
  }
  return o.str();
}

}  // namespace nabla::testbed
