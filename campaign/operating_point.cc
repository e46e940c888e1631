#include "nabla/campaign/operating_point.hh"

#include <cmath>

#include "nabla/common/units.hh"
#include "nabla/db/reads.hh"

namespace nabla::campaign {

std::optional<double> OperatingPointShift::relative() const {
  if (!training_mean_ns || *training_mean_ns <= 0) return std::nullopt;
  return largest_ns / *training_mean_ns;
}

namespace {

std::optional<double> training_mean_of(const std::string& type,
                                       const std::vector<std::string>& types,
                                       const std::vector<double>& training_mean_ns) {
  for (std::size_t t = 0; t < types.size() && t < training_mean_ns.size(); ++t) {
    if (types[t] == type) return training_mean_ns[t];
  }
  return std::nullopt;
}

OperatingPointShift& entry_for(std::vector<OperatingPointShift>& out, const std::string& type) {
  for (OperatingPointShift& s : out) {
    if (s.type == type) return s;
  }
  out.push_back(OperatingPointShift{});
  out.back().type = type;
  return out.back();
}

// Three significant digits in the largest unit below the value.
std::string readable_duration(double ns) {
  const double a = std::abs(ns);
  if (a >= 1e9) return common::format_number(a / 1e9, 3) + " s";
  if (a >= 1e6) return common::format_number(a / 1e6, 3) + " ms";
  if (a >= 1e3) return common::format_number(a / 1e3, 3) + " us";
  return common::format_number(a, 3) + " ns";
}

std::string signed_duration(double ns) {
  return (ns >= 0 ? "+" : "-") + readable_duration(ns);
}

}  // namespace

std::vector<OperatingPointShift> operating_point_shifts(
    const std::vector<PhaseShift>& rows, const std::vector<std::string>& types,
    const std::vector<double>& training_mean_ns) {
  std::vector<OperatingPointShift> out;
  for (const PhaseShift& r : rows) {
    if (!std::isfinite(r.shift_ns)) continue;
    OperatingPointShift& s = entry_for(out, r.type);
    if (s.phases == 0 || std::abs(r.shift_ns) > std::abs(s.largest_ns)) {
      s.largest_ns = r.shift_ns;
      s.largest_link = r.link;
    }
    s.mean_ns += (r.shift_ns - s.mean_ns) / static_cast<double>(++s.phases);
  }
  for (OperatingPointShift& s : out) {
    s.training_mean_ns = training_mean_of(s.type, types, training_mean_ns);
  }
  return out;
}

std::string describe_shift(const OperatingPointShift& s) {
  std::string text = s.type + " " + signed_duration(s.largest_ns);
  if (const auto r = s.relative()) {
    text += " (" + std::string(*r >= 0 ? "+" : "") + common::format_number(*r * 100, 3) + "% of " +
            readable_duration(*s.training_mean_ns) + ")";
  }
  text += " in " + s.largest_link + "'s phase";
  if (s.phases > 1)
    text +=
        ", mean " + signed_duration(s.mean_ns) + " over " + std::to_string(s.phases) + " phases";
  return text;
}

std::vector<OperatingPointShift> stored_operating_point_shifts(db::Database& db,
                                                               std::int64_t run_id) {
  std::vector<PhaseShift> rows;
  for (const db::GradientRow& row : db::run_gradients(db, run_id)) {
    if (row.gradient.perturbation_ns) {
      rows.push_back({row.link.label, row.type, *row.gradient.perturbation_ns});
    }
  }
  if (rows.empty()) return {};
  std::vector<std::string> types;
  std::vector<double> means;
  for (const auto& [type, latencies] :
       db::latencies_by_type(db, run_id, db::PhaseKind::kTraining)) {
    if (latencies.empty()) continue;
    double sum = 0;
    for (std::int64_t l : latencies) sum += static_cast<double>(l);
    types.push_back(type);
    means.push_back(sum / static_cast<double>(latencies.size()));
  }
  return operating_point_shifts(rows, types, means);
}

}  // namespace nabla::campaign
