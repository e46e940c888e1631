#pragma once
// A common::Resolver over a fixed name -> addresses table that counts its
// lookups, so the resolve-once policy is tested without DNS. A name not in
// the table fails with glibc's message for an unknown name.
//
// Header-only like the rest of tests/support.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nabla/common/resolve.hh"

namespace nabla::testing {

class FakeResolver {
 public:
  using Table = std::map<std::string, std::vector<std::string>>;

  explicit FakeResolver(Table table)
      : table_(std::make_shared<Table>(std::move(table))),
        lookups_(std::make_shared<std::map<std::string, int>>()) {}

  common::Resolution operator()(const std::string& name) const {
    ++(*lookups_)[name];
    common::Resolution r;
    const auto it = table_->find(name);
    if (it == table_->end()) {
      r.error = "Name or service not known";
      return r;
    }
    for (const std::string& a : it->second) {
      r.addresses.push_back(common::IpAddress::parse(a).value());
    }
    return r;
  }

  // Lookups of `name` so far (shared by every copy of this resolver).
  int lookups(const std::string& name) const {
    const auto it = lookups_->find(name);
    return it == lookups_->end() ? 0 : it->second;
  }
  // Lookups of any name so far.
  int lookups() const {
    int n = 0;
    for (const auto& [name, count] : *lookups_) n += count;
    return n;
  }

 private:
  std::shared_ptr<const Table> table_;
  std::shared_ptr<std::map<std::string, int>> lookups_;
};

}  // namespace nabla::testing
