// SPDX-License-Identifier: MIT
// host.memory facts: /proc/meminfo and the memory limit of this process's cgroup, both read
// through the FileSystem seam (so --sysroot and the fixtures work).
#include "core/cgroup.hpp"
#include "core/meminfo.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

struct CgroupFiles {
  const char* limit;
  const char* usage;
  const char* swap;          // v2: swap alone; v1: memory + swap
  const char* inactive_key;  // hierarchical reclaimable page cache in memory.stat
};
constexpr CgroupFiles kV1Files{"memory.limit_in_bytes", "memory.usage_in_bytes", "memory.memsw.limit_in_bytes",
                               "total_inactive_file"};
constexpr CgroupFiles kV2Files{"memory.max", "memory.current", "memory.swap.max", "inactive_file"};

template <typename T, typename U>
Probed<T> same_error(const Probed<U>& failed) {
  return Probed<T>::error(*failed.error(), failed.source());
}

/// A one-value cgroup file: nullopt when it does not exist (the controller is not enabled at that
/// level); an error when it cannot be read or holds something else than a value.
using CgroupValue = Probed<std::optional<std::uint64_t>>;
using ValueParser = std::optional<std::uint64_t> (*)(std::string_view);
CgroupValue read_value(const FileSystem& fs, const std::string& path, ValueParser parse) {
  const Probed<std::string> text = fs.read_line(path);
  if (const ProbeError* e = text.error()) {
    return e->code == ProbeErrc::NotFound ? CgroupValue::ok(std::nullopt, path) : CgroupValue::error(*e, path);
  }
  if (const std::optional<std::uint64_t> value = parse(*text.value())) return CgroupValue::ok(value, path);
  return CgroupValue::error(ProbeErrc::ParseError, "not a byte count: '" + printable(*text.value()) + "'", path);
}

/// Walks from this process's cgroup up to the mount's root; the smallest limit on the way is the
/// one in force. Usage, page cache and swap are those of that limiting group.
Probed<CgroupMemory> read_cgroup_memory(const FileSystem& fs, const MountInfoLine& mount,
                                        const CgroupMembership& member) {
  const CgroupFiles& files = member.version == 1 ? kV1Files : kV2Files;
  CgroupMemory out;
  out.version = member.version;
  out.path = member.path;
  std::uint64_t smallest = kCgroupUnlimited;
  for (const std::string& level : cgroup_lineage(member.path, mount.root)) {
    const CgroupValue limit = read_value(fs, cgroup_dir(mount, level) + "/" + files.limit, parse_cgroup_limit);
    if (!limit.ok()) return same_error<CgroupMemory>(limit);
    if (*limit.value() && **limit.value() < smallest) {
      smallest = **limit.value();
      out.path = level;
    }
  }
  if (smallest != kCgroupUnlimited) out.limit = smallest;

  const std::string dir = cgroup_dir(mount, out.path) + "/";
  const CgroupValue usage = read_value(fs, dir + files.usage, parse_uint);
  if (!usage.ok()) return same_error<CgroupMemory>(usage);
  if (out.limit && !*usage.value()) {
    return Probed<CgroupMemory>::error(ProbeErrc::NotFound, "does not exist next to the group's limit", usage.source());
  }
  out.usage = *usage.value();

  // Without memory.stat nothing counts as reclaimable: the budget only gets smaller.
  if (const Probed<std::string> stat = fs.read(dir + "memory.stat"); stat.ok()) {
    out.inactive_file = parse_cgroup_stat(*stat.value(), files.inactive_key);
  }

  const CgroupValue swap = read_value(fs, dir + files.swap, parse_cgroup_limit);
  if (!swap.ok()) return same_error<CgroupMemory>(swap);
  if (*swap.value() && **swap.value() != kCgroupUnlimited) {
    const std::uint64_t value = **swap.value();
    if (member.version == 2) {
      out.swap_limit = value;
    } else if (out.limit) {
      out.swap_limit = value > *out.limit ? value - *out.limit : 0;
    }
  }
  return Probed<CgroupMemory>::ok(out, cgroup_dir(mount, out.path));
}

Probed<CgroupMemory> probe_cgroup(const FileSystem& fs, const Probed<MountInfo>& mounts) {
  using Result = Probed<CgroupMemory>;
  const Probed<std::string> self = fs.read("/proc/self/cgroup");
  if (const ProbeError* e = self.error()) {
    if (e->code == ProbeErrc::NotFound) {
      return Result::error(ProbeErrc::Unsupported, "does not exist: no cgroups", self.source());
    }
    return same_error<CgroupMemory>(self);
  }
  const Probed<CgroupMembership> member = parse_proc_self_cgroup(*self.value());
  if (!member.ok()) return same_error<CgroupMemory>(member);

  if (!mounts.ok()) return same_error<CgroupMemory>(mounts);
  const MountInfoLine* mount = find_memory_cgroup_mount(*mounts.value(), *member.value());
  if (mount == nullptr) {
    return Result::error(ProbeErrc::NotFound,
                         std::string("no ") + (member.value()->version == 2 ? "cgroup2" : "cgroup memory") +
                             " mount holds " + member.value()->path + ", so its limit cannot be read",
                         mounts.source());
  }
  // Every level may lack the limit file (v2 without the controller enabled, the root group), so
  // an incomplete capture or a mismatched mount would read as "unlimited": the group's own
  // directory must be there.
  const std::string own_dir = cgroup_dir(*mount, member.value()->path);
  if (!fs.exists(own_dir)) return Result::error(ProbeErrc::NotFound, "does not exist", own_dir);
  return read_cgroup_memory(fs, *mount, *member.value());
}

Probed<MemInfo> probe_meminfo(const FileSystem& fs) {
  const Probed<std::string> text = fs.read("/proc/meminfo");
  if (!text.ok()) return same_error<MemInfo>(text);
  return parse_meminfo(*text.value());
}

}  // namespace

void probe_memory(const ProbeContext& ctx, RankFacts& facts) {
  facts.memory.meminfo = probe_meminfo(ctx.fs);
  facts.memory.cgroup = probe_cgroup(ctx.fs, ctx.mountinfo());
}

}  // namespace preflight
