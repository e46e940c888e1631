#include "nabla/coordinator/analyze.hh"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <stdexcept>

#include "nabla/analysis/adf.hh"
#include "nabla/analysis/anderson_darling.hh"
#include "nabla/analysis/binning.hh"
#include "nabla/analysis/fft.hh"
#include "nabla/analysis/gradient.hh"
#include "nabla/analysis/percentile.hh"
#include "nabla/analysis/spearman.hh"
#include "nabla/common/json_null.hh"
#include "nabla/coordinator/csv_series.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

using common::or_null;

std::vector<analysis::LatencyRecord> to_records(const CsvSeries& s) {
  std::vector<analysis::LatencyRecord> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = {s.t_ns[i], s.latency_ns[i], s.type[i]};
  return out;
}

std::int64_t first_time(const CsvSeries& s) {
  return *std::min_element(s.t_ns.begin(), s.t_ns.end());
}

void require_positive(std::int64_t v, const char* flag) {
  if (v <= 0) throw std::invalid_argument(std::string(flag) + " must be greater than 0");
}

std::string verdict_word(bool ok, const char* yes, const char* no) {
  return ok ? yes : no;
}

}  // namespace

json analyze_tests(const AnalyzeTestsOptions& options) {
  const CsvSeries s = read_csv_series(options.file);
  if (options.spearman_lag < 1) throw std::invalid_argument("--lag must be at least 1");

  // Inter-arrival gaps of the send times, in time order.
  std::vector<std::int64_t> t = s.t_ns;
  std::sort(t.begin(), t.end());
  std::vector<double> gaps;
  gaps.reserve(t.size());
  for (std::size_t i = 1; i < t.size(); ++i) gaps.push_back(static_cast<double>(t[i] - t[i - 1]));
  std::vector<double> latency(s.latency_ns.begin(), s.latency_ns.end());

  json out;
  out["file"] = options.file;
  out["samples"] = s.size();

  const auto ad = analysis::anderson_darling_exponential(gaps);
  out["anderson_darling"] = {
      {"on", "inter-arrival gaps of t_ns"},
      {"n", gaps.size()},
      {"statistic", or_null(ad.statistic)},
      {"critical_values", ad.critical_values},
      {"significance_levels", ad.significance_levels},
      {"exponential_at_5pct", !ad.rejects_at(5.0)},
  };

  const auto adf = analysis::adf_test(latency);
  out["adf"] = {
      {"on", "latency_ns"},
      {"statistic", adf.statistic},
      {"p_value", adf.p_value},
      {"used_lag", adf.used_lag},
      {"max_lag", adf.max_lag},
      {"nobs", adf.nobs},
      {"critical_values",
       {{"1%", adf.critical_values[0]},
        {"5%", adf.critical_values[1]},
        {"10%", adf.critical_values[2]}}},
      {"icbest", adf.icbest},
      {"stationary_at_5pct", adf.stationary_at(0.05)},
  };

  const auto sp =
      analysis::spearman_autocorrelation(latency, static_cast<std::size_t>(options.spearman_lag));
  out["spearman"] = {
      {"on", "latency_ns"},
      {"lag", options.spearman_lag},
      {"n", sp.n},
      {"rho", or_null(sp.rho)},
      {"p_value", or_null(sp.p_value)},
      {"independent_at_5pct", !(sp.p_value < 0.05)},
  };
  return out;
}

void print_tests_table(const json& r, std::ostream& out) {
  out << r["file"].get<std::string>() << ": " << r["samples"].get<std::size_t>() << " samples\n\n";
  TextTable table({"test", "on", "statistic", "reference", "verdict (5%)"});
  const auto& ad = r["anderson_darling"];
  table.add_row(
      {"anderson-darling (expon)", "inter-arrival gaps",
       format_number(ad["statistic"].is_null() ? NAN : ad["statistic"].get<double>()),
       "crit 5% = " + format_number(ad["critical_values"][2].get<double>()),
       verdict_word(ad["exponential_at_5pct"].get<bool>(), "exponential", "NOT exponential")});
  const auto& adf = r["adf"];
  table.add_row(
      {"adf (c, lag " + std::to_string(adf["used_lag"].get<int>()) + ")", "latency",
       format_number(adf["statistic"].get<double>()),
       "p = " + format_number(adf["p_value"].get<double>(), 3),
       verdict_word(adf["stationary_at_5pct"].get<bool>(), "stationary", "NOT stationary")});
  const auto& sp = r["spearman"];
  table.add_row(
      {"spearman lag " + std::to_string(sp["lag"].get<int>()), "latency",
       "rho = " + format_number(sp["rho"].is_null() ? NAN : sp["rho"].get<double>(), 3),
       "p = " + format_number(sp["p_value"].is_null() ? NAN : sp["p_value"].get<double>(), 3),
       verdict_word(sp["independent_at_5pct"].get<bool>(), "independent", "autocorrelated")});
  table.print(out);
}

json analyze_percentiles(const AnalyzePercentilesOptions& options) {
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    throw std::invalid_argument("--confidence must be in (0, 1), e.g. 0.95");
  }
  std::vector<double> fractions;
  for (double p : options.percentiles) {
    if (!(p > 0.0 && p <= 100.0)) {
      throw std::invalid_argument("--p values are percentiles in (0, 100], got " +
                                  format_number(p));
    }
    fractions.push_back(p / 100.0);
  }
  const CsvSeries s = read_csv_series(options.file);
  std::vector<double> latency;
  latency.reserve(s.size());
  std::optional<std::int32_t> type_id;
  if (options.type) {
    const auto it = std::find(s.type_names.begin(), s.type_names.end(), *options.type);
    if (it == s.type_names.end()) {
      throw std::invalid_argument("--type '" + *options.type + "' does not occur in " +
                                  options.file);
    }
    type_id = static_cast<std::int32_t>(it - s.type_names.begin());
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!type_id || s.type[i] == *type_id) latency.push_back(static_cast<double>(s.latency_ns[i]));
  }
  const auto estimates = analysis::percentiles(latency, fractions, options.confidence);
  json rows = json::array();
  for (std::size_t i = 0; i < estimates.size(); ++i) {
    const auto& e = estimates[i];
    rows.push_back({{"p", options.percentiles[i]},
                    {"value_ns", e.value},
                    {"ci_low_ns", e.ci ? json(e.ci->low) : json(nullptr)},
                    {"ci_high_ns", e.ci ? json(e.ci->high) : json(nullptr)}});
  }
  json out = {{"file", options.file},
              {"samples", latency.size()},
              {"confidence", options.confidence},
              {"percentiles", rows}};
  if (options.type) out["type"] = *options.type;
  return out;
}

void print_percentiles_table(const json& r, std::ostream& out) {
  out << r["file"].get<std::string>() << ": " << r["samples"].get<std::size_t>() << " samples, "
      << format_number(r["confidence"].get<double>() * 100) << "% confidence intervals\n\n";
  TextTable table({"percentile", "value_ns", "ci_low_ns", "ci_high_ns"});
  for (const auto& row : r["percentiles"]) {
    const auto cell = [&](const char* k) {
      return row[k].is_null() ? std::string("no CI (too few samples)")
                              : format_number(row[k].get<double>(), 10);
    };
    table.add_row({"p" + format_number(row["p"].get<double>()), cell("value_ns"), cell("ci_low_ns"),
                   row["ci_high_ns"].is_null() ? "" : cell("ci_high_ns")});
  }
  table.print(out);
}

json analyze_gradient(const AnalyzeGradientOptions& options) {
  require_positive(options.bin_width_ns, "--bin-width");
  require_positive(options.period_ns, "--period");
  require_positive(options.delay_ns, "--delay");
  if (options.bins == 0) throw std::invalid_argument("--bins must be greater than 0");
  const CsvSeries s = read_csv_series(options.file);
  const auto records = to_records(s);

  // Type ids are per file (order of first appearance): give the baseline's
  // records the ids of the same names in the measured file.
  std::optional<std::vector<analysis::LatencyRecord>> base_records;
  if (options.baseline_file) {
    const CsvSeries base = read_csv_series(*options.baseline_file);
    base_records = to_records(base);
    std::vector<std::int32_t> remap(base.type_names.size());
    for (std::size_t i = 0; i < base.type_names.size(); ++i) {
      const auto it = std::find(s.type_names.begin(), s.type_names.end(), base.type_names[i]);
      remap[i] = it == s.type_names.end()
                     ? static_cast<std::int32_t>(s.type_names.size() + i)  // matches nothing
                     : static_cast<std::int32_t>(it - s.type_names.begin());
    }
    for (auto& r : *base_records) r.type = remap[static_cast<std::size_t>(r.type)];
  }

  analysis::GradientOptions gradient_options;
  gradient_options.confidence = options.confidence;
  const auto typed = analysis::gradients_by_type(
      records,
      base_records ? std::optional<std::span<const analysis::LatencyRecord>>(*base_records)
                   : std::nullopt,
      options.bin_width_ns, options.bins, options.period_ns, static_cast<double>(options.delay_ns),
      gradient_options);

  json results = json::array();
  json warnings = json::array();
  for (const auto& t : typed) {
    const std::string& name = s.type_names[static_cast<std::size_t>(t.type)];
    const auto& g = t.estimate;
    if (!t.reliable) {
      warnings.push_back("type '" + name + "': " + std::to_string(t.filled_bins) + " of " +
                         std::to_string(options.bins) +
                         " bins were empty and interpolated; the gradient is likely underestimated "
                         "(use wider bins or a longer series)");
    }
    if (options.baseline_file && !t.has_baseline) {
      warnings.push_back("type '" + name + "' has no records in the baseline " +
                         *options.baseline_file + "; its FFT0 is taken as 0");
    }
    results.push_back({{"type", name},
                       {"gradient", g.value},
                       {"ci_low", g.ci_low},
                       {"ci_high", g.ci_high},
                       {"standard_error", g.standard_error},
                       {"eq5_value", g.eq5_value},
                       {"time_domain_gradient", or_null(g.time_domain_value)},
                       {"detected", g.detected},
                       {"snr", g.snr},
                       {"k_d", g.k_d},
                       {"bins", g.bins},
                       {"records", t.records},
                       {"empty_bins", t.filled_bins},
                       {"reliable", t.reliable}});
  }
  return {{"file", options.file},
          {"bin_width_ns", options.bin_width_ns},
          {"period_ns", options.period_ns},
          {"delay_ns", options.delay_ns},
          {"confidence", options.confidence},
          {"baseline", options.baseline_file ? json(*options.baseline_file) : json(nullptr)},
          {"results", results},
          {"warnings", warnings}};
}

void print_gradient_table(const json& r, std::ostream& out) {
  out << r["file"].get<std::string>()
      << ": k_d = " << (r["results"].empty() ? 0 : r["results"][0]["k_d"].get<int>()) << ", "
      << format_number(r["confidence"].get<double>() * 100) << "% confidence intervals\n\n";
  TextTable table({"type", "gradient", "ci_low", "ci_high", "time-domain", "snr", "records"});
  for (const auto& row : r["results"]) {
    table.add_row({row["type"].get<std::string>(), format_number(row["gradient"].get<double>()),
                   format_number(row["ci_low"].get<double>()),
                   format_number(row["ci_high"].get<double>()),
                   row["time_domain_gradient"].is_null()
                       ? "-"
                       : format_number(row["time_domain_gradient"].get<double>()),
                   format_number(row["snr"].get<double>(), 3),
                   std::to_string(row["records"].get<std::size_t>())});
  }
  table.print(out);
  for (const auto& w : r["warnings"]) out << "warning: " << w.get<std::string>() << '\n';
}

json analyze_spectrum(const AnalyzeSpectrumOptions& options) {
  require_positive(options.bin_width_ns, "--bin-width");
  if (options.bins < 2) throw std::invalid_argument("--bins must be at least 2");
  const CsvSeries s = read_csv_series(options.file);
  const auto records = to_records(s);
  const auto series =
      analysis::bin_by_type(records, first_time(s), options.bin_width_ns, options.bins);
  const double duration_s =
      static_cast<double>(options.bins) * static_cast<double>(options.bin_width_ns) * 1e-9;
  json types = json::array();
  for (const auto& ts : series) {
    const auto magnitude = analysis::magnitude_spectrum(ts.mean_latency_ns);
    json bins = json::array();
    for (std::size_t k = 0; k < magnitude.size(); ++k) {
      bins.push_back({{"k", k},
                      {"frequency_hz", static_cast<double>(k) / duration_s},
                      {"magnitude_ns", magnitude[k]}});
    }
    types.push_back({{"type", s.type_names[static_cast<std::size_t>(ts.type)]},
                     {"records", ts.records},
                     {"reliable", ts.reliable},
                     {"spectrum", bins}});
  }
  return {{"file", options.file},
          {"bin_width_ns", options.bin_width_ns},
          {"bins", options.bins},
          {"types", types}};
}

void print_spectrum_table(const json& r, std::ostream& out) {
  for (const auto& t : r["types"]) {
    out << "type " << t["type"].get<std::string>() << " (" << t["records"].get<std::size_t>()
        << " records)\n";
    TextTable table({"k", "frequency_hz", "magnitude_ns"});
    for (const auto& b : t["spectrum"]) {
      table.add_row({std::to_string(b["k"].get<std::size_t>()),
                     format_number(b["frequency_hz"].get<double>(), 5),
                     format_number(b["magnitude_ns"].get<double>(), 6)});
    }
    table.print(out);
    out << '\n';
  }
}

}  // namespace nabla::coordinator
