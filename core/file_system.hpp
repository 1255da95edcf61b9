// SPDX-License-Identifier: MIT
// The one seam through which probes read /sys, /proc, /etc and /dev/shm facts.
// Paths are written as on a live system ("/proc/self/mountinfo"); the seam prepends its root, so
// `--sysroot DIR` and the tests point the same probe code at a captured tree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"

namespace preflight {

class FileSystem {
 public:
  /// root "" or "/" is the live system.
  explicit FileSystem(std::string root = {});

  const std::string& root() const { return m_root; }
  bool is_live() const { return m_root.empty(); }

  /// The path to hand to a system call (statvfs, open): root + path.
  std::string host_path(std::string_view path) const;

  /// Reads a whole file (at most max_bytes; more is a ParseError "too large").
  /// Errors keep the errno meaning: NotFound, PermissionDenied, Unreadable.
  Probed<std::string> read(std::string_view path, std::size_t max_bytes = 4u << 20) const;

  /// Reads at most `size` bytes at `offset` (fewer at the end of the file; "" past it), for files
  /// too large to read whole (the dynamic section of a shared library).
  Probed<std::string> read_at(std::string_view path, std::uint64_t offset, std::size_t size) const;
  /// Reads a file whose contents are one line; trailing white space removed.
  Probed<std::string> read_line(std::string_view path) const;

  /// Names in a directory, sorted, without "." and "..".
  Probed<std::vector<std::string>> list(std::string_view path) const;

  bool exists(std::string_view path) const;

 private:
  std::string m_root;
};

/// Maps an errno from open/read to a ProbeError with a readable detail.
ProbeError probe_error_from_errno(int err);

}  // namespace preflight
