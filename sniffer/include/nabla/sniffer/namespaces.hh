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
// named (names under /run/netns).
struct NamespaceSelection {
  bool all = false;
  std::vector<std::string> names;
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

}  // namespace nabla::sniffer
