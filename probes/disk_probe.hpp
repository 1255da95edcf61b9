// SPDX-License-Identifier: MIT
// The checkpoint directories (--checkpoint-dir; without one the current directory, `defaulted`,
// which host.disk judges as information only): where each one's files will go, that file system's
// free space and inodes (statvfs), whether this user may write there, and the mount that holds it
// (/proc/self/mountinfo).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/facts.hpp"
#include "core/mountinfo.hpp"
#include "sys/file_system.hpp"

namespace preflight {

/// The one question the disk probe asks the kernel about a directory outside the FileSystem seam:
/// whether this process may create files there (access(W_OK | X_OK) of fs.host_path(path), a
/// question about this process's rights, not about the files). 0, or the errno it failed with.
/// Tests hand in their own answers; live() asks the kernel.
struct DiskSyscalls {
  std::function<int(const FileSystem& fs, const std::string& path)> writable;
  static DiskSyscalls live();
};

/// The facts for `given` (as the user wrote them; empty: the current directory), relative paths
/// resolved against `cwd` (absolute, as on the live system). Existence, the nearest existing
/// parent, symbolic links and the file system's capacity (stat_fs) are looked up through `fs`; the
/// write test through `sys`; the mount in `mounts`.
DiskFacts probe_checkpoint_dirs(const FileSystem& fs, const Probed<MountInfo>& mounts,
                                const std::vector<std::string>& given, const std::string& cwd, const DiskSyscalls& sys);

/// `path` made absolute against `cwd` and normalised lexically ("." and ".." folded, no trailing '/').
std::string absolute_path(const std::string& path, const std::string& cwd);

}  // namespace preflight
