#pragma once
// The `nabla` command line: builds the CLI11 app with every command, runs it,
// and turns exceptions into one error line and an exit code:
//   0 success (also --help, --version);
//   1 the command failed (bad input file, unreachable daemon, …):
//     "nabla: error: <what>";
//   2 usage error, every CLI11 ParseError (unknown command or flag, missing
//     or malformed value, …) and std::invalid_argument from a command's
//     callback (a value it refuses): "nabla <command>: <what>" naming the
//     flag, plus for parser errors a hint line "run 'nabla <command> --help'
//     for usage";
//   other codes: a command's own result, thrown as CLI::RuntimeError(code).
namespace nabla::coordinator {

int run_cli(int argc, char** argv);

}  // namespace nabla::coordinator
