// SPDX-License-Identifier: MIT
// What `run` (rank 0) and `merge` share on the way out: the compatibility data of --matrix, the
// report files, and stdout.
//
// Report files never damage what they are written to. Every --json/--junit/--prom PATH is checked
// before anything is probed (OutputTarget::check: exit 2, naming the option and the path), then
// written by what it is:
//   - a regular file, or a new name in an existing directory: written to a temporary file next to
//     it, flushed to disk, given the old file's mode (and owner, as root), then renamed over it, so
//     a reader (node_exporter's textfile collector, a CI job) never sees half a file;
//   - a symlink: the same, to its final target (the link stays a link);
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
    InPlace,     // a character device, a FIFO, or a regular file in a directory we cannot write
    Descriptor,  // an open descriptor of this process (/dev/stdout, /proc/self/fd/N)
  };
  Kind kind = Kind::Replace;
  std::string option;  // "--json", for messages
  std::string path;    // as given
  std::string target;  // symlinks followed (Replace, InPlace)
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
