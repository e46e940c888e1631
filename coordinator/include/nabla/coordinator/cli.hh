#pragma once
// The `nabla` command line: builds the CLI11 app with every command, runs it,
// and turns exceptions into one error line and an exit code:
//   0 success, 1 the command failed (bad input file, unreachable daemon, …),
//   2 usage error (unknown flag, bad flag value).
namespace nabla::coordinator {

int run_cli(int argc, char** argv);

}  // namespace nabla::coordinator
