#pragma once
// `nabla accel`: the Accelerometer offload model (accel/model.hh) from
// flags, from a parameter file (--config), or with C and n measured by a
// stored `nabla load` run (--from-run); for a remote offload across a
// measured link (--link), also the response-time change the link's gradient
// projects. docs/accel.md has the method and docs/cli.md the flags.
#include <cstdint>
#include <optional>

#include "nabla/accel/model.hh"

namespace CLI {
class App;
}
namespace nabla::db {
class Database;
}

namespace nabla::coordinator {

// C and n from a load run: the host is busy X·S ns in each second (X the
// achieved throughput in requests/s, S the mean service time), so
//     C = X · S_ns · host_ghz        n = X · offloads_per_request
// Throws std::runtime_error when the run stored no service times or no
// throughput, naming the run.
struct MeasuredLoad {
  double throughput_rps = 0;
  double mean_service_ns = 0;
  std::int64_t service_samples = 0;
  double cycles_per_s = 0;
  double offloads_per_s = 0;
};
MeasuredLoad measured_load(db::Database& db, std::int64_t run_id, double host_ghz,
                           double offloads_per_request);

void register_accel_command(CLI::App& app);

}  // namespace nabla::coordinator
