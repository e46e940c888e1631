#pragma once
// Typed access to the tables of a campaign file with their key paths, so
// every error names the full key ("gradient.bins: ...", "unknown key
// experiment[0].slo.p98"); private to campaign/ (spec.cc, experiment_spec.cc).
#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/units.hh"

namespace nabla::campaign {

[[noreturn]] inline void fail(const std::string& key, const std::string& what) {
  throw std::invalid_argument(key + ": " + what);
}

inline std::string join_key(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

inline std::string describe(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string()) {
    s << '"' << n.as_string()->get() << '"';
  } else if (n.is_table() || n.is_array()) {
    s << (n.is_table() ? "a table" : "an array");
  } else {
    n.visit([&](const auto& v) { s << v; });
  }
  return s.str();
}

// Typed access to one TOML table with its key path for messages.
class Section {
 public:
  Section(const toml::table* table, std::string path) : table_(table), path_(std::move(path)) {}

  bool present() const { return table_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string key(std::string_view k) const { return join_key(path_, k); }

  void allow_only(std::initializer_list<std::string_view> keys) const {
    if (table_ == nullptr) return;
    for (const auto& [k, v] : *table_) {
      bool known = false;
      for (std::string_view a : keys) known = known || a == k.str();
      if (!known) throw std::invalid_argument("unknown key " + key(k.str()));
    }
  }

  const toml::node* get(std::string_view k) const {
    return table_ == nullptr ? nullptr : table_->get(k);
  }

  std::optional<std::string> string(std::string_view k) const {
    const toml::node* n = get(k);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) fail(key(k), "must be a string, got " + describe(*n));
    return n->as_string()->get();
  }

  std::optional<std::int64_t> integer(std::string_view k, std::int64_t low,
                                      std::int64_t high) const {
    const toml::node* n = get(k);
    if (n == nullptr) return std::nullopt;
    if (!n->is_integer()) fail(key(k), "must be an integer, got " + describe(*n));
    const std::int64_t v = n->as_integer()->get();
    if (v < low || v > high) {
      fail(key(k), "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
                       std::to_string(v));
    }
    return v;
  }

  std::optional<double> number(std::string_view k) const {
    const toml::node* n = get(k);
    if (n == nullptr) return std::nullopt;
    if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
    if (!n->is_floating_point()) fail(key(k), "must be a number, got " + describe(*n));
    return n->as_floating_point()->get();
  }

  std::optional<bool> boolean(std::string_view k) const {
    const toml::node* n = get(k);
    if (n == nullptr) return std::nullopt;
    if (!n->is_boolean()) fail(key(k), "must be true or false, got " + describe(*n));
    return n->as_boolean()->get();
  }

  std::optional<std::int64_t> duration(std::string_view k) const {
    const auto text = string(k);
    if (!text) return std::nullopt;
    try {
      return common::parse_duration_ns(*text);
    } catch (const std::invalid_argument& e) {
      fail(key(k), e.what());
    }
  }

  std::vector<std::string> strings(std::string_view k) const {
    std::vector<std::string> out;
    const toml::node* n = get(k);
    if (n == nullptr) return out;
    if (!n->is_array()) fail(key(k), "must be an array of strings, got " + describe(*n));
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_string()) fail(key(k), "must be an array of strings, got " + describe(e));
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  Section table(std::string_view k) const {
    const toml::node* n = get(k);
    if (n == nullptr) return Section(nullptr, key(k));
    if (!n->is_table()) fail(key(k), "must be a table, got " + describe(*n));
    return Section(n->as_table(), key(k));
  }

  const toml::table* raw() const { return table_; }

 private:
  const toml::table* table_;
  std::string path_;
};

}  // namespace nabla::campaign
