// SPDX-License-Identifier: MIT
// Facts about the directories checkpoints go to (--checkpoint-dir), gathered by probes/disk_probe.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/facts/shm.hpp"
#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

/// statvfs() of the directory that holds the checkpoints, and whether this user may write there.
struct DiskUsage {
  std::uint64_t total_bytes = 0;   // f_blocks × f_frsize
  std::uint64_t free_bytes = 0;    // f_bavail × f_frsize: what an unprivileged writer may still use
  std::uint64_t total_inodes = 0;  // f_files; 0: the file system does not count inodes (btrfs)
  std::uint64_t free_inodes = 0;   // f_favail
  bool read_only = false;          // ST_RDONLY
  bool writable = true;            // access(W_OK) of the directory statvfs() was asked about
};
PREFLIGHT_JSON_DECLARE(DiskUsage)

/// One checkpoint directory as this rank sees it.
struct CheckpointDir {
  std::string given;          // as the user wrote it ("." where no --checkpoint-dir was given)
  bool defaulted = false;     // no --checkpoint-dir: the current directory
  std::string path;           // absolute (relative paths against the current directory), normalised
  bool exists = false;        // `path` exists
  std::string holder;         // the nearest existing path at or above `path`: where the files will go
  bool holder_is_dir = true;  // false: `holder` exists but is a file, so `path` cannot be made
  std::string resolved;       // `holder` with its symbolic links resolved: what the mount table is asked about
  Probed<DiskUsage> usage;    // statvfs(holder), access(holder, W_OK)
  Probed<MountEntry> mount;   // the mount holding `resolved` (/proc/self/mountinfo)
};
PREFLIGHT_JSON_DECLARE(CheckpointDir)

struct DiskFacts {
  std::string cwd;                  // the current directory relative paths were resolved against
  std::vector<CheckpointDir> dirs;  // in the order given, each once
};
PREFLIGHT_JSON_DECLARE(DiskFacts)

}  // namespace preflight
