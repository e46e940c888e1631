// Sniffer CPU under connection churn versus `ss -tinp` polled at the same
// interval, same run; and whether any connection was missed.
//
//   sniffer_churn_bench SNIFFD RATE SECONDS INTERVAL_MS
//
// Creates a private network namespace (nb-<pid>-*-cbench, deleted on exit)
// and moves into it. A server thread accepts on 127.0.0.1:9000, reads one
// 16-byte request, answers 16 bytes and closes; a client thread opens RATE
// connections per second for SECONDS (absolute deadlines), each one request
// and its answer, so every connection lives well under a scan interval.
// Meanwhile `SNIFFD --print --json --interval INTERVAL_MS --no-conntrack`
// runs as a child, and a thread forks `ss -tinp` every INTERVAL_MS. Prints
// the CPU seconds of each while the churn lasts (the sniffd child's from
// /proc/PID/stat; the sum over the ss children), their ratio (target <= 1.0), the
// requests the client sent and those the sniffer counted on the server's flow (target:
// equal).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "nabla/common/fd.hh"
#include "nabla/common/netns.hh"

namespace {

using nabla::common::FileDescriptor;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kPort = 9000;

double tv_s(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

sockaddr_in server_address() {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(kPort);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

// CPU seconds (user + system) a running process has used so far, from
// /proc/PID/stat (clock-tick resolution).
double process_cpu_s(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // comm may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  fields >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Forks argv with stdout to `out` (or /dev/null); returns the pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(out.empty() ? "/dev/null" : out.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(fd, 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// CPU seconds (user + system) of a child once it exits.
double reap_cpu_s(pid_t pid) {
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

void serve(int listener, const std::atomic<bool>& stop) {
  char buf[16];
  while (!stop) {
    FileDescriptor c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) continue;
    if (::recv(c.get(), buf, sizeof buf, MSG_WAITALL) == sizeof buf) {
      ::send(c.get(), buf, sizeof buf, MSG_NOSIGNAL);
    }
  }
}

// Opens `rate` connections per second for `seconds`; returns how many
// sent their request.
uint64_t churn(int rate, int seconds) {
  const sockaddr_in sa = server_address();
  const auto gap = std::chrono::nanoseconds(1'000'000'000 / rate);
  const auto start = Clock::now();
  uint64_t done = 0;
  char buf[16] = "0123456789abcde";
  for (int64_t i = 0; i < int64_t{rate} * seconds; ++i) {
    std::this_thread::sleep_until(start + gap * i);
    FileDescriptor c = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(c.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) continue;
    if (::send(c.get(), buf, sizeof buf, MSG_NOSIGNAL) != sizeof buf) continue;
    // The request is what the sniffer counts, so it is what is compared: a
    // recv that a signal (an ss child's SIGCHLD) cut short loses no request.
    ++done;
    ::recv(c.get(), buf, sizeof buf, MSG_WAITALL);
  }
  return done;
}

// Forks `ss -tinp` every interval until `stop`; the children's CPU seconds.
double poll_ss(const std::string& ss, std::chrono::milliseconds interval,
               const std::atomic<bool>& stop) {
  double cpu = 0;
  const auto start = Clock::now();
  for (int64_t k = 1; !stop; ++k) {
    cpu += reap_cpu_s(spawn({ss, "-tinp"}, ""));
    std::this_thread::sleep_until(start + interval * k);
  }
  return cpu;
}

// Requests the sniffer counted on the server's flows: the last total of
// each (pid, local port 9000) flow over all JSON lines, summed.
uint64_t counted_requests(const std::string& path) {
  std::map<int64_t, uint64_t> by_pid;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const nlohmann::json scan = nlohmann::json::parse(line, nullptr, false);
    if (scan.is_discarded()) continue;
    for (const auto& f : scan["flows"]) {
      if (f["local"]["port"] != kPort) continue;
      by_pid[f["local"]["pid"].get<int64_t>()] = f["total"]["segments_in"].get<uint64_t>();
    }
  }
  uint64_t sum = 0;
  for (const auto& [pid, n] : by_pid) sum += n;
  return sum;
}

bool has_scan_line(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') return true;
  }
  return false;
}

int run(const std::string& sniffd, int rate, int seconds, int interval_ms) {
  const std::string ss = nabla::common::find_program("ss");
  nabla::common::NetNamespace ns("cbench");
  {
    const FileDescriptor nsfd = ns.open();
    if (::setns(nsfd.get(), CLONE_NEWNET) != 0) throw std::runtime_error("setns failed");
  }
  FileDescriptor listener = FileDescriptor::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in sa = server_address();
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 ||
      ::listen(listener.get(), 4096) != 0) {
    throw std::runtime_error("bind/listen failed");
  }
  std::atomic<bool> stop{false};
  std::thread server(serve, listener.get(), std::cref(stop));
  const std::string out = "/tmp/nabla-churn-" + std::to_string(::getpid()) + ".json";
  const pid_t sniffer = spawn({sniffd, "--print", "--json", "--interval",
                               std::to_string(interval_ms) + "ms", "--no-conntrack"},
                              out);
  // The churn starts once a scan saw the listener (its first JSON line):
  // connections closed before that would have no owner yet, and their
  // pid-0 flow, later joined to the server's, would count twice here.
  for (int i = 0; i < 200 && !has_scan_line(out); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  double ss_cpu = 0;
  std::atomic<bool> stop_ss{false};
  std::thread ss_thread(
      [&] { ss_cpu = poll_ss(ss, std::chrono::milliseconds(interval_ms), stop_ss); });
  const double nabla_before = process_cpu_s(sniffer);
  const uint64_t done = churn(rate, seconds);
  stop_ss = true;
  ss_thread.join();
  const double nabla_cpu = process_cpu_s(sniffer) - nabla_before;           // during the churn only
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * interval_ms));  // last scans
  ::kill(sniffer, SIGTERM);
  reap_cpu_s(sniffer);
  stop = true;
  ::shutdown(listener.get(), SHUT_RDWR);
  server.join();
  const uint64_t counted = counted_requests(out);
  ::unlink(out.c_str());
  std::printf(
      "churn rate=%d/s seconds=%d interval_ms=%d nabla_cpu_s=%.3f ss_tinp_cpu_s=%.3f "
      "ratio=%.3f client_connections=%llu sniffer_counted=%llu missed=%lld\n",
      rate, seconds, interval_ms, nabla_cpu, ss_cpu, ss_cpu > 0 ? nabla_cpu / ss_cpu : 0.0,
      static_cast<unsigned long long>(done), static_cast<unsigned long long>(counted),
      static_cast<long long>(done) - static_cast<long long>(counted));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s SNIFFD RATE SECONDS INTERVAL_MS\n", argv[0]);
    return 2;
  }
  const int rate = std::atoi(argv[2]);
  const int seconds = std::atoi(argv[3]);
  const int interval_ms = std::atoi(argv[4]);
  if (rate < 1 || seconds < 1 || interval_ms < 10 || nabla::common::find_program("ss").empty()) {
    std::fprintf(stderr, "need `ss` in PATH, RATE >= 1, SECONDS >= 1, INTERVAL_MS >= 10\n");
    return 2;
  }
  try {
    return run(argv[1], rate, seconds, interval_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sniffer_churn_bench: %s\n", e.what());
    return 1;
  }
}
