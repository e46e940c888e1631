#pragma once
// Recorded counter samples (`nabla memlat --record FILE`) and their replay
// (`--replay FILE`): the counters and the constants are stored, so a replay
// recomputes every interval's estimate exactly, on any machine.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nabla/memlat/estimator.hh"

namespace nabla::memlat {

struct Recording {
  std::string microarch;
  std::string target;         // what was sampled: "system", "pid 1234", "cgroup PATH"
  std::string imc_microarch;  // the iMC table used; "" without iMC counters
  EstimatorConstants constants;
  std::vector<CounterSample> samples;
};

// The report of a recording: the inputs, each interval's estimate (null
// where there is none) and their mean; where any interval has iMC counts,
// each such interval's `imc` counts and controller-side latency, and
// `imc_microarch` and `mean_imc_latency_ns`. It is also the
// file's format; `target`, `cas_ns`, `imc` and `imc_microarch` are optional
// on reading, so older recordings replay unchanged.
nlohmann::json report_json(const Recording& r);

// Parses a recording (a report_json document; estimates in it are ignored
// and recomputed). Throws std::invalid_argument naming what is wrong.
Recording parse_recording(const nlohmann::json& doc);
Recording load_recording(const std::string& path);
void save_recording(const Recording& r, const std::string& path);

}  // namespace nabla::memlat
