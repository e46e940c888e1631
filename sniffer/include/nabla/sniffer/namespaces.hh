#pragma once
// The network namespaces of a node: named ones under /run/netns, and those
// of running processes (/proc/*/ns/net), deduplicated by namespace identity
// (device and inode). Each carries a representative process (the lowest
// pid inside it) and, when that process's cgroup path names a container, the
// container's short id. The filesystem roots are inputs, so tests run the
// enumeration on a fake tree.
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "nabla/common/netns.hh"

namespace nabla::sniffer {

struct NamespaceRoots {
  std::string run_netns = "/run/netns";
  std::string proc = "/proc";
};

struct FoundNamespace {
  common::NetnsId id;
  std::string name;       // the name under /run/netns; empty when unnamed
  std::string path;       // what to open for setns
  pid_t pid = 0;          // lowest pid inside it; 0 when no process is
  std::string container;  // short container id (12 hex); empty when none
  // Owned by a user namespace other than the daemon's (a rootless container,
  // `unshare --user --net`): whoever made it is root inside it, without
  // being root on the node. False when that cannot be told.
  bool user_owned = false;
};

// Every namespace under the roots, named ones first by name, then the
// unnamed by device and inode; named entries
// come from `run_netns`, the rest from `proc`. Entries that vanish while
// listed are skipped. Never throws for a missing root (empty list).
std::vector<FoundNamespace> list_namespaces(const NamespaceRoots& roots);

// The short id (first 12 hex digits) of the container a cgroup path belongs
// to, for the runtimes' usual layouts (docker-<id>.scope, /docker/<id>,
// cri-containerd-<id>.scope, crio-<id>.scope, libpod-<id>.scope,
// /kubepods/.../<id>); empty when the path names none.
std::string container_id_from_cgroup(std::string_view cgroup_path);

// Which namespaces nabla-sniffd scans besides its own: every one, or those
// named (names under /run/netns). `all` leaves out the user-owned ones
// unless `user_owned` says otherwise: a root daemon that enters a namespace
// and parses what its kernel answers there gives whoever owns it a way in.
// A name given explicitly is always scanned.
struct NamespaceSelection {
  bool all = false;
  std::vector<std::string> names;
  bool user_owned = false;
  bool operator==(const NamespaceSelection&) const = default;
  bool only_own() const { return !all && names.empty(); }
  bool selects(const FoundNamespace& ns) const;
};

// Parses --netns: "all", "self", or a comma-separated list of names under
// /run/netns (which may include "self"). Throws std::invalid_argument.
NamespaceSelection parse_namespace_selection(std::string_view text);

// Whether the calling thread runs in the host's root namespace: the one of
// pid 1, or, when pid 1's cannot be read, one without a name under
// run_netns (testbed hosts and `ip netns` namespaces have one).
bool in_root_namespace(const NamespaceRoots& roots = {});

// Whether the namespace at `path` (a /proc/PID/ns/net or a bind mount) is
// owned by a user namespace other than this process's own (ioctl
// NS_GET_USERNS; a node's daemon runs in the host's); false when either
// cannot be read.
bool owned_by_other_user_namespace(const std::string& path, const NamespaceRoots& roots = {});

}  // namespace nabla::sniffer
