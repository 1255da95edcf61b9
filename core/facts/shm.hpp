// SPDX-License-Identifier: MIT
// Facts about /dev/shm, gathered by probes/shm_probe.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

/// The effective mount of a path, from /proc/self/mountinfo (the last entry for that mount point).
struct MountEntry {
  std::string mount_point;
  std::string fstype;
  std::string source;
  std::string options;  // mount and super options, comma-joined
  bool read_only = false;
  std::optional<std::uint64_t> size_option;  // tmpfs "size=" in bytes, when given
};
PREFLIGHT_JSON_DECLARE(MountEntry)

/// statfs/statvfs/stat of the path.
struct FsUsage {
  std::uint64_t total_bytes = 0;  // 0 with unlimited = true: tmpfs without a size limit
  std::uint64_t free_bytes = 0;
  bool unlimited = false;
  bool is_tmpfs = false;
  std::uint64_t fs_magic = 0;
  std::uint64_t st_dev = 0;  // NCCL compares this between ranks of one host
  bool writable = true;      // access(W_OK)
};
PREFLIGHT_JSON_DECLARE(FsUsage)

/// The real allocation test: a file with no name (O_TMPFILE, or O_EXCL + unlink), fallocate(requested), close.
struct ShmAllocTest {
  std::uint64_t requested_bytes = 0;
  bool ok = false;
  int err = 0;        // errno of the failing step
  std::string step;   // "open", "fallocate"
  std::string error;  // strerror text
};
PREFLIGHT_JSON_DECLARE(ShmAllocTest)

struct ShmFacts {
  std::string path = "/dev/shm";
  Probed<MountEntry> mount;
  Probed<FsUsage> usage;
  Probed<ShmAllocTest> alloc;
};
PREFLIGHT_JSON_DECLARE(ShmFacts)

}  // namespace preflight
