#pragma once
// Private to `nabla load`: the numeric flags as typed on the command line.
#include <string>

#include "nabla/coordinator/load_command.hh"

namespace nabla::coordinator {

// The numeric flags CLI11 takes as strings, so that every bad value is one
// error line naming its flag (exit 2) rather than CLI11's own message.
struct LoadNumberFlags {
  std::string connections = "1";
  std::string threads = "1";
  std::string outstanding = "1";
  std::string confidence = "0.95";
  std::string seed = "1";
  std::string rt_priority = "0";
  std::string streams_per_connection = "0";
};

// Parses them into `options`; throws std::invalid_argument naming the flag.
void apply_number_flags(const LoadNumberFlags& flags, LoadOptions& options);

}  // namespace nabla::coordinator
