// A standalone echo server for bench/loadgen/loadgen.sh: tier::EchoServer
// on 127.0.0.1 (kernel-chosen port, printed as "echo peer on 127.0.0.1 port N"),
// answering every frame at once, until SIGINT or SIGTERM.
//   usage: nabla_echo_peer [DELAY_NS]
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "nabla/tier/echo_server.hh"

int main(int argc, char** argv) {
  try {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server thread starts
    nabla::tier::EchoServerOptions options;
    if (argc > 1) options.delay_ns = std::strtoll(argv[1], nullptr, 10);
    nabla::tier::EchoServer server(options);
    std::printf("echo peer on 127.0.0.1 port %u\n", static_cast<unsigned>(server.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    std::printf("echo peer: %llu frames\n", static_cast<unsigned long long>(server.frames()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nabla_echo_peer: %s\n", e.what());
    return 1;
  }
}
