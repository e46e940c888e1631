// CLI11 wiring of `nabla analyze …` (the computations are in analyze.cc).
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "nabla/common/units.hh"
#include "nabla/coordinator/analyze.hh"

namespace nabla::coordinator {
namespace {

// Parses a duration flag, naming the flag in the error.
std::int64_t duration_flag(const std::string& flag, const std::string& text) {
  try {
    return common::parse_duration_ns(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

void emit(const nlohmann::json& result, bool json_output,
          void (*print_table)(const nlohmann::json&, std::ostream&)) {
  if (json_output) {
    std::cout << result.dump(2) << '\n';
  } else {
    print_table(result, std::cout);
  }
}

}  // namespace

void register_analyze_command(CLI::App& app) {
  auto* analyze = app.add_subcommand(
      "analyze", "compute offline statistics on CSV series t_ns,latency_ns[,type]");
  analyze->require_subcommand(1);

  {
    auto opts = std::make_shared<AnalyzeTestsOptions>();
    auto json_output = std::make_shared<bool>(false);
    auto* cmd = analyze->add_subcommand(
        "tests",
        "Anderson-Darling (exponential) on inter-arrival gaps; ADF and Spearman on latency");
    cmd->add_option("FILE", opts->file, "CSV file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--lag", opts->spearman_lag, "Spearman autocorrelation lag")
        ->default_val(1)
        ->check(CLI::Range(1, std::numeric_limits<int>::max()));
    cmd->add_flag("--json", *json_output, "print JSON");
    cmd->callback(
        [opts, json_output] { emit(analyze_tests(*opts), *json_output, print_tests_table); });
  }
  {
    auto opts = std::make_shared<AnalyzePercentilesOptions>();
    auto json_output = std::make_shared<bool>(false);
    auto type = std::make_shared<std::string>();
    auto* cmd = analyze->add_subcommand("percentiles", "percentiles with order-statistic CIs");
    cmd->add_option("FILE", opts->file, "CSV file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--p", opts->percentiles, "percentiles in percent, comma-separated")
        ->delimiter(',')
        ->default_str("50,90,99,99.9");
    cmd->add_option("--confidence", opts->confidence, "confidence level of the intervals")
        ->default_val(0.95);
    cmd->add_option("--type", *type, "only records of this transaction type");
    cmd->add_flag("--json", *json_output, "print JSON");
    cmd->callback([opts, json_output, type] {
      if (!type->empty()) opts->type = *type;
      emit(analyze_percentiles(*opts), *json_output, print_percentiles_table);
    });
  }
  {
    auto opts = std::make_shared<AnalyzeGradientOptions>();
    auto json_output = std::make_shared<bool>(false);
    auto text = std::make_shared<std::array<std::string, 3>>();  // bin width, period, delay
    auto baseline = std::make_shared<std::string>();
    auto* cmd = analyze->add_subcommand(
        "gradient", "link gradient per type from a series measured under a square-wave delay");
    cmd->add_option("FILE", opts->file, "CSV file measured under injection")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--bin-width", (*text)[0], "bin width, e.g. 50ms")->required();
    cmd->add_option("--bins", opts->bins, "number of bins N (a power of two)")->required();
    cmd->add_option("--period", (*text)[1], "square-wave period, e.g. 1.6s")->required();
    cmd->add_option("--delay", (*text)[2], "mean delay actually injected while high, e.g. 2ms")
        ->required();
    cmd->add_option("--baseline", *baseline, "CSV of the same service without injection")
        ->check(CLI::ExistingFile);
    cmd->add_option("--confidence", opts->confidence, "confidence level")->default_val(0.95);
    cmd->add_flag("--json", *json_output, "print JSON");
    cmd->callback([opts, json_output, text, baseline] {
      opts->bin_width_ns = duration_flag("--bin-width", (*text)[0]);
      opts->period_ns = duration_flag("--period", (*text)[1]);
      opts->delay_ns = duration_flag("--delay", (*text)[2]);
      if (!baseline->empty()) opts->baseline_file = *baseline;
      emit(analyze_gradient(*opts), *json_output, print_gradient_table);
    });
  }
  {
    auto opts = std::make_shared<AnalyzeSpectrumOptions>();
    auto json_output = std::make_shared<bool>(false);
    auto width = std::make_shared<std::string>();
    auto* cmd =
        analyze->add_subcommand("spectrum", "per-type magnitude spectrum of the binned series");
    cmd->add_option("FILE", opts->file, "CSV file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--bin-width", *width, "bin width, e.g. 50ms")->required();
    cmd->add_option("--bins", opts->bins, "number of bins N")->required();
    cmd->add_flag("--json", *json_output, "print JSON");
    cmd->callback([opts, json_output, width] {
      opts->bin_width_ns = duration_flag("--bin-width", *width);
      emit(analyze_spectrum(*opts), *json_output, print_spectrum_table);
    });
  }
}

}  // namespace nabla::coordinator
