// Sniffer scan cost versus `ss -tinp`, same sockets, same run.
//
//   sniffer_scan_bench SOCKETS [ROUNDS]
//
// Creates a private network namespace (nb-<pid>-*-sbench, deleted on exit),
// moves this process into it, opens SOCKETS/2 loopback TCP connections (both
// ends here, a few bytes exchanged on each so tcp_info has counters), then
// alternates ROUNDS times: one full Sniffer::scan (TCP+UDP, v4+v6 sock_diag,
// tcp_info, /proc inode map, flow table update) timed with
// CLOCK_PROCESS_CPUTIME_ID, and one `ss -tinp` child (TCP only, with info and
// processes, output to /dev/null) timed by its rusage. Prints the medians
// and the ratio nabla/ss (target <= 1.0). Needs root (namespaces, fd limit).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"
#include "nabla/sniffer/sniffer.hh"

namespace {

using nabla::common::FileDescriptor;

double cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double tv_s(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

// CPU seconds (user + system) of one `ss -tinp` run with output discarded.
double run_ss(const std::string& ss) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(devnull, 1);
    ::execl(ss.c_str(), ss.c_str(), "-tinp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ss failed\n");
    std::exit(1);
  }
  return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SOCKETS [ROUNDS]\n", argv[0]);
    return 2;
  }
  const int sockets = std::atoi(argv[1]);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 11;
  const std::string ss = nabla::common::find_program("ss");
  if (ss.empty() || sockets < 2 || rounds < 1) {
    std::fprintf(stderr, "need `ss` in PATH, SOCKETS >= 2, ROUNDS >= 1\n");
    return 2;
  }
  rlimit lim{static_cast<rlim_t>(sockets + 256), static_cast<rlim_t>(sockets + 256)};
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    std::perror("setrlimit(RLIMIT_NOFILE)");
    return 1;
  }
  try {
    nabla::common::NetNamespace ns("sbench");
    {
      const FileDescriptor nsfd = ns.open();
      if (::setns(nsfd.get(), CLONE_NEWNET) != 0) {
        std::perror("setns");
        return 1;
      }
    }
    FileDescriptor listener = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(9000);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::listen(listener.get(), 4096) != 0) {
      std::perror("bind/listen");
      return 1;
    }
    std::vector<FileDescriptor> fds;
    fds.reserve(static_cast<size_t>(sockets));
    char buf[8];
    for (int i = 0; i < sockets / 2; ++i) {
      FileDescriptor c = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(c.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        std::perror("connect");
        return 1;
      }
      FileDescriptor s(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      c.write_all(std::string_view("ping"));
      if (::recv(s.get(), buf, 4, MSG_WAITALL) != 4) return 1;
      fds.push_back(std::move(c));
      fds.push_back(std::move(s));
    }

    nabla::sniffer::SnifferOptions opts;
    opts.conntrack = false;
    nabla::sniffer::Sniffer sniffer(opts);
    sniffer.scan(0);  // warm-up: first-time allocations of the maps
    run_ss(ss);
    std::vector<double> nabla_s;
    std::vector<double> ss_s;
    for (int r = 0; r < rounds; ++r) {
      const double t0 = cpu_s();
      // 10 s apart: each round walks all of /proc, as ss -p does (a scan
      // within seconds of the last walk skips it when no socket is new).
      sniffer.scan((r + 1) * 10'000'000'000LL);
      nabla_s.push_back(cpu_s() - t0);
      ss_s.push_back(run_ss(ss));
    }
    const auto stats = sniffer.stats();
    if (stats.sockets_last_scan < static_cast<uint64_t>(sockets)) {
      std::fprintf(stderr, "scan saw %llu sockets, expected >= %d\n",
                   static_cast<unsigned long long>(stats.sockets_last_scan), sockets);
      return 1;
    }
    const double n = median(nabla_s);
    const double s = median(ss_s);
    std::printf("sockets=%d rounds=%d nabla_scan_cpu_ms=%.3f ss_tinp_cpu_ms=%.3f ratio=%.3f\n",
                sockets, rounds, n * 1e3, s * 1e3, s > 0 ? n / s : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sniffer_scan_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
