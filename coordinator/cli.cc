#include "nabla/coordinator/cli.hh"

#include <CLI/CLI.hpp>
#include <iostream>
#include <stdexcept>

#include "nabla/coordinator/analyze.hh"
#include "nabla/coordinator/demo.hh"
#include "nabla/coordinator/predict.hh"
#include "nabla/coordinator/discover_command.hh"
#include "nabla/coordinator/testbed_command.hh"
#include "nabla/coordinator/history_command.hh"
#include "nabla/coordinator/inject_command.hh"
#include "nabla/coordinator/load_command.hh"
#include "nabla/coordinator/run_command.hh"

#ifndef NABLA_VERSION
#define NABLA_VERSION "0.1.0"
#endif

namespace nabla::coordinator {

int run_cli(int argc, char** argv) {
  CLI::App app{"nabla: link-gradient measurement, fault injection and tail-latency testbed"};
  app.set_version_flag("--version", NABLA_VERSION);
  app.require_subcommand(1);
  register_analyze_command(app);
  register_inject_command(app);
  register_load_command(app);
  register_discover_command(app);
  register_testbed_command(app);
  register_history_commands(app);
  register_run_command(app);
  register_predict_command(app);
  register_demo_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::invalid_argument& e) {
    std::cerr << "nabla: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "nabla: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace nabla::coordinator
