// SPDX-License-Identifier: MIT
// Paths preflight writes (report files, the per-rank directory, a capture and its archive, the
// /dev/shm allocation test), walked by the kernel one component at a time on descriptors, so that
// a root preflight on a node shared with untrusted users never writes through what another user
// planted:
//   - a symlink is followed only where the kernel's protected_symlinks rule would follow it,
//     whatever the sysctl says, with group-writable sticky directories counted as shared too: the
//     link is the caller's, or its directory is not sticky and writable by others, or the link's
//     owner owns the directory;
//   - where another user's (not root's) symlink leads, only what that user owns is written: an
//     existing file or directory of theirs, or a new one in a directory of theirs or in a sticky
//     shared one; a root preflight is never led to replace or create a file of root's;
//   - an existing file, FIFO or directory in a sticky directory that others may write (/tmp,
//     /dev/shm) is used only when it is the caller's or the directory owner's (the kernel's
//     protected_regular and protected_fifos rules, at their strictest);
//   - new files are created O_EXCL | O_NOFOLLOW, mode 0600, relative to the directory's
//     descriptor; nothing is renamed over a file another user owns that was reached through a
//     link.
// Mechanism only: the caller turns a refusal into its exit code and message.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

namespace preflight {

/// An open descriptor, closed with its last owner.
class SharedFd {
 public:
  SharedFd() = default;
  explicit SharedFd(int fd);
  int get() const { return m_fd ? *m_fd : -1; }
  explicit operator bool() const { return get() >= 0; }

 private:
  std::shared_ptr<const int> m_fd;
};

/// Whether the kernel's protected_symlinks rule lets `follower` follow a link owned by `link_uid`
/// in a directory with status `dir` (a sticky directory that its group may write counts as one
/// that others may write, as in may_use_existing).
bool may_follow_link(const struct stat& dir, uid_t link_uid, uid_t follower);

/// Whether an existing entry (file, FIFO, directory) owned by `owner` in the directory `dir` is
/// one `user` may write into: not planted by a third user in a sticky directory others can write.
bool may_use_existing(const struct stat& dir, uid_t owner, uid_t user);

/// Where a path leads: the directory that holds its last component (an O_PATH descriptor), the
/// component's name there, and what it is now.
struct SafePath {
  std::string path;       // as given, for messages
  SharedFd dir;           // O_PATH | O_DIRECTORY of the directory holding `name`
  std::string dir_path;   // that directory as reached, for messages
  struct stat dir_st {};  // its status
  std::string name;       // the last component ("." when the path names a directory itself)
  bool exists = false;    // `name` exists (not followed: never a symlink once resolved)
  struct stat st {};      // its status when it exists
  bool via_link = false;  // a symlink was followed on the way
  /// The other user (neither root nor the caller) whose symlink was followed: they chose where the
  /// path leads, so what it names must be theirs (or new in a directory of theirs, or in a sticky
  /// directory that others can write); otherwise the walk is refused.
  std::optional<uid_t> link_owner;
  int error = 0;        // errno of the walk (ENOENT: a missing directory), 0 when resolved
  std::string refusal;  // why the walk stopped at a planted link or entry; "" when it did not
  /// "": usable; else one line saying why not (the refusal, or the errno's text with the path).
  std::string problem() const;
  /// The path of `name` in `dir_path`: where the walk stopped (the missing directory on ENOENT).
  std::string stopped_at() const;
};

/// Walks `path` component by component (openat(O_PATH | O_NOFOLLOW)), following symlinks as the
/// rule above allows (40 at most, as the kernel), the last component's link included (a dangling
/// link's target is where a new file would be made). Never throws.
SafePath resolve_path(const std::string& path);

/// `path` as a directory to make files in: walked as resolve_path does, the directory itself entered
/// (name ".", `dir` its descriptor).
SafePath resolve_directory(const std::string& path);

/// What happens to the path's last component once resolved: refused when it is an entry another
/// user planted in a sticky world-writable directory (may_use_existing); "" when usable.
std::string planted_entry(const SafePath& where);

/// A new file in `where.dir`: name `prefix` + random characters, O_CREAT | O_EXCL | O_NOFOLLOW,
/// mode 0600; its name in `name_out`. -1 with errno on failure.
int create_exclusive(const SafePath& where, const std::string& prefix, std::string& name_out);

/// A file with no name in `dir` (O_TMPFILE, mode 0600), else a named one created exclusively and
/// unlinked at once. -1 with errno on failure.
int create_anonymous(const SafePath& where, const std::string& prefix);

/// Makes the directory `path` (mode `mode`) and any missing parents, each walked as resolve_path
/// does; an existing directory must pass may_use_existing. The resolved directory itself (name ".")
/// or the failure.
SafePath make_directories(const std::string& path, mode_t mode);

/// Why a directory is no place for this process's temporary files: owned by another user than
/// root and this one, or writable by others without the sticky bit; "" when it is.
std::string untrusted_directory(const SafePath& dir);
/// The same of the directory that holds `file` (a path resolve_path resolved).
std::string untrusted_parent(const SafePath& file);

/// Why what `path` names (a program to run, a directory it loads code from) could be changed by
/// another user than root and this one: the first component, on the path as written and on its
/// real path, that such a user owns, or that others may write (a directory: unless sticky); ""
/// when none. Components that do not exist end the walk (their parent was judged).
std::string foreign_writable(const std::string& path);

/// The user name of `uid` for messages ("uid 65534 (nobody)").
std::string describe_uid(uid_t uid);

}  // namespace preflight
