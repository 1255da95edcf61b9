// SPDX-License-Identifier: MIT
// Reading a file preflight was pointed at (--config FILE, merge's result files) so that whoever
// planted it cannot make a root preflight block or read outside where it was sent:
//   - it is opened O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY and judged by fstat of that
//     descriptor: a FIFO, a device or a socket opens at once and is refused, never read;
//   - at most a bound is read (a /proc file that says size 0 is read up to the bound too);
//   - an entry of a directory is opened beneath the directory's descriptor (openat2
//     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS; O_NOFOLLOW where the kernel has no openat2), so a
//     symlink that leads out of the directory is refused.
// Mechanism only: the caller words the refusal, and never quotes what it read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace preflight {

/// A directory held open (its descriptor shared by the entries listed in it, closed with the last).
class OpenDir {
 public:
  OpenDir() = default;
  /// O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC of `path` (a symlink followed: the user named
  /// it); empty, with errno set, when `path` is no directory or cannot be opened.
  static OpenDir open(const std::string& path);
  int get() const { return m_fd ? *m_fd : -1; }
  explicit operator bool() const { return get() >= 0; }

 private:
  std::shared_ptr<const int> m_fd;
};

/// A file's text, or why it was not read.
struct BoundedRead {
  enum class Refusal {
    None,        // read: `text` holds it
    Open,        // open() failed (`error`)
    Escapes,     // a symlink that leads out of the directory (or an absolute one, or a magic link)
    Symlink,     // a symlink, refused where the kernel cannot confine it to the directory
    Directory,   // a directory
    NotRegular,  // a FIFO, a device or a socket (`type`)
    TooLarge,    // over the bound (`size`: what fstat said, or the bytes read past the bound)
    Read,        // read() failed (`error`)
  };
  Refusal refusal = Refusal::None;
  int error = 0;
  mode_t type = 0;          // S_IFMT bits of what was opened
  std::uintmax_t size = 0;  // st_size as opened
  bool grew = false;        // more bytes were read than st_size said (and st_size was not 0)
  std::string text;

  bool ok() const { return refusal == Refusal::None; }
  /// "cannot read: No such file or directory", "a FIFO, not a regular file", "a symbolic link
  /// that leads out of the directory", "larger than 1 MiB", … ("" when read).
  std::string problem(std::uintmax_t max_bytes) const;
};

/// "a FIFO", "a character device", "a block device", "a socket", "a directory", "a symbolic link".
std::string file_type_name(mode_t type);

/// Reads the file `path` names (a symlink followed, as the user named it) up to `max_bytes`.
BoundedRead read_regular_file(const std::string& path, std::uintmax_t max_bytes);

/// Reads the entry `name` of the directory open as `dir_fd`, resolved beneath it.
BoundedRead read_regular_beneath(int dir_fd, const std::string& name, std::uintmax_t max_bytes);

/// Whether this kernel has openat2 (false after it answered ENOSYS once).
bool has_openat2();

}  // namespace preflight
