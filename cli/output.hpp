// SPDX-License-Identifier: MIT
// What `run` (rank 0) and `merge` share on the way out: the compatibility data of --matrix, the
// report files, and stdout.
//
// Report files never damage what they are written to. Every --json/--junit/--prom PATH is checked
// before anything is probed (OutputTarget::check: exit 2, naming the option and the path), then
// written by what it is:
//   - a regular file, or a new name in an existing directory: written to a temporary file next to
//     it (O_EXCL, mode 0600), flushed to disk, given the old file's mode (and owner, as root), then
//     renamed over it, so a reader (node_exporter's textfile collector, a CI job) never sees half a
//     file;
//   - a symlink: the same, to its final target (the link stays a link), but only a link the
//     kernel's protected_symlinks rule would follow: one another user planted in a sticky
//     world-writable directory (/tmp) is refused with exit 2, as is a file or FIFO another user
//     made there (sys/safe_path.hpp); another user's link leads only to what that user owns, and
//     another user's file reached through a link is written in place, never renamed over;
//   - a character device or a FIFO (/dev/null, /dev/full, a pipe another process reads): written in
//     place, never replaced; a FIFO nobody reads is an error, not a hang;
//   - /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: written to that descriptor, as a shell
//     redirection would;
//   - a directory, a block device or a socket: refused.
// A failed write or flush (ENOSPC, EIO, EPIPE from a FIFO) of a file or of stdout ends the run with
// exit 5 and one line on stderr; EPIPE on stdout (`preflight | head`) ends quietly with the
// verdict's exit code.
#pragma once

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/options.hpp"
#include "matrix/compat_matrix.hpp"
#include "report/report.hpp"
#include "sys/safe_path.hpp"

namespace preflight {

/// --matrix DIR, loaded and validated once before anything else (a bad file: UsageError, exit 2).
std::optional<CompatMatrix> load_matrix(const Options& options);

/// A report that could not be written (exit 5): what() is the one line for stderr.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A checked place to write a report to.
struct OutputTarget {
  enum class Kind {
    Replace,     // a regular file or a new name: temporary file + rename
    InPlace,     // a character device, a FIFO, a regular file in a directory we cannot write, or any
                 // file in a directory another user may change (a new one created O_EXCL there)
    Descriptor,  // an open descriptor of this process (/dev/stdout, /proc/self/fd/N)
  };
  Kind kind = Kind::Replace;
  std::string option;  // "--json", for messages
  std::string path;    // as given
  SafePath where;      // the resolved path (Replace, InPlace): its directory's descriptor and name
  int fd = -1;         // Descriptor
  bool exists = false;
  mode_t mode = 0;  // the existing file's permission bits (Replace)
  uid_t uid = 0;
  gid_t gid = 0;

  /// Decides how `path` will be written; throws UsageError when it cannot be (a directory, a
  /// missing or unwritable directory, a block device, a socket, a closed descriptor).
  static OutputTarget check(const std::string& option, const std::string& path);
  /// Writes `contents` as check() decided; throws OutputError naming the option and the path.
  void write(const std::string& contents) const;
};

/// The report files a run asked for (--json, --junit, --prom), checked; throws UsageError. Two
/// options naming the same file are refused.
std::vector<OutputTarget> check_report_files(const Options& options);

/// Writes `contents` to a new or regular file at `path` as OutputTarget does (merge's and the
/// ranks' own files); throws OutputError.
void write_atomically(const std::string& path, const std::string& contents);

/// --json-per-rank DIR, checked before anything is probed: an existing directory this process may
/// write into, or one it can make, walked as the report files are (a link or a directory another
/// user planted in a sticky world-writable directory is refused); throws UsageError.
void check_rank_dir(const Options& options);

/// --json-per-rank DIR made (mode 0755, parents too) as check_rank_dir walks it, for this rank's
/// file; throws OutputError.
SafePath make_rank_dir(const std::string& dir);

/// Whether `fd` is a terminal worth decorating (colour, the progress line): a TTY, TERM not "dumb",
/// and not a rank started by a launcher (its TTY is the launcher's, not the user's).
bool is_terminal(int fd, const EnvSnapshot& env);

/// The files asked for (--json, --junit, --prom), then the chosen format on stdout; colour as
/// --color says, else on a terminal without NO_COLOR. Returns the exit code the run ends with:
/// `verdict_code`, or 5 when a file or stdout could not be written (said on stderr); EPIPE on
/// stdout keeps `verdict_code`.
int emit_report(const Report& report, const Options& options, const EnvSnapshot& env, int verdict_code);

/// Writes all of `data` to `fd` (EINTR and EAGAIN retried, for at most `timeout_ms` without
/// progress, SIGPIPE blocked in this thread while writing). Returns 0 or the errno of the failure
/// (ETIMEDOUT when the reader stopped reading).
int write_all(int fd, std::string_view data, int timeout_ms = 10000);

}  // namespace preflight
