#pragma once
// What the `nabla discover` integration tests share around a Testbed: a key
// file for the daemons, a nabla-sniffd on every host, and one `nabla discover
// --json` run whose output is parsed.
//
// For integration tests only (they link nabla_coordinator and run as root);
// header-only like the rest of tests/support. connect_in() comes from the
// integration tests' own tier_probe.hh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/common/rpc_auth.hh"
#include "nabla/testbed/testbed.hh"
#include "tier_probe.hh"

namespace nabla::testing {

// The port every test sniffer listens on (nabla-sniffd's default).
constexpr uint16_t kSniffdPort = 7312;

// A fresh key file under the test's temp dir, removed when the object dies
// (also when the test fails half-way).
class KeyFile {
 public:
  // `tag` makes the file name readable: <tmp>/<tag>-key-<pid>.hex.
  explicit KeyFile(const std::string& tag)
      : path_(::testing::TempDir() + tag + "-key-" + std::to_string(::getpid()) + ".hex") {
    common::generate_key_file(path_);
  }
  ~KeyFile() { ::unlink(path_.c_str()); }
  KeyFile(const KeyFile&) = delete;
  KeyFile& operator=(const KeyFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Starts `sniffd` on every host of `tb`, listening on the host's address and
// kSniffdPort with `key`, scanning every `interval` (e.g. "100ms"); returns
// once each accepts a control connection from `from` (a control connection
// carries no data, so it is no link).
inline void start_sniffers(testbed::Testbed& tb, const std::string& sniffd, const KeyFile& key,
                           const std::string& interval, const common::NetNamespace& from) {
  for (const auto& h : tb.hosts()) {
    tb.start(h->name, {sniffd, "--listen", h->address + ":" + std::to_string(kSniffdPort),
                       "--key-file", key.path(), "--interval", interval});
  }
  for (const auto& h : tb.hosts()) connect_in(from, h->address, kSniffdPort);
}

// Runs `nabla discover <args>` inside `ns` (stdout and stderr to a temp file
// named after `tag`, removed after) and returns its parsed JSON; a test
// failure carrying the output, and nullopt, when it does not exit 0 within
// 15 s or prints no JSON.
inline std::optional<nlohmann::json> run_discover(const std::string& nabla,
                                                  const common::NetNamespace& ns,
                                                  const std::vector<std::string>& args,
                                                  const std::string& tag) {
  const std::string out_path =
      ::testing::TempDir() + tag + "-" + std::to_string(::getpid()) + ".json";
  std::vector<std::string> argv{nabla, "discover"};
  argv.insert(argv.end(), args.begin(), args.end());
  int code = -1;
  {
    common::ChildProcess discover(argv, &ns, out_path);
    code = discover.wait(std::chrono::seconds(15));
  }
  std::stringstream text;
  text << std::ifstream(out_path).rdbuf();
  ::unlink(out_path.c_str());
  if (code != 0) {
    ADD_FAILURE() << "nabla discover exited " << code << ":\n" << text.str();
    return std::nullopt;
  }
  nlohmann::json result = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) {
    ADD_FAILURE() << "nabla discover printed no JSON:\n" << text.str();
    return std::nullopt;
  }
  return result;
}

}  // namespace nabla::testing
