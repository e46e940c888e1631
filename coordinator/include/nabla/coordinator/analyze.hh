#pragma once
// `nabla analyze …`: offline math on CSV latency series (see csv_series.hh).
//
//   tests FILE        Anderson–Darling (exponential) on the inter-arrival gaps
//                     of t_ns, ADF and Spearman lag-1 on latency_ns
//   percentiles FILE  percentiles with order-statistic confidence intervals
//   gradient FILE     link gradient per type from a series measured under a
//                     square-wave delay of known period and mean amplitude
//   spectrum FILE     per-type magnitude spectrum of the binned series
//
// Each command computes a JSON document (the `--json` output, and the input
// of the human table), so the two outputs can never disagree.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace nabla::coordinator {

struct AnalyzeTestsOptions {
  std::string file;
  int spearman_lag = 1;
};
nlohmann::json analyze_tests(const AnalyzeTestsOptions& options);
void print_tests_table(const nlohmann::json& result, std::ostream& out);

struct AnalyzePercentilesOptions {
  std::string file;
  std::vector<double> percentiles{50, 90, 99, 99.9};  // in percent
  double confidence = 0.95;
  std::optional<std::string> type;  // only this transaction type
};
nlohmann::json analyze_percentiles(const AnalyzePercentilesOptions& options);
void print_percentiles_table(const nlohmann::json& result, std::ostream& out);

struct AnalyzeGradientOptions {
  std::string file;
  std::int64_t bin_width_ns = 0;
  std::size_t bins = 0;
  std::int64_t period_ns = 0;
  std::int64_t delay_ns = 0;  // mean injected amplitude actually added
  std::optional<std::string> baseline_file;
  double confidence = 0.95;
};
nlohmann::json analyze_gradient(const AnalyzeGradientOptions& options);
void print_gradient_table(const nlohmann::json& result, std::ostream& out);

struct AnalyzeSpectrumOptions {
  std::string file;
  std::int64_t bin_width_ns = 0;
  std::size_t bins = 0;
};
nlohmann::json analyze_spectrum(const AnalyzeSpectrumOptions& options);
void print_spectrum_table(const nlohmann::json& result, std::ostream& out);

// Adds `analyze` and its subcommands to the CLI.
void register_analyze_command(CLI::App& app);

}  // namespace nabla::coordinator
