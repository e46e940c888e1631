// A node's network namespaces; see namespaces.hh.
#include "nabla/sniffer/namespaces.hh"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "nabla/common/fd.hh"
#include "nabla/common/text_file.hh"
#include "nabla/sniffer/proc_map.hh"

namespace nabla::sniffer {
namespace {

constexpr size_t kFullIdHex = 64;
constexpr size_t kShortIdHex = 12;

bool is_hex_id(std::string_view s) {
  return s.size() == kFullIdHex && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// "<prefix><64 hex>.scope" → the hex; empty otherwise.
std::string_view scope_id(std::string_view part) {
  static constexpr std::array<std::string_view, 4> kPrefixes = {"docker-", "cri-containerd-",
                                                                "crio-", "libpod-"};
  constexpr std::string_view kSuffix = ".scope";
  if (part.size() <= kSuffix.size() || part.substr(part.size() - kSuffix.size()) != kSuffix) {
    return {};
  }
  for (std::string_view prefix : kPrefixes) {
    if (part.rfind(prefix, 0) != 0) continue;
    const std::string_view id =
        part.substr(prefix.size(), part.size() - prefix.size() - kSuffix.size());
    if (is_hex_id(id)) return id;
  }
  return {};
}

std::vector<std::string_view> path_parts(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    path.remove_prefix(slash == std::string_view::npos ? path.size() : slash + 1);
  }
  return parts;
}

bool stat_id(const std::string& path, common::NetnsId& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  id = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  return true;
}

template <typename Fn>
void for_each_entry(const std::string& dir_path, Fn&& fn) {
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    fn(name);
  }
  ::closedir(dir);
}

pid_t parse_pid(std::string_view name) {
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  return ec == std::errc() && end == name.data() + name.size() ? pid : 0;
}

// A user namespace's identity (device and inode of its nsfs file).
struct UserNamespaceId {
  dev_t dev = 0;
  ino_t ino = 0;
};

std::optional<UserNamespaceId> own_user_namespace(const NamespaceRoots& roots) {
  struct stat st {};
  if (::stat((roots.proc + "/self/ns/user").c_str(), &st) != 0) return std::nullopt;
  return UserNamespaceId{st.st_dev, st.st_ino};
}

// Whether the network namespace at `path` is owned by a user namespace other
// than `own` (ioctl NS_GET_USERNS); false when that cannot be read.
bool owned_by_other(const std::string& path, const UserNamespaceId& own) {
  const int netns = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (netns < 0) return false;
  const common::FileDescriptor netns_fd(netns);
  const int owner = ::ioctl(netns_fd.get(), NS_GET_USERNS);
  if (owner < 0) return false;  // not a namespace file (a test's fake tree), or no such ioctl
  const common::FileDescriptor owner_fd(owner);
  struct stat st {};
  if (::fstat(owner_fd.get(), &st) != 0) return false;
  return st.st_dev != own.dev || st.st_ino != own.ino;
}

}  // namespace

std::string container_id_from_cgroup(std::string_view cgroup_path) {
  const std::vector<std::string_view> parts = path_parts(cgroup_path);
  const bool kubepods = std::any_of(parts.begin(), parts.end(),
                                    [](std::string_view p) { return p.rfind("kubepods", 0) == 0; });
  // The innermost match names the container (a runtime may nest scopes).
  for (size_t i = parts.size(); i-- > 0;) {
    if (const std::string_view id = scope_id(parts[i]); !id.empty()) {
      return std::string(id.substr(0, kShortIdHex));
    }
    const bool bare_id = is_hex_id(parts[i]) && (kubepods || (i > 0 && parts[i - 1] == "docker"));
    if (bare_id) return std::string(parts[i].substr(0, kShortIdHex));
  }
  return {};
}

std::vector<FoundNamespace> list_namespaces(const NamespaceRoots& roots) {
  std::map<common::NetnsId, FoundNamespace> found;
  for_each_entry(roots.run_netns, [&](std::string_view name) {
    FoundNamespace ns;
    ns.path = roots.run_netns + "/" + std::string(name);
    if (!stat_id(ns.path, ns.id)) return;
    ns.name = name;
    found.emplace(ns.id, std::move(ns));  // two names for one namespace: the first listed
  });
  for_each_entry(roots.proc, [&](std::string_view entry) {
    const pid_t pid = parse_pid(entry);
    if (pid <= 0) return;
    const std::string path = roots.proc + "/" + std::string(entry) + "/ns/net";
    common::NetnsId id;
    if (!stat_id(path, id)) return;  // gone, or a kernel thread we may not look at
    auto [it, added] = found.try_emplace(id);
    FoundNamespace& ns = it->second;
    if (added) {
      ns.id = id;
      ns.path = path;
    }
    if (ns.pid != 0 && ns.pid < pid) return;
    ns.pid = pid;
    if (ns.name.empty()) ns.path = path;
  });
  // Read once per listing: the daemon's own user namespace.
  const std::optional<UserNamespaceId> own = own_user_namespace(roots);
  std::vector<FoundNamespace> out;
  for (auto& [id, ns] : found) {
    if (ns.pid != 0) {
      const std::string cgroup_file = roots.proc + "/" + std::to_string(ns.pid) + "/cgroup";
      ns.container =
          container_id_from_cgroup(parse_cgroup_file(common::read_text_file(cgroup_file)));
    }
    ns.user_owned = own && owned_by_other(ns.path, *own);
    out.push_back(std::move(ns));
  }
  std::sort(out.begin(), out.end(), [](const FoundNamespace& a, const FoundNamespace& b) {
    return std::make_tuple(a.name.empty(), std::cref(a.name), a.id) <
           std::make_tuple(b.name.empty(), std::cref(b.name), b.id);
  });
  return out;
}

bool NamespaceSelection::selects(const FoundNamespace& ns) const {
  const bool named =
      !ns.name.empty() && std::find(names.begin(), names.end(), ns.name) != names.end();
  return named || (all && (user_owned || !ns.user_owned));
}

NamespaceSelection parse_namespace_selection(std::string_view text) {
  NamespaceSelection selection;
  if (text == "all") {
    selection.all = true;
    return selection;
  }
  if (text.empty()) throw std::invalid_argument("--netns: empty (all, self or NAME,...)");
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    if (name == "self") continue;
    if (name.empty() || name == "all" || name.find('/') != std::string_view::npos) {
      throw std::invalid_argument("--netns: '" + std::string(name) +
                                  "' is not a name under /run/netns (all, self or NAME,...)");
    }
    selection.names.emplace_back(name);
  }
  return selection;
}

bool in_root_namespace(const NamespaceRoots& roots) {
  common::NetnsId self;
  if (!stat_id(roots.proc + "/thread-self/ns/net", self)) return false;
  common::NetnsId init;
  if (stat_id(roots.proc + "/1/ns/net", init)) return init == self;
  // pid 1 hidden (a sandbox may forbid it): the root unless ours has a name
  // under /run/netns, as a testbed host's has.
  bool named = false;
  for_each_entry(roots.run_netns, [&](std::string_view name) {
    common::NetnsId id;
    named = named || (stat_id(roots.run_netns + "/" + std::string(name), id) && id == self);
  });
  return !named;
}

bool owned_by_other_user_namespace(const std::string& path, const NamespaceRoots& roots) {
  const std::optional<UserNamespaceId> own = own_user_namespace(roots);
  return own && owned_by_other(path, *own);
}

}  // namespace nabla::sniffer
