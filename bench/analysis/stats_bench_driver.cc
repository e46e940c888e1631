// nabla_stats_bench: the two helpers bench/analysis/stats_vs_scipy.sh needs
// besides the `nabla` CLI.
//
//   nabla_stats_bench generate ROWS SEED UTILIZATION OUT.csv
//       A deterministic `t_ns,latency_ns` series: Poisson arrivals at
//       100k requests/s (exponential gaps, at least 1 ns) into a FIFO
//       single-server queue with exponential service (M/M/1 at UTILIZATION,
//       Lindley's recursion) plus a fixed 50 us network path. Seeded
//       std::mt19937_64; uniforms built from its raw bits, so the file is the
//       same on every platform.
//
//   nabla_stats_bench tests FILE.csv
//       Parses the CSV and runs the three tests exactly as `nabla analyze
//       tests` does (Anderson-Darling on the gaps of t_ns, ADF and Spearman
//       lag 1 on latency_ns), printing the statistics plus compute-only
//       seconds for each step as JSON.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/analysis/hypothesis.hh"

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRateRps = 100'000.0;
constexpr double kNetworkNs = 50'000.0;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Uniform in (0, 1] from the top 53 bits: never 0, so log() is finite.
double uniform_open0(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * 0x1p-53;
}

int generate(std::int64_t rows, std::uint64_t seed, double utilization, const std::string& out) {
  if (rows < 2 || !(utilization > 0.0 && utilization < 1.0)) {
    throw std::invalid_argument("generate: rows must be >= 2 and utilization in (0, 1)");
  }
  std::mt19937_64 rng(seed);
  const double mean_gap_ns = 1e9 / kRateRps;
  const double mean_service_ns = utilization * mean_gap_ns;
  std::FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("generate: cannot open " + out);
  std::fputs("t_ns,latency_ns\n", f);
  std::int64_t t_ns = 1'000'000'000;
  double wait_ns = 0.0;  // time the current request waits before service
  double prev_service_ns = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto gap_ns =
        std::max<std::int64_t>(1, std::llround(-mean_gap_ns * std::log(uniform_open0(rng))));
    if (i > 0) {
      t_ns += gap_ns;
      wait_ns = std::max(0.0, wait_ns + prev_service_ns - static_cast<double>(gap_ns));
    }
    const double service_ns = -mean_service_ns * std::log(uniform_open0(rng));
    prev_service_ns = service_ns;
    const auto latency_ns = std::llround(kNetworkNs + wait_ns + service_ns);
    std::fprintf(f, "%lld,%lld\n", static_cast<long long>(t_ns),
                 static_cast<long long>(latency_ns));
  }
  if (std::fclose(f) != 0) throw std::runtime_error("generate: write failed for " + out);
  return 0;
}

// Minimal strict parser for the two-column files `generate` writes.
void parse_csv(const std::string& path, std::vector<double>& t_ns, std::vector<double>& lat_ns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("tests: cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const char* p = text.data();
  const char* end = p + text.size();
  p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
  if (p == nullptr) throw std::runtime_error("tests: no header line in " + path);
  ++p;
  std::int64_t line = 2;
  while (p < end) {
    double a = 0.0;
    double b = 0.0;
    auto r = std::from_chars(p, end, a);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != ',') {
      throw std::runtime_error("tests: bad t_ns on line " + std::to_string(line));
    }
    r = std::from_chars(r.ptr + 1, end, b);
    if (r.ec != std::errc()) {
      throw std::runtime_error("tests: bad latency_ns on line " + std::to_string(line));
    }
    p = r.ptr;
    if (p < end && *p == '\r') ++p;
    if (p < end && *p == '\n') ++p;
    t_ns.push_back(a);
    lat_ns.push_back(b);
    ++line;
  }
}

int run_tests(const std::string& path) {
  using namespace nabla::analysis;
  auto start = Clock::now();
  std::vector<double> t_ns;
  std::vector<double> lat_ns;
  parse_csv(path, t_ns, lat_ns);
  const double parse_s = seconds_since(start);

  start = Clock::now();
  std::vector<double> gaps(t_ns.size() - 1);
  for (std::size_t i = 0; i + 1 < t_ns.size(); ++i) gaps[i] = t_ns[i + 1] - t_ns[i];
  const AndersonDarlingResult ad = anderson_darling_exponential(gaps);
  const double ad_s = seconds_since(start);

  start = Clock::now();
  const AdfResult adf = adf_test(lat_ns);
  const double adf_s = seconds_since(start);

  start = Clock::now();
  const SpearmanResult sp = spearman_autocorrelation(lat_ns, 1);
  const double sp_s = seconds_since(start);

  std::printf("{\"rows\": %zu,\n", lat_ns.size());
  std::printf(" \"anderson_darling\": {\"statistic\": %.17g, \"critical_values\": [", ad.statistic);
  for (std::size_t i = 0; i < ad.critical_values.size(); ++i) {
    std::printf("%s%.17g", i == 0 ? "" : ", ", ad.critical_values[i]);
  }
  std::printf("]},\n");
  std::printf(
      " \"adf\": {\"statistic\": %.17g, \"p_value\": %.17g, \"used_lag\": %d, "
      "\"nobs\": %lld, \"icbest\": %.17g},\n",
      adf.statistic, adf.p_value, adf.used_lag, static_cast<long long>(adf.nobs), adf.icbest);
  std::printf(" \"spearman\": {\"rho\": %.17g, \"p_value\": %.17g},\n", sp.rho, sp.p_value);
  std::printf(
      " \"seconds\": {\"parse\": %.6f, \"anderson_darling\": %.6f, \"adf\": %.6f, "
      "\"spearman\": %.6f, \"compute\": %.6f}}\n",
      parse_s, ad_s, adf_s, sp_s, ad_s + adf_s + sp_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 5 && args[0] == "generate") {
      return generate(std::stoll(args[1]), std::stoull(args[2]), std::stod(args[3]), args[4]);
    }
    if (args.size() == 2 && args[0] == "tests") return run_tests(args[1]);
    std::fprintf(stderr,
                 "usage: nabla_stats_bench generate ROWS SEED UTILIZATION OUT.csv\n"
                 "       nabla_stats_bench tests FILE.csv\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nabla_stats_bench: %s\n", e.what());
    return 1;
  }
}
