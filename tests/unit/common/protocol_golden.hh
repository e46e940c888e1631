#pragma once
// Compares a message's to_json with its golden file key by key, so that a
// renamed, dropped or added wire field fails a unit test, without root.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace nabla::common::protocol::golden {

inline nlohmann::json read(const std::string& name) {
  const std::string path = std::string(NABLA_GOLDEN_DIR) + "/" + name + ".json";
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// Every difference as "PATH: what", e.g. "stats.halves.high.mean: missing".
inline void diff(const nlohmann::json& golden, const nlohmann::json& written,
                 const std::string& path, std::vector<std::string>& out) {
  const std::string here = path.empty() ? "(top)" : path;
  if (golden.is_object() && written.is_object()) {
    for (const auto& [key, value] : golden.items()) {
      const std::string child = path.empty() ? key : path + "." + key;
      if (!written.contains(key)) {
        out.push_back(child + ": in the golden file, not written");
      } else {
        diff(value, written.at(key), child, out);
      }
    }
    for (const auto& [key, value] : written.items()) {
      if (!golden.contains(key))
        out.push_back((path.empty() ? key : path + "." + key) +
                      ": written, not in the golden file");
    }
  } else if (golden.is_array() && written.is_array() && golden.size() == written.size()) {
    for (size_t i = 0; i < golden.size(); ++i) {
      diff(golden[i], written[i], path + "[" + std::to_string(i) + "]", out);
    }
  } else if (golden != written) {
    out.push_back(here + ": golden " + golden.dump() + ", written " + written.dump());
  }
}

// The message's JSON is its golden file, and reading either gives it back.
template <class Message>
void expect_matches(const Message& example, const std::string& name) {
  const nlohmann::json golden = read(name);
  const nlohmann::json written = example.to_json();
  std::vector<std::string> differences;
  diff(golden, written, "", differences);
  std::string text;
  for (const std::string& d : differences) text += "\n  " + d;
  EXPECT_TRUE(differences.empty()) << name << ".json differs:" << text;
  EXPECT_TRUE(Message::from_json(golden) == example) << name << ": golden file reads back wrong";
  EXPECT_TRUE(Message::from_json(written) == example) << name << ": round trip changed it";
}

// The error message from_json gives for `j`, or "(no error)".
template <class Message>
std::string error_of(const nlohmann::json& j) {
  try {
    Message::from_json(j);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace nabla::common::protocol::golden
