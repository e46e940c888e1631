#pragma once
// Where the daemons and the CLI find the control key when no --key-file is
// given, so that no control port ever runs without one, loopback included
// (docs/protocol.md, "Local control").
//
// A daemon serves with, in order:
//   1. --key-file;
//   2. the system key file (/etc/nabla/key) when it exists;
//   3. on a loopback listen address only, a fresh random key that it writes
//      to its run file, RUN_DIR/<daemon>-<port>-net<netns inode>.key, and
//      removes on exit. RUN_DIR (/run/nabla) is made mode 0750 and the file
//      0640, both of group nabla when that group exists; without the group
//      the file is 0600, for root only. The network namespace is part of the
//      name because loopback addresses are per namespace.
// Any other listen address without a key is refused.
//
// Every node has its own key (docs/security.md): a node keeps it in its
// system key file, the coordinator keeps every node's in its key directory,
// /etc/nabla/keys/HOST.key, HOST being the host of the daemon's control
// address as the client connects to it (10.0.0.12, fd00::2: the CLI and
// campaigns resolve a name to its address first).
//
// A client (the nabla CLI) authenticates with, in order: --key-file,
// $NABLA_KEY_FILE (either may name a key directory instead of a file: then
// its HOST.key), the daemon's run file when the host is a loopback address
// or "localhost", the key directory's HOST.key, and the system key file. So
// root and members of group nabla get through; anyone else is refused by
// file permissions with one line naming the file, before any connection is
// made.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nabla/common/rpc.hh"
#include "nabla/common/rpc_auth.hh"

namespace nabla::common {

// The <daemon> part of run file names.
inline constexpr const char* kInjectdKeyName = "injectd";
inline constexpr const char* kSniffdKeyName = "sniffd";

// Paths and group as inputs, so the policy is testable without root.
struct KeyLocations {
  std::string system_key = "/etc/nabla/key";
  std::string key_dir = "/etc/nabla/keys";  // a coordinator's: one HOST.key per node
  std::string run_dir = "/run/nabla";
  std::string group = kKeyGroup;
  std::optional<std::string> env_key_file;  // $NABLA_KEY_FILE; clients only

  // The defaults, with env_key_file from $NABLA_KEY_FILE when set and not empty.
  static KeyLocations from_environment();
};

// Makes RUN_DIR (mode 0750, of `group` when it exists) unless it exists;
// an existing directory this process does not own is left as it is.
void prepare_run_dir(const std::string& dir, const std::string& group);

// The key file of the node `host` when `path` is a key directory
// (PATH/HOST.key), else `path` itself. Throws std::invalid_argument for a
// host that cannot be a file name (empty, "/" in it, starting with '.').
std::string node_key_path(const std::string& path, const std::string& host);

// The first key of node_key_path(path, host): for a directory, an error
// naming the node and the file it looked for when that file is missing.
Key load_node_key(const std::string& path, const std::string& host,
                  std::string_view key_group = kKeyGroup);

// RUN_DIR/<daemon>-<port>-net<inode of this thread's network namespace>.key
std::string run_key_path(const KeyLocations& at, std::string_view daemon, uint16_t port);

// The key a daemon serves with (see above). Move-only: it owns its run file.
class DaemonKey {
 public:
  // Throws std::invalid_argument for a non-loopback address without a key,
  // and what load_keys throws for a bad key file.
  static DaemonKey choose(const std::optional<std::string>& key_file, std::string_view daemon,
                          const std::string& listen_address, KeyLocations at = {});
  DaemonKey(DaemonKey&& other) noexcept;
  DaemonKey& operator=(DaemonKey&&) = delete;
  DaemonKey(const DaemonKey&) = delete;
  DaemonKey& operator=(const DaemonKey&) = delete;
  // Removes the run file if it still holds this daemon's key.
  ~DaemonKey();

  // Sets options.key_file or options.keys.
  void apply(RpcServerOptions& options) const;
  // For a fresh key: writes the run file for the port the server bound
  // (known only after binding). Nothing for a key from a file. Throws
  // std::system_error naming the path when it cannot be written.
  void publish(uint16_t port);
  // "key file /etc/nabla/key", "fresh key in /run/nabla/...", for the log.
  std::string describe() const;

 private:
  DaemonKey(std::string daemon, KeyLocations at) : daemon_(std::move(daemon)), at_(std::move(at)) {}

  std::string daemon_;
  KeyLocations at_;
  std::optional<std::string> file_;
  std::optional<Key> fresh_;
  std::string published_;  // run file written by publish(), "" if none
};

// No usable key for a daemon: the message names host:port, the file tried
// and why it failed, and what to do.
class KeyUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The key a client uses for `daemon` at host:port (see above). A given
// key_file or $NABLA_KEY_FILE (a file, or a directory holding HOST.key) must
// load (its errors are thrown as they are);
// the default files are skipped when missing. Throws KeyUnavailableError
// when none is readable.
Key client_key(const std::optional<std::string>& key_file, std::string_view daemon,
               const std::string& host, uint16_t port,
               const KeyLocations& at = KeyLocations::from_environment());

// For RpcClient::connect: a given key_file is loaded now (so its errors come
// before connecting); otherwise client_key's defaults are looked up only
// when the daemon asks for a key.
RpcClient::KeySource client_key_source(const std::optional<std::string>& key_file,
                                       std::string_view daemon, const std::string& host,
                                       uint16_t port);

}  // namespace nabla::common
