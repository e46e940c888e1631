#pragma once
// The operating-point shift of a campaign (docs/method.md, "Operating-point
// shift"): per transaction type, how far the measurement moved the mean
// response time away from the service's own, the training's. Each gradient
// row carries its phase's shift (`perturbation_ns`: the mean response in the
// phase minus the training mean); this folds them per type into the largest
// shift, the link whose phase caused it, and the mean over the phases.
//
// The folding is pure; the rows come from a finished campaign or from the
// database.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nabla::db {
class Database;
}

namespace nabla::campaign {

// One gradient's phase: the link measured, the type, and the type's mean
// response in that phase minus its training mean.
struct PhaseShift {
  std::string link;
  std::string type;
  double shift_ns = 0;
};

struct OperatingPointShift {
  std::string type;
  std::optional<double> training_mean_ns;  // none when not known
  double largest_ns = 0;                   // the largest |shift| of one phase, signed
  std::string largest_link;                // whose phase it was
  double mean_ns = 0;                      // over the type's phases
  std::size_t phases = 0;
  // largest_ns / training mean, when the training mean is known and > 0.
  std::optional<double> relative() const;
};

// One entry per type in the order the types first appear in `rows`; the
// training means are looked up by type name (missing: none).
std::vector<OperatingPointShift> operating_point_shifts(
    const std::vector<PhaseShift>& rows, const std::vector<std::string>& types,
    const std::vector<double>& training_mean_ns);

// "/view +1.20 ms (+85% of 1.41 ms) in app -> db:8082's phase, mean +0.41 ms".
std::string describe_shift(const OperatingPointShift& s);

// The same for a stored run: its gradient rows' perturbations and the mean
// response of its training phase's samples per type. Empty without rows.
std::vector<OperatingPointShift> stored_operating_point_shifts(db::Database& db,
                                                               std::int64_t run_id);

}  // namespace nabla::campaign
