// SPDX-License-Identifier: MIT
// The checkpoint directories: for each, the nearest existing directory at or above it (a directory
// the job will create is held by its parent), its file system's free space and inodes (statvfs),
// whether this user may create files there, and the mount in effect there (symbolic links
// resolved first, so a link into /lustre is judged as /lustre), all through the FileSystem seam
// (stat, stat_fs, real_path). Nothing is written. Under --sysroot the capture's record is used:
// statfs of the tree would measure this machine's disk.
#include "probes/disk_probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

std::string parent_or_root(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

/// `path` (as on the live system) with its symbolic links resolved inside the seam's root (an
/// absolute link of a captured tree stays in the capture); the path as it was when it cannot be
/// resolved.
std::string resolve_links(const FileSystem& fs, const std::string& path) {
  const Probed<std::string> real = fs.real_path(path);
  return real.ok() ? *real.value() : path;
}

Probed<MountEntry> mount_of(const Probed<MountInfo>& mounts, const std::string& path) {
  if (!mounts.ok()) return Probed<MountEntry>::error(*mounts.error(), mounts.source());
  const MountInfoLine* line = mount_holding(*mounts.value(), path);
  if (line == nullptr)
    return Probed<MountEntry>::error(ProbeErrc::ParseError, "no mount holds " + path, mounts.source());
  return Probed<MountEntry>::ok(to_mount_entry(*line), mounts.source());
}

void probe_dir(const FileSystem& fs, const Probed<MountInfo>& mounts, const DiskSyscalls& sys, CheckpointDir& d) {
  // The nearest existing path at or above the directory: where its files will go.
  std::string at = d.path;
  Probed<FsStat> st = fs.stat(at);
  for (;;) {
    if (st.ok()) break;
    if (st.error()->code == ProbeErrc::NotFound && at != "/") {  // ENOENT, ENOTDIR
      at = parent_or_root(at);
      st = fs.stat(at);
      continue;
    }
    d.holder = d.resolved = at;
    d.usage = Probed<DiskUsage>::error(*st.error(), "stat(" + at + ")");
    d.mount = mount_of(mounts, at);
    return;
  }
  d.holder = at;
  d.exists = at == d.path;
  d.holder_is_dir = st.value()->type == FsStat::Type::Directory;
  d.resolved = resolve_links(fs, at);
  d.mount = mount_of(mounts, d.resolved);
  if (!d.holder_is_dir) {
    d.usage = Probed<DiskUsage>::error(ProbeErrc::NotFound, at + " is not a directory", "stat(" + at + ")");
    return;
  }
  const Probed<FsStats> v = fs.stat_fs(d.resolved);
  if (!v.ok()) {
    d.usage = Probed<DiskUsage>::error(*v.error(), "statvfs(" + d.resolved + ")");
    return;
  }
  DiskUsage u;
  u.total_bytes = v.value()->total_bytes;
  u.free_bytes = v.value()->available_bytes;
  u.total_inodes = v.value()->total_inodes;
  u.free_inodes = v.value()->free_inodes;
  u.read_only = v.value()->read_only;
  u.writable = sys.writable(fs, d.resolved) == 0;
  d.usage = Probed<DiskUsage>::ok(u, "statvfs(" + d.resolved + ")");
}

/// The capture's record of the checkpoint directories; with --checkpoint-dir, the ones it names
/// (a directory the capture does not hold is "not in the capture", never this machine's).
Probed<DiskFacts> sysroot_disk(const ProbeContext& ctx) {
  Probed<DiskFacts> held = captured_probed<DiskFacts>(ctx, "disk", "disk", "statvfs of the checkpoint directories");
  if (!held.ok() || ctx.options.checkpoint_dirs.empty()) return held;
  const DiskFacts& captured = *held.value();
  std::vector<std::string> names;
  for (const CheckpointDir& d : captured.dirs) names.push_back(d.path);
  DiskFacts out;
  out.cwd = captured.cwd;
  for (const std::string& given : ctx.options.checkpoint_dirs) {
    const std::string path = absolute_path(given, captured.cwd);
    const auto it = std::find_if(captured.dirs.begin(), captured.dirs.end(), [&](const CheckpointDir& d) {
      return d.path == path || (!d.defaulted && d.given == given);
    });
    if (it != captured.dirs.end()) {
      out.dirs.push_back(*it);
      out.dirs.back().given = given;
      out.dirs.back().defaulted = false;
      continue;
    }
    CheckpointDir d;
    d.given = given;
    d.path = d.holder = d.resolved = path;
    const std::string why = "not in the capture: it holds " +
                            (names.empty() ? std::string("no checkpoint directory") : join(names, ", ")) +
                            " (capture the node with --checkpoint-dir " + given + ")";
    d.usage = Probed<DiskUsage>::error(ProbeErrc::Unsupported, why, held.source());
    d.mount = Probed<MountEntry>::error(ProbeErrc::Unsupported, why, held.source());
    out.dirs.push_back(std::move(d));
  }
  return Probed<DiskFacts>::ok(std::move(out), held.source());
}

}  // namespace

DiskSyscalls DiskSyscalls::live() {
  DiskSyscalls s;
  // The one path handed to the kernel outside the seam: access(2) asks about this process's rights.
  s.writable = [](const FileSystem& fs, const std::string& path) {
    return ::faccessat(AT_FDCWD, fs.host_path(path).c_str(), W_OK | X_OK, AT_EACCESS) == 0 ? 0 : errno;
  };
  return s;
}

std::string absolute_path(const std::string& path, const std::string& cwd) {
  std::filesystem::path p(path);
  if (p.is_relative() && !cwd.empty()) p = std::filesystem::path(cwd) / p;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out.empty() ? std::string(".") : out;
}

DiskFacts probe_checkpoint_dirs(const FileSystem& fs, const Probed<MountInfo>& mounts,
                                const std::vector<std::string>& given, const std::string& cwd,
                                const DiskSyscalls& sys) {
  DiskFacts out;
  out.cwd = cwd;
  const bool defaulted = given.empty();
  const std::vector<std::string> wanted = defaulted ? std::vector<std::string>{"."} : given;
  for (const std::string& w : wanted) {
    CheckpointDir d;
    d.given = w;
    d.defaulted = defaulted;
    if (w.empty() || (w.front() != '/' && cwd.empty())) {
      d.path = d.holder = d.resolved = w;
      const std::string why =
          "the current directory is not known (getcwd failed), so the relative path cannot be resolved";
      d.usage = Probed<DiskUsage>::error(ProbeErrc::NotFound, why, "getcwd");
      d.mount = Probed<MountEntry>::error(ProbeErrc::NotFound, why, "getcwd");
      out.dirs.push_back(std::move(d));
      continue;
    }
    d.path = absolute_path(w, cwd);
    const bool seen =
        std::any_of(out.dirs.begin(), out.dirs.end(), [&](const CheckpointDir& o) { return o.path == d.path; });
    if (seen) continue;  // "ckpt" and "./ckpt/": one directory, judged once
    probe_dir(fs, mounts, sys, d);
    out.dirs.push_back(std::move(d));
  }
  return out;
}

void probe_disk_tree(const ProbeContext& ctx, RankFacts& facts) { facts.disk = sysroot_disk(ctx); }

void probe_disk(const ProbeContext& ctx, RankFacts& facts) {
  std::string cwd;
  if (char* here = ::getcwd(nullptr, 0)) {
    cwd = here;
    std::free(here);
  }
  const DiskSyscalls sys = DiskSyscalls::live();
  DiskFacts found = probe_checkpoint_dirs(ctx.fs, ctx.mountinfo(), ctx.options.checkpoint_dirs, cwd, sys);
  // A directory below an automount point: the stat() above mounted it, after the mount table was
  // read. Read it again to name the file system that now holds the directory (NFS, most often).
  const bool automounted = std::any_of(found.dirs.begin(), found.dirs.end(), [](const CheckpointDir& d) {
    return d.mount.ok() && d.mount.value()->fstype == "autofs";
  });
  if (automounted) {
    const Probed<std::string> text = ctx.fs.read("/proc/self/mountinfo");
    const Probed<MountInfo> now = text.ok() ? Probed<MountInfo>::ok(parse_mountinfo(*text.value()), text.source())
                                            : Probed<MountInfo>::error(*text.error(), text.source());
    found = probe_checkpoint_dirs(ctx.fs, now, ctx.options.checkpoint_dirs, cwd, sys);
  }
  facts.disk = Probed<DiskFacts>::ok(std::move(found), "statvfs of the checkpoint directories, /proc/self/mountinfo");
}

}  // namespace preflight
