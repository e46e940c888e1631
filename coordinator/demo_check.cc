// The demo's acceptance column (demo.hh): each measured gradient beside the
// truth, read back through the typed reads.
#include "nabla/common/json_null.hh"
#include "nabla/coordinator/demo.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

using common::or_null;
using nlohmann::json;

std::string fmt(std::optional<double> v, int digits = 3) {
  return v ? format_number(*v, digits) : "-";
}

}  // namespace

void print_gradient_checks(const std::vector<GradientCheck>& checks, std::ostream& out) {
  TextTable table({"link", "type", "truth", "measured", "CI low", "CI high", "thruput", "verdict"});
  for (const auto& c : checks) {
    table.add_row(
        {c.link, c.type, fmt(c.truth), fmt(c.value), fmt(c.ci_low), fmt(c.ci_high),
         c.link_throughput_change ? format_number(*c.link_throughput_change * 100, 2) + "%" : "-",
         c.pass ? "PASS" : "FAIL: " + c.why});
  }
  table.print(out);
}

json gradient_checks_json(const std::vector<GradientCheck>& checks) {
  json arr = json::array();
  for (const auto& c : checks) {
    arr.push_back({{"link", c.link},
                   {"type", c.type},
                   {"truth", or_null(c.truth)},
                   {"gradient", or_null(c.value)},
                   {"ci_low", or_null(c.ci_low)},
                   {"ci_high", or_null(c.ci_high)},
                   {"throughput_change", or_null(c.throughput_change)},
                   {"link_throughput_change", or_null(c.link_throughput_change)},
                   {"link_throughput_se", c.link_throughput_se},
                   {"pass", c.pass},
                   {"why", c.why}});
  }
  return arr;
}

}  // namespace nabla::coordinator
