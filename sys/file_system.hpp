// SPDX-License-Identifier: MIT
// The one seam through which probes read /sys, /proc, /etc and /dev/shm facts.
// Paths are written as on a live system ("/proc/self/mountinfo"); the seam prepends its root, so
// `--sysroot DIR` and the tests point the same probe code at a captured tree.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"

namespace preflight {

/// Copies what the probes read on the live system into a capture directory (`preflight capture`):
/// every file read whole, every directory listed (its entries: links as links, directories, empty
/// stand-ins for files nobody read), every path whose existence was asked for or handed to a system
/// call (host_path), with the symbolic links on the way recreated inside the capture (an absolute
/// target made relative to the capture's root), so that FileSystem(capture dir) reads the same bytes
/// at the same paths. Partial reads (read_at: the dynamic sections of libraries) are not copied.
class FsRecorder {
 public:
  /// `dir` must exist; nothing outside it is written.
  explicit FsRecorder(std::string dir);

  /// Pauses recording (a probe whose facts the capture keeps as a facts file).
  void set_paused(bool paused);
  bool paused() const;

  void file(std::string_view path, const std::string& data);
  void directory(std::string_view path, const std::vector<std::string>& names);
  void path(std::string_view path);
  /// A read or listing that failed live for another reason than "does not exist" (EACCES, EIO,
  /// EINVAL): a tree reading the capture gets the same error back, not "does not exist".
  void failed(std::string_view path, const ProbeError& error);
  std::map<std::string, ProbeError> failures() const;

  /// The live paths recorded (files, directories, links), sorted.
  std::vector<std::string> recorded() const;
  /// What could not be written into the capture (named), for the manifest.
  std::vector<std::string> problems() const;

 private:
  /// Recreates the chain of `path` (links followed) inside the capture; the resolved live path, or
  /// "" when the path does not exist live. `leaf_file`: create an empty stand-in for a file.
  std::string materialize(std::string_view path, bool leaf_file);
  std::string dest(const std::string& live) const;
  void problem(const std::string& what);

  std::string m_dir;
  mutable std::mutex m_mutex;
  bool m_paused = false;
  std::set<std::string> m_recorded;
  std::set<std::string> m_written;  // regular files holding real contents
  std::map<std::string, ProbeError> m_failed;
  std::vector<std::string> m_problems;
};

class FileSystem {
 public:
  /// root "" or "/" is the live system. A recorder copies what is read (live system only).
  explicit FileSystem(std::string root = {}, std::shared_ptr<FsRecorder> recorder = {});

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

  /// The target of a symbolic link as stored, not followed (readlink(2)): an absolute target names a
  /// path inside the root. As for read and list, the components before the last are followed by the
  /// kernel (a capture holds no absolute links; real_path resolves each inside the root). NotFound,
  /// PermissionDenied, Unreadable; ParseError "is not a symbolic link" for a file or directory.
  Probed<std::string> read_link(std::string_view path) const;

  /// The canonical absolute path of `path` as seen inside the root (realpath(3)): every symbolic
  /// link resolved with read_link, an absolute target restarting at the root (never the host's /), a
  /// relative one from the link's directory; ".." never climbs above the root. Every component must
  /// exist (NotFound); a file followed by more components is NotFound (ENOTDIR); more than 40 links
  /// is Unreadable (ELOOP). A relative `path` is taken from the root, as by every call here. On the
  /// live system, realpath(3)'s answer.
  Probed<std::string> real_path(std::string_view path) const;

  FsRecorder* recorder() const { return m_recorder.get(); }

 private:
  FsRecorder* active_recorder() const;
  /// Under a root that is a capture: the error it recorded for `path`, if any.
  const ProbeError* recorded_failure(std::string_view path) const;

  std::string m_root;
  std::shared_ptr<FsRecorder> m_recorder;
  std::shared_ptr<const std::map<std::string, ProbeError>> m_failures;  // a capture's "unreadable"
};

/// Maps an errno from open/read to a ProbeError with a readable detail.
ProbeError probe_error_from_errno(int err);

}  // namespace preflight
