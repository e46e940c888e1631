// Daemon connections, lease renewal and injection handles; see
// daemons.hh.
#include "nabla/campaign/daemons.hh"

#include <algorithm>
#include <stdexcept>

#include "nabla/common/clock.hh"
#include "nabla/common/log.hh"

namespace nabla::campaign {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kCallTimeout{3000};
constexpr milliseconds kStopTimeout{1000};  // best-effort stops on the way out

std::optional<common::Key> key_for(const CampaignSpec& spec, const CampaignNode& node) {
  const auto path = spec.key_file_for(node);
  if (!path) return std::nullopt;
  try {
    return common::load_key_file(*path);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": key file " + *path + ": " + e.what());
  }
}

common::RpcClient connect_daemon(const CampaignNode& node, const char* what,
                                 const common::HostPort& at, const std::optional<common::Key>& key,
                                 milliseconds timeout) {
  try {
    return common::RpcClient::connect(at.host, at.port, key, timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node.name + ": cannot reach " + what + " at " +
                             at.to_string() + ": " + e.what());
  }
}

}  // namespace

DaemonSet::DaemonSet(const CampaignSpec& spec, milliseconds timeout) {
  for (const CampaignNode& n : spec.nodes) {
    Entry e;
    e.node = &n;
    e.key = key_for(spec, n);
    if (n.injectd)
      e.injectd.emplace(connect_daemon(n, "nabla-injectd", *n.injectd, e.key, timeout));
    if (n.sniffd) e.sniffd.emplace(connect_daemon(n, "nabla-sniffd", *n.sniffd, e.key, timeout));
    nodes_.emplace(n.name, std::move(e));
  }
}

common::RpcClient* DaemonSet::injectd(const std::string& node) {
  auto it = nodes_.find(node);
  return it == nodes_.end() || !it->second.injectd ? nullptr : &*it->second.injectd;
}

common::RpcClient* DaemonSet::sniffd(const std::string& node) {
  auto it = nodes_.find(node);
  return it == nodes_.end() || !it->second.sniffd ? nullptr : &*it->second.sniffd;
}

common::RpcClient& DaemonSet::reconnect_injectd(const std::string& node, milliseconds timeout) {
  Entry& e = nodes_.at(node);
  e.injectd.reset();
  e.injectd.emplace(connect_daemon(*e.node, "nabla-injectd", *e.node->injectd, e.key, timeout));
  return *e.injectd;
}

// ------------------------------------------------------------ LeaseKeeper

LeaseKeeper::LeaseKeeper(const CampaignSpec& spec, std::int64_t lease_ns)
    : spec_(spec), lease_ns_(lease_ns) {
  for (const CampaignNode& n : spec.nodes) {
    if (!n.injectd) continue;
    clients_[n.name].emplace(
        connect_daemon(n, "nabla-injectd", *n.injectd, key_for(spec, n), kCallTimeout));
  }
  thread_ = std::thread([this] { loop(); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LeaseKeeper::add(const std::string& node, const std::string& id) {
  std::lock_guard lock(mutex_);
  ids_[node].push_back(id);
}

void LeaseKeeper::remove(const std::string& node, const std::string& id) {
  std::lock_guard lock(mutex_);
  auto& v = ids_[node];
  v.erase(std::remove(v.begin(), v.end(), id), v.end());
}

std::optional<std::string> LeaseKeeper::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void LeaseKeeper::loop() {
  const auto period = std::chrono::nanoseconds(lease_ns_ / 4);
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    const auto ids = ids_;  // renew outside the lock: add/remove must not wait on RPCs
    lock.unlock();
    for (const auto& [node, list] : ids) {
      for (const std::string& id : list) {
        std::optional<common::RpcClient>& client = clients_[node];
        std::string failure;
        for (int attempt = 0; attempt < 2; ++attempt) {
          try {
            if (!client || !client->connected()) {
              const CampaignNode* n = spec_.node_by_name(node);
              client.reset();
              client.emplace(connect_daemon(*n, "nabla-injectd", *n->injectd, key_for(spec_, *n),
                                            kCallTimeout));
            }
            client->call("lease.renew", {{"id", id}}, kCallTimeout);
            ++renewals_;
            failure.clear();
            break;
          } catch (const common::RpcError& e) {
            failure = e.what();  // e.g. the injection is gone: no retry helps
            break;
          } catch (const std::exception& e) {
            failure = e.what();
            client.reset();
          }
        }
        if (!failure.empty()) {
          std::lock_guard relock(mutex_);
          // Ignore an injection stopped while we were renewing it.
          const auto& now = ids_[node];
          if (std::find(now.begin(), now.end(), id) != now.end() && !error_) {
            error_ = "node " + node + ": lease.renew of " + id + " failed: " + failure;
          }
        }
      }
    }
    lock.lock();
  }
}

// -------------------------------------------------------- ActiveInjection

ActiveInjection::ActiveInjection(DaemonSet& daemons, LeaseKeeper& leases, const std::string& node,
                                 json params)
    : daemons_(daemons), leases_(leases), node_(node) {
  common::RpcClient* c = daemons.injectd(node);
  if (c == nullptr) throw std::runtime_error("node " + node + ": no injectd");
  const std::int64_t before = common::monotonic_ns();
  try {
    if (!c->connected()) c = &daemons.reconnect_injectd(node, kCallTimeout);
    started_ = c->call("inject.start", params, kCallTimeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node + ": inject.start on " +
                             params.value("link", std::string()) + " failed: " + e.what());
  }
  const std::int64_t after = common::monotonic_ns();
  anchor_ns_ = before + (after - before) / 2;
  id_ = started_.at("id").get<std::string>();
  leases_.add(node_, id_);
}

json ActiveInjection::stop() {
  stopped_ = true;
  leases_.remove(node_, id_);
  common::RpcClient* c = daemons_.injectd(node_);
  json answer;
  try {
    if (!c->connected()) c = &daemons_.reconnect_injectd(node_, kCallTimeout);
    answer = c->call("inject.stop", {{"id", id_}}, kCallTimeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("node " + node_ + ": inject.stop of " + id_ + " failed: " + e.what());
  }
  return answer.value("stats", json::object());
}

ActiveInjection::~ActiveInjection() {
  if (stopped_) return;
  leases_.remove(node_, id_);
  try {
    common::RpcClient* c = daemons_.injectd(node_);
    if (!c->connected()) c = &daemons_.reconnect_injectd(node_, kStopTimeout);
    c->call("inject.stop", {{"id", id_}}, kStopTimeout);
  } catch (const std::exception& e) {
    common::log_warn("could not stop injection ", id_, " on node ", node_, " (", e.what(),
                     "); the daemon stops it when its lease lapses");
  }
}

}  // namespace nabla::campaign
