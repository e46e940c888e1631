#include "nabla/common/local_keys.hh"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "nabla/common/error.hh"
#include "nabla/common/fd.hh"
#include "nabla/common/host_port.hh"
#include "nabla/common/ip_address.hh"
#include "nabla/common/log.hh"

namespace nabla::common {
namespace {

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  const auto address = IpAddress::parse(host);
  return address && address->is_loopback();
}

// "permission denied": strerror in lower case, for the middle of a sentence.
std::string reason_of(const std::system_error& e) {
  std::string text = std::generic_category().message(e.code().value());
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// Whether `host` can name a file in a key directory (and only there).
bool is_file_name(const std::string& host) {
  return !host.empty() && host.find('/') == std::string::npos && host.front() != '.';
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// RUN_DIR, mode 0750 and of `gid` when given (and allowed). An existing
// directory this process does not own is left as its owner made it.
void prepare_run_dir_for(const std::string& dir, std::optional<unsigned> gid) {
  if (::mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) {
    throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
  }
  struct stat st {};
  check_syscall("stat " + dir, ::stat(dir.c_str(), &st));
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir + " is not a directory");
  if (st.st_uid != ::geteuid()) return;
  check_syscall("chmod " + dir, ::chmod(dir.c_str(), 0750));
  if (gid && ::chown(dir.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
    log_warn("cannot give ", dir, " to the key group (", std::strerror(errno),
             "): only its owner can use the keys in it");
  }
}

// Writes `key` as hex to `path` by rename, so a reader never sees half a file
// and a stale file of a crashed daemon is replaced.
void write_run_key(const std::string& path, const Key& key, std::optional<unsigned> gid) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  {
    FileDescriptor fd = FileDescriptor::open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    // Without the right to give it to the group (no CAP_CHOWN), the file
    // stays 0600: fewer users get in, never more.
    if (gid && ::fchown(fd.get(), static_cast<uid_t>(-1), *gid) == 0) {
      check_syscall("fchmod " + tmp, ::fchmod(fd.get(), 0640));
    } else if (gid) {
      log_warn("cannot give ", path, " to the key group (", std::strerror(errno),
               "): only its owner can read it");
    }
    std::string text = to_hex(key.bytes().data(), key.bytes().size()) + "\n";
    fd.write_all(text);
    OPENSSL_cleanse(text.data(), text.size());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), "rename " + tmp + " to " + path);
  }
}

}  // namespace

KeyLocations KeyLocations::from_environment() {
  KeyLocations at;
  const char* env = std::getenv("NABLA_KEY_FILE");
  if (env != nullptr && *env != '\0') at.env_key_file = env;
  return at;
}

void prepare_run_dir(const std::string& dir, const std::string& group) {
  prepare_run_dir_for(dir, group_id(group));
}

std::string node_key_path(const std::string& path, const std::string& host) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return path;
  if (!is_file_name(host)) {
    throw std::invalid_argument("'" + host + "' cannot name a key file in the key directory " +
                                path);
  }
  return path + "/" + host + ".key";
}

Key load_node_key(const std::string& path, const std::string& host, std::string_view key_group) {
  const std::string file = node_key_path(path, host);
  if (file == path) return load_key_file(path, key_group);
  try {
    return load_key_file(file, key_group);
  } catch (const std::system_error& e) {
    if (e.code().value() != ENOENT) throw;
    throw std::runtime_error("no key for node " + host + " in the key directory " + path + ": " +
                             file +
                             " does not exist (each node has its own key: make it with "
                             "nabla key new " +
                             file +
                             " and install it on that node as "
                             "/etc/nabla/key)");
  }
}

std::string run_key_path(const KeyLocations& at, std::string_view daemon, uint16_t port) {
  std::string path = at.run_dir + "/" + std::string(daemon) + "-" + std::to_string(port);
  struct stat st {};
  if (::stat("/proc/thread-self/ns/net", &st) == 0 || ::stat("/proc/self/ns/net", &st) == 0) {
    path += "-net" + std::to_string(st.st_ino);
  }
  return path + ".key";
}

DaemonKey DaemonKey::choose(const std::optional<std::string>& key_file, std::string_view daemon,
                            const std::string& listen_address, KeyLocations at) {
  DaemonKey key(std::string(daemon), std::move(at));
  if (key_file) {
    key.file_ = *key_file;
  } else if (file_exists(key.at_.system_key)) {
    key.file_ = key.at_.system_key;
  } else if (is_loopback_host(listen_address)) {
    const auto bytes = random_nonce();
    key.fresh_.emplace(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  } else {
    throw std::invalid_argument("refusing to listen on " + listen_address +
                                " without a key: give --key-file or create " + key.at_.system_key +
                                " (nabla key new " + key.at_.system_key + ")");
  }
  if (key.file_) (void)load_keys(*key.file_, key.at_.group);  // fail now, naming the file
  return key;
}

DaemonKey::DaemonKey(DaemonKey&& other) noexcept
    : daemon_(std::move(other.daemon_)),
      at_(std::move(other.at_)),
      file_(std::move(other.file_)),
      fresh_(std::move(other.fresh_)),
      published_(std::exchange(other.published_, {})) {}

DaemonKey::~DaemonKey() {
  if (published_.empty() || !fresh_) return;
  try {
    const std::vector<Key> on_disk = load_keys(published_, at_.group);
    // Another daemon of the same name and port may have replaced it since.
    if (on_disk.front().bytes() == fresh_->bytes()) ::unlink(published_.c_str());
  } catch (const std::exception&) {
    // Gone or unreadable: nothing of ours to remove.
  }
}

void DaemonKey::apply(RpcServerOptions& options) const {
  if (file_) options.key_file = *file_;
  if (fresh_) options.keys = {*fresh_};
}

void DaemonKey::publish(uint16_t port) {
  if (!fresh_) return;
  const std::optional<unsigned> gid = group_id(at_.group);
  prepare_run_dir_for(at_.run_dir, gid);
  const std::string path = run_key_path(at_, daemon_, port);
  write_run_key(path, *fresh_, gid);
  published_ = path;
}

std::string DaemonKey::describe() const {
  if (file_) return "key file " + *file_;
  if (!published_.empty()) return "fresh key in " + published_;
  return "fresh key (not yet published)";
}

Key client_key(const std::optional<std::string>& key_file, std::string_view daemon,
               const std::string& host, uint16_t port, const KeyLocations& at) {
  if (key_file) return load_node_key(*key_file, host, at.group);
  if (at.env_key_file) return load_node_key(*at.env_key_file, host, at.group);
  std::vector<std::string> candidates;
  if (is_loopback_host(host)) candidates.push_back(run_key_path(at, daemon, port));
  // A host no file can be named after has no file in the key directory.
  if (is_file_name(host)) candidates.push_back(at.key_dir + "/" + host + ".key");
  candidates.push_back(at.system_key);
  std::string refusal;
  for (const std::string& path : candidates) {
    try {
      return load_key_file(path, at.group);
    } catch (const std::system_error& e) {
      if (e.code().value() == ENOENT) continue;
      if (refusal.empty()) refusal = "cannot read " + path + " (" + reason_of(e) + ")";
    }
  }
  if (refusal.empty()) {
    refusal = "no key file (";
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      refusal += (i > 0 ? ", " : "") + candidates[i];
    }
    refusal += candidates.size() > 1 ? " do not exist)" : " does not exist)";
  }
  throw KeyUnavailableError(HostPort{host, port, {}}.to_string() + " requires a key: " + refusal +
                            "; run as root, join group " + at.group + ", or pass --key-file");
}

RpcClient::KeySource client_key_source(const std::optional<std::string>& key_file,
                                       std::string_view daemon, const std::string& host,
                                       uint16_t port) {
  if (key_file) {
    Key key = load_node_key(*key_file, host);
    return [key = std::move(key)] { return key; };
  }
  return [daemon = std::string(daemon), host, port] {
    return client_key(std::nullopt, daemon, host, port);
  };
}

}  // namespace nabla::common
