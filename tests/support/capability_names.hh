#pragma once
// The names of a list of required capabilities, for comparing whole lists.
#include <string>
#include <vector>

#include "nabla/common/capabilities.hh"

namespace nabla::testing {

inline std::vector<std::string> capability_names(
    const std::vector<common::RequiredCapability>& caps) {
  std::vector<std::string> out;
  for (const auto& c : caps) out.push_back(c.name);
  return out;
}

}  // namespace nabla::testing
