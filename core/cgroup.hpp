// SPDX-License-Identifier: MIT
// The cgroup memory controller (cgroups(7), Documentation/admin-guide/cgroup-v{1,2}): where this
// process sits and which files hold its limit. Pure functions over text and mountinfo; the probe
// (probes/memory_probe.cpp) reads the files.
//   v2: one unified hierarchy, "0::/path" in /proc/self/cgroup; memory.max, memory.current,
//       memory.swap.max, memory.stat.
//   v1: one hierarchy per controller set, "4:memory:/path" or "4:cpuacct,memory:/path";
//       memory.limit_in_bytes, memory.usage_in_bytes, memory.memsw.limit_in_bytes, memory.stat.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mountinfo.hpp"
#include "core/probed.hpp"

namespace preflight {

inline constexpr std::uint64_t kCgroupUnlimited = std::numeric_limits<std::uint64_t>::max();

struct CgroupMembership {
  int version = 0;   // 1: a v1 hierarchy with the memory controller; 2: the unified hierarchy
  std::string path;  // as the kernel prints it: "/system.slice/job.scope"
};

/// Lines "hierarchy-ID:controller-list:cgroup-path". A v1 hierarchy carrying the memory controller
/// wins over the unified one (hybrid systems keep memory on v1). Unsupported when neither exists;
/// ParseError naming the first malformed line.
Probed<CgroupMembership> parse_proc_self_cgroup(std::string_view text);

/// A limit file: "max" (v2) or a byte count. v1 reports "unlimited" as LONG_MAX rounded down to a
/// page (9223372036854771712 with 4 KiB pages), so every value >= 2^62 is kCgroupUnlimited.
/// nullopt for anything else.
std::optional<std::uint64_t> parse_cgroup_limit(std::string_view text);

/// The value of one "key value" line of memory.stat; nullopt when absent or malformed.
std::optional<std::uint64_t> parse_cgroup_stat(std::string_view text, std::string_view key);

/// The mount of the membership's hierarchy (fstype "cgroup2", or "cgroup" with the "memory" super
/// option) whose root holds its path; the last one when several do (later mounts are on top).
const MountInfoLine* find_memory_cgroup_mount(const MountInfo& info, const CgroupMembership& member);

/// cgroup_path and its ancestors up to `root`, deepest first: "/a/b" under "/" gives "/a/b", "/a",
/// "/". Empty when cgroup_path is not below root.
std::vector<std::string> cgroup_lineage(std::string_view cgroup_path, std::string_view root);

/// Where a cgroup's files are: the mount point plus the path relative to the mount's root. Inside a
/// container the mount's root is often the container's own cgroup ("/docker/abc" mounted on
/// /sys/fs/cgroup); systemd and runc resolve it the same way. cgroup_path must be below the root.
std::string cgroup_dir(const MountInfoLine& mount, std::string_view cgroup_path);

}  // namespace preflight
