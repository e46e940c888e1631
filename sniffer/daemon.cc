// nabla-sniffd's event loop; see daemon.hh.
#include "nabla/sniffer/daemon.hh"

#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <ostream>

#include "nabla/common/clock.hh"
#include "nabla/common/instance_lock.hh"
#include "nabla/common/local_keys.hh"
#include "nabla/common/log.hh"
#include "nabla/sniffer/conntrack_rule.hh"
#include "nabla/sniffer/control.hh"

namespace nabla::sniffer {
namespace {

constexpr std::chrono::milliseconds kDestroyDrain{50};

std::string endpoint_text(const IpAddr& addr, uint16_t port) {
  char buf[64];
  addr.format(buf, sizeof buf);
  return (addr.family == AF_INET6 ? "[" + std::string(buf) + "]" : std::string(buf)) + ":" +
         std::to_string(port);
}

// Reads the sources between scans: conntrack events as they come (a NEW
// event must be read while the connecting socket exists), destroy
// notifications in batches every kDestroyDrain (a wake-up per closed socket
// costs more than the work under churn; the socket's 8 MiB buffer holds far
// more than one batch). Each batch drains conntrack first, as NEW events
// name connecting processes.
class SourceReader {
 public:
  SourceReader(asio::io_context& io, Sniffer& sniffer, const bool& stopping)
      : sniffer_(sniffer), stopping_(stopping), destroy_timer_(io) {
    if (sniffer.conntrack_fd() >= 0) {
      // The descriptor owns a dup, so the Sniffer keeps its own fd.
      conntrack_.emplace(io, ::dup(sniffer.conntrack_fd()));
      arm_conntrack();
    }
    if (sniffer.destroy_fd() >= 0) arm_destroy();
  }
  void cancel() {
    destroy_timer_.cancel();
    if (conntrack_) conntrack_->cancel();
  }

 private:
  void arm_conntrack() {
    conntrack_->async_wait(asio::posix::stream_descriptor::wait_read,
                           [this](const std::error_code& ec) {
                             if (ec || stopping_) return;
                             sniffer_.drain_conntrack(common::monotonic_ns());
                             arm_conntrack();
                           });
  }
  void arm_destroy() {
    destroy_timer_.expires_after(kDestroyDrain);
    destroy_timer_.async_wait([this](const std::error_code& ec) {
      if (ec || stopping_) return;
      const int64_t now = common::monotonic_ns();
      sniffer_.drain_conntrack(now);
      sniffer_.drain_destroyed(now);
      arm_destroy();
    });
  }
  Sniffer& sniffer_;
  const bool& stopping_;
  asio::steady_timer destroy_timer_;
  std::optional<asio::posix::stream_descriptor> conntrack_;
};

void print_header(std::ostream& out) {
  char head[256];
  std::snprintf(head, sizeof head, "%-3s %-28s %7s %-15s %s %-28s %8s %8s %10s %10s", "pro",
                "local", "pid", "comm", "  ", "remote", "segs_out", "segs_in", "bytes_out",
                "bytes_in");
  out << head << std::endl;
}

}  // namespace

std::vector<std::string> format_sources(const std::vector<SourceStatus>& sources) {
  std::vector<std::string> lines;
  for (const SourceStatus& s : sources) {
    lines.push_back(s.active ? "source " + s.name + ": active: " + s.detail
                             : "WARNING: source " + s.name + " inert: " + s.detail);
  }
  return lines;
}

void log_sources(const Sniffer& sniffer) {
  for (const std::string& line : format_sources(sniffer.sources())) {
    if (line.rfind("WARNING", 0) == 0) {
      common::log_warn(line);
    } else {
      common::log_info(line);
    }
  }
  for (const std::string& line : sniffer.namespace_sources()) common::log_info(line);
}

// " @ctr-ID", " @NAME" or " @netns-INODE" for a flow of another namespace.
std::string namespace_suffix(const NetnsLabel& netns) {
  if (netns.own) return "";
  if (!netns.container.empty()) return " @ctr-" + netns.container;
  if (!netns.name.empty()) return " @" + netns.name;
  return " @netns-" + std::to_string(netns.inode);
}

std::string format_flow_row(const ReportedFlow& flow) {
  const FlowRecord& r = flow.record;
  char line[512];
  const char* dir = r.direction == Direction::kOutbound  ? "->"
                    : r.direction == Direction::kInbound ? "<-"
                                                         : "--";
  std::snprintf(line, sizeof line, "%-3s %-28s %7d %-15s %s %-28s %8llu %8llu %10llu %10llu%s",
                r.id.proto == Proto::kTcp ? "tcp" : "udp",
                endpoint_text(r.id.local, r.id.local_port).c_str(), r.id.pid,
                r.comm.empty() ? "?" : r.comm.c_str(), dir,
                endpoint_text(r.id.remote, r.id.remote_port).c_str(),
                static_cast<unsigned long long>(r.total.data_segs_out),
                static_cast<unsigned long long>(r.total.data_segs_in),
                static_cast<unsigned long long>(r.total.bytes_out),
                static_cast<unsigned long long>(r.total.bytes_in),
                flow.control             ? " control"
                : r.conntrack_events > 0 ? " conntrack"
                : r.closed_sockets > 0   ? " closed"
                                         : "");
  return line + namespace_suffix(flow.netns);
}

int run_daemon(const DaemonOptions& options, std::ostream& out) {
  // One sniffd per network namespace: a second one would sweep this one's
  // conntrack chain and turn nf_conntrack_acct back off under it
  // (common/instance_lock.hh). Keyed by the namespace it runs in.
  std::optional<common::InstanceLock> lock;
  if (::geteuid() == 0) {
    lock.emplace(common::InstanceLock::acquire(common::kSniffdKeyName, "/proc/self/ns/net",
                                               options.run_dir));
  }
  asio::io_context io;
  std::unique_ptr<common::RpcServer> server;
  std::optional<common::DaemonKey> key;
  SnifferOptions sniffer_options = options.sniffer;
  if (!options.print) {
    key.emplace(common::DaemonKey::choose(options.key_file, common::kSniffdKeyName,
                                          options.rpc.listen_address));
    common::RpcServerOptions rpc = options.rpc;
    rpc.daemon = common::kSniffdKeyName;
    key->apply(rpc);
    server = std::make_unique<common::RpcServer>(io, rpc);
    key->publish(server->port());
    common::log_info("control key: ", key->describe());
    // Our own control port is a control connection whatever its number.
    sniffer_options.control_ports.push_back(server->port());
  }
  Sniffer sniffer(sniffer_options);
  // Least privilege from here on, as under the unit: the control socket is
  // bound, the sources are open and the conntrack chain is in place. All of
  // the daemon runs on this thread; helper threads made later inherit this.
  if (options.drop_capabilities) {
    const auto keep = kept_capabilities(options.sniffer);
    common::log_info("capabilities kept: ", common::describe_kept_capabilities(
                                                keep, common::drop_capabilities_except(keep)));
  }
  if (server) {
    register_control_methods(*server, sniffer,
                             node_facts(sniffer, options.report_protocol_version));
    out << "nabla-sniffd: listening on " << options.rpc.listen_address << ":" << server->port()
        << std::endl;
  }

  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::steady_timer timer(io);
  bool stopping = false;
  std::optional<SourceReader> reader;
  auto stop = [&] {
    stopping = true;
    signals.cancel();
    timer.cancel();
    if (reader) reader->cancel();
    if (server) server->stop();
  };
  signals.async_wait([&](const std::error_code& ec, int) {
    if (!ec) stop();
  });
  log_sources(sniffer);
  reader.emplace(io, sniffer, stopping);

  uint64_t cursor = 0;
  uint64_t scans = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto interval = std::chrono::nanoseconds(options.sniffer.interval_ns);
  if (options.print && !options.print_json) print_header(out);
  std::function<void()> schedule = [&] {
    timer.expires_at(start + interval * static_cast<int64_t>(scans));
    timer.async_wait([&](const std::error_code& ec) {
      if (ec || stopping) return;
      const int64_t now = common::monotonic_ns();
      sniffer.drain_conntrack(now);  // first: NEW events name connecting processes
      sniffer.drain_destroyed(now);
      sniffer.scan(now);
      ++scans;
      if (options.print) {
        const auto flows = sniffer.flows(cursor, std::nullopt, options.include_control, cursor);
        if (options.print_json) {
          nlohmann::json line = {{"scan", scans}, {"flows", nlohmann::json::array()}};
          for (const auto& f : flows) line["flows"].push_back(flow_to_json(f));
          out << line.dump() << std::endl;
        } else {
          for (const auto& f : flows) out << format_flow_row(f) << '\n';
          out.flush();
        }
      }
      if (options.max_scans != 0 && scans >= options.max_scans) {
        stop();
        return;
      }
      schedule();
    });
  };
  schedule();
  io.run();
  return 0;
}

int run_cleanup(const std::string& run_dir, std::ostream& out) {
  std::optional<common::InstanceLock> lock;
  try {
    lock.emplace(
        common::InstanceLock::acquire(common::kSniffdKeyName, "/proc/self/ns/net", run_dir));
  } catch (const common::AlreadyRunningError& e) {
    out << "nabla-sniffd --cleanup: removed nothing: " << e.holder() << ", and its chain stays"
        << std::endl;
    return 0;
  }
  const int removed = ConntrackRule::remove_stale();
  out << "nabla-sniffd --cleanup: "
      << (removed > 0
              ? "removed " + std::to_string(removed) + " " + std::string(kConntrackChainPrefix) +
                    "<pid> chains of a nabla-sniffd that did not stop cleanly"
              : std::string("no nabla-sniffd chains left behind"))
      << std::endl;
  return 0;
}

}  // namespace nabla::sniffer
