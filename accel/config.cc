#include "nabla/accel/config.hh"

#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

namespace nabla::accel {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw std::invalid_argument(key + ": " + what);
}

void allow_only_keys(const toml::table& table, const std::string& path,
                     std::initializer_list<std::string_view> keys) {
  for (const auto& [k, v] : table) {
    bool known = false;
    for (std::string_view allowed : keys) known = known || allowed == k.str();
    if (!known)
      fail(path.empty() ? std::string(k.str()) : path + "." + std::string(k.str()), "unknown key");
  }
}

// A number (integer or float) at `key`; nullopt when absent.
std::optional<double> number_at(const toml::table& table, const std::string& path,
                                std::string_view key) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const std::string where = path.empty() ? std::string(key) : path + "." + std::string(key);
  std::optional<double> value = node->value<double>();
  if (!value || !std::isfinite(*value)) fail(where, "must be a number");
  return value;
}

double non_negative_at(const toml::table& table, const std::string& path, std::string_view key) {
  const double v = number_at(table, path, key).value_or(0.0);
  if (v < 0) fail(path + "." + std::string(key), "must be >= 0");
  return v;
}

std::vector<GranularityBin> parse_granularity(const toml::table& kernel, const std::string& path) {
  std::vector<GranularityBin> bins;
  const toml::array* rows = kernel["granularity"].as_array();
  if (rows == nullptr) return bins;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const std::string where = path + ".granularity[" + std::to_string(i) + "]";
    const toml::table* row = rows->get(i)->as_table();
    if (row == nullptr) fail(where, "must be a table { bytes = G, per_s = N }");
    allow_only_keys(*row, where, {"bytes", "per_s"});
    GranularityBin bin{number_at(*row, where, "bytes").value_or(0),
                       number_at(*row, where, "per_s").value_or(-1)};
    if (!(bin.bytes > 0)) fail(where + ".bytes", "required, > 0");
    if (bin.per_s < 0) fail(where + ".per_s", "required, >= 0");
    bins.push_back(bin);
  }
  return bins;
}

StrategyOption parse_strategy_option(const toml::table& t, const std::string& path) {
  allow_only_keys(t, path, {"strategy", "accel_factor", "o0", "L", "Q", "o1"});
  StrategyOption option;
  const std::optional<std::string> name = t["strategy"].value<std::string>();
  if (!name) fail(path + ".strategy", "required: on-chip, off-chip or remote");
  option.strategy = parse_strategy(*name, path + ".strategy");
  option.accel_factor = number_at(t, path, "accel_factor");
  if (option.accel_factor && !(*option.accel_factor > 0))
    fail(path + ".accel_factor", "must be > 0");
  option.setup_cycles = non_negative_at(t, path, "o0");
  option.transfer_cycles = non_negative_at(t, path, "L");
  option.queue_cycles = non_negative_at(t, path, "Q");
  option.switch_cycles = non_negative_at(t, path, "o1");
  return option;
}

KernelSpec parse_kernel(const toml::table& t, const std::string& path) {
  allow_only_keys(
      t, path,
      {"name", "alpha", "cycles_per_byte", "beta", "granularity", "offloads_per_s", "strategy"});
  KernelSpec k;
  k.name = t["name"].value<std::string>().value_or("");
  if (k.name.empty()) fail(path + ".name", "required, a non-empty string");
  k.alpha = number_at(t, path, "alpha").value_or(-1);
  if (k.alpha < 0 || k.alpha > 1) fail(path + ".alpha", "required, in [0, 1]");
  k.cost.cycles_per_byte = non_negative_at(t, path, "cycles_per_byte");
  k.cost.beta = number_at(t, path, "beta").value_or(1.0);
  if (!(k.cost.beta > 0)) fail(path + ".beta", "must be > 0");
  k.granularity = parse_granularity(t, path);
  k.offloads_per_s = non_negative_at(t, path, "offloads_per_s");
  if (!k.granularity.empty() && !(k.cost.cycles_per_byte > 0)) {
    fail(path + ".cycles_per_byte", "required (> 0) with a granularity histogram");
  }
  const toml::array* options = t["strategy"].as_array();
  if (options == nullptr || options->empty()) fail(path + ".strategy", "at least one required");
  for (std::size_t i = 0; i < options->size(); ++i) {
    const std::string where = path + ".strategy[" + std::to_string(i) + "]";
    const toml::table* option = options->get(i)->as_table();
    if (option == nullptr) fail(where, "must be a table");
    k.strategies.push_back(parse_strategy_option(*option, where));
  }
  return k;
}

// The offloads that pass the speedup test and the share of the kernel's
// host cycles they carry.
struct PayingShare {
  double per_s = 0;
  double cycle_share = 0;
};

PayingShare paying_share(const KernelSpec& kernel, const Params& p, Design design,
                         Strategy strategy) {
  if (kernel.granularity.empty()) return {kernel.offloads_per_s, 1.0};
  PayingShare share;
  double all_cycles = 0, paying_cycles = 0;
  for (const GranularityBin& bin : kernel.granularity) {
    const double cycles = bin.per_s * host_cycles(kernel.cost, bin.bytes);
    all_cycles += cycles;
    if (!offload_pays_speedup(p, kernel.cost, bin.bytes, design, strategy)) continue;
    paying_cycles += cycles;
    share.per_s += bin.per_s;
  }
  share.cycle_share = all_cycles > 0 ? paying_cycles / all_cycles : 0;
  return share;
}

}  // namespace

ServiceSpec parse_service_spec(const std::string& toml_text) {
  toml::table root;
  try {
    root = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "--config: " << e.description() << " at line " << e.source().begin.line;
    throw std::invalid_argument(msg.str());
  }
  allow_only_keys(root, "", {"cycles", "designs", "kernel"});
  ServiceSpec spec;
  spec.cycles_per_s = number_at(root, "", "cycles").value_or(0);
  if (!(spec.cycles_per_s > 0)) fail("cycles", "required, host cycles per second > 0");
  if (const toml::array* designs = root["designs"].as_array()) {
    for (std::size_t i = 0; i < designs->size(); ++i) {
      const std::optional<std::string> name = designs->get(i)->value<std::string>();
      spec.designs.push_back(parse_design(name.value_or(""), "designs[" + std::to_string(i) + "]"));
    }
  } else {
    spec.designs.assign(std::begin(kAllDesigns), std::end(kAllDesigns));
  }
  const toml::array* kernels = root["kernel"].as_array();
  if (kernels == nullptr || kernels->empty()) fail("kernel", "at least one [[kernel]] required");
  for (std::size_t i = 0; i < kernels->size(); ++i) {
    const std::string where = "kernel[" + std::to_string(i) + "]";
    const toml::table* kernel = kernels->get(i)->as_table();
    if (kernel == nullptr) fail(where, "must be a table");
    spec.kernels.push_back(parse_kernel(*kernel, where));
  }
  return spec;
}

ServiceSpec load_service_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--config: cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_service_spec(text.str());
}

Params params_for(const ServiceSpec& spec, const StrategyOption& option, double alpha,
                  double offloads_per_s) {
  Params p;
  p.cycles_per_s = spec.cycles_per_s;
  p.alpha = alpha;
  p.accel_factor = option.accel_factor;
  p.offloads_per_s = offloads_per_s;
  p.setup_cycles = option.setup_cycles;
  p.transfer_cycles = option.transfer_cycles;
  p.queue_cycles = option.queue_cycles;
  p.switch_cycles = option.switch_cycles;
  return p;
}

std::vector<DesignRow> evaluate(const ServiceSpec& spec) {
  std::vector<DesignRow> rows;
  for (const KernelSpec& kernel : spec.kernels) {
    for (const StrategyOption& option : kernel.strategies) {
      for (Design design : spec.designs) {
        // Sync needs A; a strategy without one has no sync row.
        if (design == Design::kSync && !option.accel_factor) continue;
        const Params all = params_for(spec, option, kernel.alpha, kernel.offloads_per_s);
        const PayingShare share = paying_share(kernel, all, design, option.strategy);
        DesignRow row{
            kernel.name,  option.strategy, design, share.per_s, kernel.alpha * share.cycle_share,
            std::nullopt, std::nullopt,    {}};
        const Params paying = params_for(spec, option, row.alpha, row.offloads_per_s);
        if (kernel.cost.cycles_per_byte > 0) {
          row.min_bytes_speedup =
              min_paying_bytes_speedup(paying, kernel.cost, design, option.strategy);
          row.min_bytes_latency = min_paying_bytes_latency(paying, kernel.cost, design);
          row.cost = kernel.cost;
        }
        row.estimate = estimate(paying, design, option.strategy);
        row.params = paying;
        rows.push_back(row);
      }
    }
  }
  return rows;
}

}  // namespace nabla::accel
