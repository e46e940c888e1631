#pragma once
// Command-line parsing for the daemons and nabla-tier, with nabla's exit
// codes: --help and --version print and exit 0; any other parse error is a
// usage error, printed as one line naming what was wrong (plus a hint) and
// exit code 2. Header-only: CLI11 is a header library and only the mains
// include this.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

namespace nabla::common {

inline constexpr int kUsageExitCode = 2;

// nullopt: parsed, go on. Otherwise the process exit code.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const std::string& program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": " << e.what() << "\n"
              << "run '" << program << " --help' for usage\n";
    return kUsageExitCode;
  }
}

}  // namespace nabla::common
