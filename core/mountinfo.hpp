// SPDX-License-Identifier: MIT
// /proc/self/mountinfo (proc(5)): one mount per line,
//   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
// Fields: id, parent, major:minor, root, mount point, mount options, optional fields ending with
// "-", fstype, source, super options. Paths escape space, tab, newline and backslash as \ooo.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/shm.hpp"

namespace preflight {

struct MountInfoLine {
  int id = 0;
  int parent = 0;
  std::string dev;  // "0:17"
  std::string root;
  std::string mount_point;
  std::string mount_options;
  std::string fstype;
  std::string source;
  std::string super_options;
};

struct MountInfo {
  std::vector<MountInfoLine> mounts;
  std::vector<int> bad_lines;  // 1-based numbers of lines that do not follow the format
};

MountInfo parse_mountinfo(std::string_view text);

/// Undoes the \ooo escapes of mountinfo paths.
std::string unescape_mount_path(std::string_view s);

/// The mount that is in effect at mount_point: the last line for it (later mounts stack on top).
const MountInfoLine* effective_mount(const MountInfo& info, std::string_view mount_point);

/// The mount that holds `path` (absolute, without symbolic links): the one in effect at the longest
/// mount point that is `path` or one of its parent directories; nullptr when none is.
const MountInfoLine* mount_holding(const MountInfo& info, std::string_view path);

/// The MountEntry fact for a mountinfo line (options merged, ro flag, tmpfs size= in bytes).
MountEntry to_mount_entry(const MountInfoLine& line);

}  // namespace preflight
