// SPDX-License-Identifier: MIT
// The one seam through which probes read /sys, /proc, /etc and /dev/shm facts.
// Paths are written as on a live system ("/proc/self/mountinfo"); the seam looks them up under its
// root, so `--sysroot DIR` and the tests point the same probe code at a captured tree (or, in unit
// tests, at a MemoryTree). Under a directory root every lookup stays inside it: symbolic links,
// absolute ones included, and ".." resolve inside the root, never on this machine's /.
#pragma once

#include <cstdint>
#include <functional>
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
/// stand-ins for files nobody read), every path whose existence was asked for, stat'ed (stat,
/// stat_fs) or handed to a system call (host_path), with the symbolic links on the way recreated
/// inside the capture (an absolute target made relative to the capture's root), so that
/// FileSystem(capture dir) reads the same bytes at the same paths. Partial reads (read_at: the
/// dynamic sections of libraries) are not copied.
class FsRecorder {
 public:
  /// `dir` must exist; nothing outside it is written.
  explicit FsRecorder(std::string dir);

  /// Pauses recording (a probe whose facts the capture keeps as a facts file).
  void set_paused(bool paused);
  bool paused() const;

  /// What the capture keeps of the file at `path` (as the probes name it, or its target when it is
  /// a link): filter(contents) instead of the contents, and why, for the manifest. For /etc/passwd,
  /// the entry of the user the job runs as: every other local account stays out of the capture.
  void filter(std::string path, std::function<std::string(const std::string&)> keep, std::string why);
  /// What the capture keeps of every other file: keep(contents); a file it changed is listed as
  /// filtered, with `why`. The capture's redaction of secret NAME=value lines (a password in
  /// ~/.nccl.conf) and of the credentials in URLs.
  void filter_every(std::function<std::string(const std::string&)> keep, std::string why);
  /// The filtered files recorded: live path -> why (filter()'s `why`).
  std::map<std::string, std::string> filtered() const;

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
  struct Filter {
    std::function<std::string(const std::string&)> keep;
    std::string why;
  };
  std::map<std::string, Filter, std::less<>> m_filters;
  Filter m_every;  // filter_every(); keep empty: none
  std::map<std::string, std::string> m_filtered;
};

/// What statfs(2) says of the file system that holds a path (the numbers statvfs(3) derives).
struct FsStats {
  std::uint64_t total_bytes = 0;      // f_blocks * fragment size
  std::uint64_t free_bytes = 0;       // f_bfree * fragment size: with the blocks reserved for root
  std::uint64_t available_bytes = 0;  // f_bavail * fragment size: what an unprivileged user may fill
  std::uint64_t block_size = 0;       // the fragment size (f_frsize, else f_bsize)
  std::uint64_t total_inodes = 0;     // f_files
  std::uint64_t free_inodes = 0;      // f_ffree
  std::uint64_t fs_type = 0;          // f_type: TMPFS_MAGIC, NFS_SUPER_MAGIC, ...
  bool read_only = false;             // mounted read-only (ST_RDONLY)
};

/// What stat(2) says of a path, as far as the probes ask.
struct FsStat {
  enum class Type { File, Directory, Link, Other };
  Type type = Type::Other;
  std::uint64_t size = 0;
  std::uint64_t dev = 0;  // st_dev
};

/// An in-memory tree for FileSystem(const MemoryTree&): files, directories, symbolic links, the
/// file system statistics of chosen directories and errors injected per path, so a unit test
/// builds the /proc or /sys a probe reads in a few lines, without the disk. Paths are absolute, as
/// on a live system; the directories above every path are made as needed.
class MemoryTree {
 public:
  MemoryTree();

  MemoryTree& file(std::string_view path, std::string data = {});
  MemoryTree& dir(std::string_view path);
  /// A symbolic link holding `target` as written: relative to the link's directory, or absolute
  /// (from the tree's root).
  MemoryTree& link(std::string_view path, std::string target);
  /// Every operation that reaches `path` (opens it, lists it, or walks through it) fails with errno
  /// `err` (EACCES, EIO, ...), whether or not the path is in the tree.
  MemoryTree& error(std::string_view path, int err);
  /// What stat_fs answers for `path` and everything below it (the nearest such directory above a
  /// path wins, as a mount does). A path with none above it: EIO.
  MemoryTree& stats(std::string_view path, const FsStats& stats);

  struct Node {
    FsStat::Type type = FsStat::Type::Directory;
    std::string data;  // a file's bytes, a link's target
  };
  const std::map<std::string, Node>& nodes() const { return m_nodes; }
  const std::map<std::string, int>& errors() const { return m_errors; }
  const std::map<std::string, FsStats>& all_stats() const { return m_stats; }

 private:
  Node& make(std::string_view path, FsStat::Type type);

  std::map<std::string, Node> m_nodes;  // by normalised absolute path; "/" always
  std::map<std::string, int> m_errors;
  std::map<std::string, FsStats> m_stats;
};

/// How FileSystem reads a directory root: the one system call that keeps every lookup inside the
/// root (openat2 with RESOLVE_IN_ROOT), or, where the kernel or a seccomp filter refuses it, the
/// links resolved one by one inside the root first (real_path's walk). Tests force the second.
enum class RootLookup { Auto, WalkOnly };

class FsBackend;

class FileSystem {
 public:
  /// root "" or "/" is the live system. A recorder copies what is read (live system only).
  explicit FileSystem(std::string root = {}, std::shared_ptr<FsRecorder> recorder = {},
                      RootLookup lookup = RootLookup::Auto);
  /// A tree held in memory (a copy of `tree`): for unit tests.
  explicit FileSystem(const MemoryTree& tree);

  /// The directory, "" for the live system, "(memory tree)" for a MemoryTree.
  const std::string& root() const { return m_root; }
  bool is_live() const { return m_live; }
  /// Under a directory root: whether lookups go through openat2(RESOLVE_IN_ROOT) (false: the
  /// walk); opens the root if it was not open yet.
  bool uses_openat2() const;

  /// The path to hand to code that takes a path on this machine (hwloc, mkstemp, access(2)): root
  /// + path; links in it are the kernel's to follow, so only for paths on the live system or
  /// already resolved with real_path. "" under a memory tree (no system call finds it).
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

  /// stat(2) of `path`, links followed (lstat: `follow_last` false, the last component's link
  /// itself). NotFound, PermissionDenied, Unreadable.
  Probed<FsStat> stat(std::string_view path, bool follow_last = true) const;

  /// statfs(2) of the file system holding `path` (links followed): under a directory root, the file
  /// system of the tree's directory, which is this machine's disk, not the captured node's.
  Probed<FsStats> stat_fs(std::string_view path) const;

  /// The target of a symbolic link as stored, not followed (readlink(2)): an absolute target names a
  /// path inside the root. NotFound, PermissionDenied, Unreadable; ParseError "is not a symbolic
  /// link" for a file or directory.
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
  /// The error for a failed call on `path`: a capture's record for "does not exist", else the
  /// errno's meaning, recorded as a failure while capturing.
  ProbeError failure(std::string_view path, int err) const;

  std::string m_root;
  bool m_live = true;
  std::shared_ptr<const FsBackend> m_backend;  // how paths are looked up: live, directory, memory
  std::shared_ptr<FsRecorder> m_recorder;
  std::shared_ptr<const std::map<std::string, ProbeError>> m_failures;  // a capture's "unreadable"
};

/// Maps an errno from open/read to a ProbeError with a readable detail.
ProbeError probe_error_from_errno(int err);

}  // namespace preflight
