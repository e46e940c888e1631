// nabla: the coordinator CLI. Every command lives in the nabla_coordinator
// library; see cli.hh.
#include "nabla/coordinator/cli.hh"

int main(int argc, char** argv) {
  return nabla::coordinator::run_cli(argc, argv);
}
