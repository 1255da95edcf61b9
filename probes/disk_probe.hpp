// SPDX-License-Identifier: MIT
// The checkpoint directories (--checkpoint-dir, default the current directory): where each one's
// files will go, that file system's free space and inodes (statvfs), whether this user may write
// there, and the mount that holds it (/proc/self/mountinfo).
#pragma once

#include <sys/statvfs.h>

#include <functional>
#include <string>
#include <vector>

#include "core/facts.hpp"
#include "sys/file_system.hpp"
#include "core/mountinfo.hpp"

namespace preflight {

/// The two questions the disk probe asks the kernel about a directory (a host path: the
/// FileSystem seam's root already prepended). Each returns 0, or the errno it failed with. Tests
/// hand in their own answers; live() asks the kernel.
struct DiskSyscalls {
  std::function<int(const std::string& host_path, struct statvfs& out)> statvfs;
  std::function<int(const std::string& host_path)> writable;  // access(W_OK | X_OK): files can be made in it
  static DiskSyscalls live();
};

/// The facts for `given` (as the user wrote them; empty: the current directory), relative paths
/// resolved against `cwd` (absolute, as on the live system). Existence, the nearest existing
/// parent and symbolic links are looked up through `fs` (its root prepended); statvfs and the
/// write test through `sys`; the mount in `mounts`.
DiskFacts probe_checkpoint_dirs(const FileSystem& fs, const Probed<MountInfo>& mounts, const std::vector<std::string>& given,
                                const std::string& cwd, const DiskSyscalls& sys);

/// `path` made absolute against `cwd` and normalised lexically ("." and ".." folded, no trailing '/').
std::string absolute_path(const std::string& path, const std::string& cwd);

}  // namespace preflight
