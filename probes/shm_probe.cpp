// SPDX-License-Identifier: MIT
// /dev/shm: the effective mount, its size and free space, and a real allocation of what this
// node's ranks need (core/shm_model.hpp). The test file has no name (O_TMPFILE), or is unlinked
// before it is sized, so nothing is left behind even if preflight is killed mid-test.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/mountinfo.hpp"
#include "core/shm_model.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"
#include "sys/safe_path.hpp"

namespace preflight {
namespace {

Probed<MountEntry> probe_mount(const Probed<MountInfo>& mounts, const std::string& path) {
  if (!mounts.ok()) return Probed<MountEntry>::error(*mounts.error(), mounts.source());
  const MountInfo& info = *mounts.value();
  if (const MountInfoLine* line = effective_mount(info, path)) {
    return Probed<MountEntry>::ok(to_mount_entry(*line), mounts.source());
  }
  // No mount of its own: it is a directory on whatever file system holds it (the longest prefix).
  const MountInfoLine* parent = mount_holding(info, path);
  if (parent == nullptr) {
    return Probed<MountEntry>::error(ProbeErrc::ParseError, "no mount holds " + path, mounts.source());
  }
  return Probed<MountEntry>::ok(to_mount_entry(*parent), mounts.source());
}

Probed<FsUsage> probe_usage(const FileSystem& fs, const std::string& path) {
  const Probed<FsStat> st = fs.stat(path);
  if (!st.ok()) return Probed<FsUsage>::error(*st.error(), path);
  if (st.value()->type != FsStat::Type::Directory) {
    return Probed<FsUsage>::error(ProbeErrc::NotFound, "exists but is not a directory", path);
  }
  const Probed<FsStats> s = fs.stat_fs(path);
  if (!s.ok()) return Probed<FsUsage>::error(*s.error(), path);
  FsUsage u;
  u.fs_magic = s.value()->fs_type;
  u.is_tmpfs = s.value()->fs_type == TMPFS_MAGIC;
  u.st_dev = st.value()->dev;
  u.total_bytes = s.value()->total_bytes;
  u.free_bytes = s.value()->available_bytes;
  u.unlimited = u.is_tmpfs && s.value()->total_bytes == 0;  // tmpfs without size=: bounded by RAM and cgroup only
  // access(2) asks about this process's rights: the live path itself (this runs live only).
  u.writable = ::access(fs.host_path(path).c_str(), W_OK) == 0 && !s.value()->read_only;
  return Probed<FsUsage>::ok(u, "statfs(" + path + ")");
}

/// The allocation test in `dir`: a file with no name (O_TMPFILE, mode 0600; else one created
/// O_EXCL and unlinked at once) relative to the directory's descriptor, fallocate(requested),
/// close. Not run in a directory another user controls (sys/safe_path.hpp): an error, never a pass.
Probed<ShmAllocTest> allocation_test(const std::string& dir, std::uint64_t bytes, const std::string& source) {
  const SafePath where = resolve_directory(dir);
  std::string why = where.problem();
  if (why.empty()) why = untrusted_directory(where);
  if (!why.empty()) return Probed<ShmAllocTest>::error(ProbeErrc::PermissionDenied, "not run: " + why, source);
  ShmAllocTest t;
  t.requested_bytes = bytes;
  const int fd = create_anonymous(where, "preflight-");
  if (fd < 0) {
    t.err = errno;
    t.step = "open";
    t.error = std::strerror(t.err);
    return Probed<ShmAllocTest>::ok(t, source);
  }
  int rc = 0;
  do {
    rc = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    t.err = errno;
    t.step = "fallocate";
    t.error = std::strerror(t.err);
  } else {
    t.ok = true;
  }
  ::close(fd);
  return Probed<ShmAllocTest>::ok(t, source);
}

/// The last /proc/mounts line for `path` (fstab format): what hwloc-gather-topology saves instead of
/// /proc/self/mountinfo.
Probed<MountEntry> proc_mounts_entry(const FileSystem& fs, const std::string& path) {
  const std::string source = "/proc/mounts";
  const Probed<std::string> text = fs.read(source);
  if (!text.ok()) return Probed<MountEntry>::error(*text.error(), source);
  std::optional<MountEntry> found;
  for (std::string_view line : split(*text.value(), '\n')) {
    const std::vector<std::string_view> f = split_ws(line);
    if (f.size() < 4 || unescape_mount_path(f[1]) != path) continue;
    MountInfoLine m;
    m.source = unescape_mount_path(f[0]);
    m.mount_point = unescape_mount_path(f[1]);
    m.fstype = std::string(f[2]);
    m.super_options = std::string(f[3]);  // one list: mount and super options together
    found = to_mount_entry(m);
    found->options = m.super_options;
  }
  if (!found) return Probed<MountEntry>::error(ProbeErrc::NotFound, "no mount at " + path, source);
  return Probed<MountEntry>::ok(*found, source);
}

/// /dev/shm of a --sysroot tree: never statfs() of the tree's directory (that is this machine's
/// disk). The capture's recorded statfs; else the captured mount's size= (mountinfo): a size below
/// the need is a certain shortfall (the free space is at most the size); otherwise the free space
/// is not in the capture.
Probed<FsUsage> sysroot_usage(const ProbeContext& ctx, const Probed<MountEntry>& mount, const std::string& path,
                              std::uint64_t need) {
  Probed<FsUsage> held = captured_probed<FsUsage>(ctx, "shm", "usage", "statfs of " + path);
  if (held.ok() || held.error()->code != ProbeErrc::Unsupported) return held;
  const MountEntry* m = mount.value();
  const std::string why = held.error()->detail;
  if (m == nullptr)
    return Probed<FsUsage>::error(ProbeErrc::Unsupported, why + "; its mount is unknown (" + mount.why() + ")",
                                  held.source());
  if (m->mount_point != path) {
    return Probed<FsUsage>::error(ProbeErrc::Unsupported,
                                  why + "; the captured mountinfo has no mount at " + path +
                                      " (it would be a directory of " + m->mount_point + ", " + m->fstype + ")",
                                  held.source());
  }
  if (m->fstype != "tmpfs" || !m->size_option) {
    return Probed<FsUsage>::error(
        ProbeErrc::Unsupported,
        why + "; the captured mount (" + m->fstype + (m->size_option ? "" : ", no size=") + ") does not give its size",
        held.source());
  }
  if (*m->size_option >= need) {
    return Probed<FsUsage>::error(ProbeErrc::Unsupported,
                                  why + "; the captured mount's size=" + format_bytes(*m->size_option) +
                                      " holds the need, but its free space is not known",
                                  held.source());
  }
  FsUsage u;
  u.total_bytes = *m->size_option;
  u.free_bytes = *m->size_option;  // at most the size
  u.is_tmpfs = true;
  u.fs_magic = TMPFS_MAGIC;
  u.writable = !m->read_only;
  return Probed<FsUsage>::ok(u, mount.source() + ": " + path + " tmpfs size=" + format_bytes(*m->size_option) +
                                    " (no statfs in the tree: the free space is at most the size)");
}

std::string alloc_source(const ShmFacts& shm) { return "fallocate(" + shm.path + "/preflight-XXXXXX)"; }

}  // namespace

// A tree: the mount from its mount table, the usage and the allocation test from its capture.
void probe_shm_tree(const ProbeContext& ctx, RankFacts& facts) {
  ShmFacts& shm = facts.shm;
  shm.mount = probe_mount(ctx.mountinfo(), shm.path);
  if (!shm.mount.ok()) {
    // A tree without /proc/self/mountinfo (hwloc-gather-topology saves /proc/mounts).
    if (Probed<MountEntry> m = proc_mounts_entry(ctx.fs, shm.path); m.ok()) shm.mount = std::move(m);
  }
  const ShmNeed need = shm_need(facts.placement, ctx.options, facts.env);
  shm.usage = sysroot_usage(ctx, shm.mount, shm.path, need.node_total);
  shm.alloc = captured_probed<ShmAllocTest>(ctx, "shm", "alloc", "allocation test");
  if (!shm.alloc.ok() && shm.alloc.error()->code == ProbeErrc::Unsupported) {
    shm.alloc = Probed<ShmAllocTest>::error(
        ProbeErrc::Unsupported, "not run under --sysroot (not the live /dev/shm); " + shm.alloc.error()->detail,
        alloc_source(shm));
  }
}

void probe_shm(const ProbeContext& ctx, RankFacts& facts) {
  ShmFacts& shm = facts.shm;
  shm.mount = probe_mount(ctx.mountinfo(), shm.path);
  const ShmNeed need = shm_need(facts.placement, ctx.options, facts.env);
  shm.usage = probe_usage(ctx.fs, shm.path);

  const std::string source = alloc_source(shm);
  const FsUsage* usage = shm.usage.value();
  if (facts.placement.local_rank != 0) {
    shm.alloc = Probed<ShmAllocTest>::error(ProbeErrc::Unsupported, "run by local rank 0 of this node only", source);
  } else if (usage == nullptr || !usage->writable) {
    shm.alloc =
        Probed<ShmAllocTest>::error(ProbeErrc::Unsupported, "not run: /dev/shm is missing or not writable", source);
  } else if (!usage->unlimited && usage->free_bytes < need.node_total) {
    shm.alloc = Probed<ShmAllocTest>::error(ProbeErrc::Unsupported,
                                            "not run: free space " + format_bytes(usage->free_bytes) +
                                                " is already below the need " + format_bytes(need.node_total),
                                            source);
  } else {
    shm.alloc = Probed<ShmAllocTest>::error(ProbeErrc::Timeout,
                                            "the allocation test did not finish before the probes' deadline", source);
    // What NCCL allocates at init; the DataLoader budget is judged against the free space only.
    const std::uint64_t dataloader =
        need.dataloader_per_rank * static_cast<std::uint64_t>(std::max(need.local_ranks, 0));
    const std::uint64_t nccl_bytes = need.node_total > dataloader ? need.node_total - dataloader : 0;
    // A path handed out of the seam on purpose: the test makes a file in the live /dev/shm itself.
    ctx.in_background([dir = ctx.fs.host_path(shm.path), bytes = std::max<std::uint64_t>(nccl_bytes, 1u << 20),
                       source]() -> ProbeContext::Finisher {
      Probed<ShmAllocTest> t = allocation_test(dir, bytes, source);
      return [t = std::move(t)](RankFacts& f) { f.shm.alloc = t; };
    });
  }
}

}  // namespace preflight
