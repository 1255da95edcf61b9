// SPDX-License-Identifier: MIT
#include "cli/output.hpp"
#include "core/exit_code.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iostream>
#include <optional>

#include "cli/cli.hpp"
#include "cli/progress.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"
#include "sys/safe_path.hpp"

namespace preflight {
namespace {

bool use_color(const Options& options, const EnvSnapshot& env) {
  if (options.color) return *options.color == 1;
  // no-color.org: a NO_COLOR that is present and not empty, whatever its value, turns colour off
  if (!env.get("NO_COLOR").value_or("").empty()) return false;
  return is_terminal(STDOUT_FILENO, env);
}

std::string in_quotes(const std::string& path) { return "'" + printable(path, 200) + "'"; }

/// The descriptor a path names directly: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N.
std::optional<int> descriptor_path(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    if (path.starts_with(prefix)) {
      const auto n = parse_int(std::string_view(path).substr(prefix.size()));
      if (n && *n >= 0 && *n < (1 << 20)) return static_cast<int>(*n);
    }
  }
  return std::nullopt;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

/// Blocks SIGPIPE in this thread for its lifetime; a SIGPIPE raised meanwhile is consumed, so a
/// closed pipe is an EPIPE to handle, not the end of the process.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    m_was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &m_old);
  }
  ~SigpipeBlocked() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!m_was_pending) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe, nullptr, &now) == SIGPIPE) {}
    }
    pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t m_old{};
  bool m_was_pending = false;
};

/// The directory's descriptor as a path access(2) takes (/proc/self/fd/N), or "" without /proc.
std::string fd_path(const SharedFd& fd) {
  std::string p = "/proc/self/fd/" + std::to_string(fd.get());
  return ::access(p.c_str(), F_OK) == 0 ? p : std::string();
}

/// Whether this process may create files in the resolved directory (true when it cannot tell:
/// the creation says).
bool can_create_in(const SafePath& where) {
  const std::string p = fd_path(where.dir);
  return p.empty() || ::access(p.c_str(), W_OK | X_OK) == 0;
}

[[noreturn]] void write_failed(const OutputTarget& t, int err) {
  throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) + ": " + std::strerror(err));
}

/// A temporary file next to the target, created O_EXCL | O_NOFOLLOW with mode 0600 relative to
/// the directory's descriptor, written, flushed to disk, given the mode and owner of the file it
/// replaces (or a new file's 0666 less the umask), then renamed over the target in that directory.
void replace_file(const OutputTarget& t, const std::string& contents) {
  std::string tmp;
  const int fd = create_exclusive(t.where, "." + t.where.name + ".tmp.", tmp);
  if (fd < 0) write_failed(t, errno);
  const int dir = t.where.dir.get();
  mode_t mode = t.mode;
  if (!t.exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  int err = write_all(fd, contents);
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (err == 0 && t.exists && ::geteuid() == 0) (void)::fchown(fd, t.uid, t.gid);  // best effort
  if (err == 0 && ::fchmod(fd, mode) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::renameat(dir, tmp.c_str(), dir, t.where.name.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlinkat(dir, tmp.c_str(), 0);
    write_failed(t, err);
  }
}

/// A new file at its own name (mode 0666 less the umask), in a directory where another user could
/// replace a temporary file: created O_EXCL | O_NOFOLLOW, so a name planted since the check is
/// never written through.
void create_in_place(const OutputTarget& t, const std::string& contents) {
  const int fd = ::openat(t.where.dir.get(), t.where.name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) {
    throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) +
                      ": a file appeared at the path while preflight ran; nothing was written");
  }
  if (fd < 0) write_failed(t, errno);
  int err = write_all(fd, contents);
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) write_failed(t, err);
}

/// Written where it is: a device, a FIFO (with a reader: else ENXIO at once, never a hang), a
/// regular file in a directory we may not create files in, or another user's file reached through
/// a link. Opened relative to the checked directory without following a link, and only when it is
/// still the file that was checked.
void write_in_place(const OutputTarget& t, const std::string& contents) {
  if (!t.exists) return create_in_place(t, contents);
  const bool regular = S_ISREG(t.where.st.st_mode);
  const int fd = ::openat(t.where.dir.get(), t.where.name.c_str(),
                          O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW | (regular ? 0 : O_NONBLOCK));
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO && S_ISFIFO(t.where.st.st_mode)) {
      throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) + ": no process reads the FIFO");
    }
    write_failed(t, err);
  }
  struct stat now {};
  if (::fstat(fd, &now) != 0 || now.st_dev != t.where.st.st_dev || now.st_ino != t.where.st.st_ino) {
    ::close(fd);
    throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) +
                      ": the file was replaced while preflight ran; nothing was written");
  }
  int err = regular && ::ftruncate(fd, 0) != 0 ? errno : 0;
  if (err == 0) err = write_all(fd, contents);
  if (err == 0 && regular && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) write_failed(t, err);
}

}  // namespace

bool is_terminal(int fd, const EnvSnapshot& env) {
  // Under mpirun or srun a rank's stdout and stderr are a pseudo-terminal the launcher made
  // (Open MPI's iof, srun --pty): whether the user's own output is a terminal or a file
  // (`mpirun … preflight > report.txt`) cannot be told from here, so nothing is decorated.
  if (detect_launchers(env).active() != nullptr) return false;
  return env.get("TERM").value_or("") != "dumb" && ::isatty(fd) == 1;
}

std::optional<CompatMatrix> load_matrix(const Options& options) {
  if (options.matrix_dir.empty()) return std::nullopt;
  try {
    return load_from_dir(options.matrix_dir);
  } catch (const MatrixError& e) {
    throw UsageError(std::string("--matrix: ") + e.what());
  }
}

int write_all(int fd, std::string_view data, int timeout_ms) {
  SigpipeBlocked blocked;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = ::poll(&p, 1, timeout_ms);
      if (ready == 0) return ETIMEDOUT;
      if (ready < 0 && errno != EINTR) return errno;
      continue;
    }
    return n < 0 ? errno : EIO;
  }
  return 0;
}

OutputTarget OutputTarget::check(const std::string& option, const std::string& path) {
  OutputTarget t;
  t.option = option;
  t.path = path;
  if (path.empty()) throw UsageError(option + " '': expected a file name");
  if (const std::optional<int> fd = descriptor_path(path)) {
    const int flags = ::fcntl(*fd, F_GETFL);
    if (flags < 0)
      throw UsageError(option + " " + in_quotes(path) + ": descriptor " + std::to_string(*fd) + " is not open");
    if ((flags & O_ACCMODE) == O_RDONLY) {
      throw UsageError(option + " " + in_quotes(path) + ": descriptor " + std::to_string(*fd) +
                       " is open for reading only");
    }
    t.kind = Kind::Descriptor;
    t.fd = *fd;
    return t;
  }
  t.where = resolve_path(path);
  if (!t.where.refusal.empty()) throw UsageError(option + " " + in_quotes(path) + ": " + t.where.refusal);
  if (t.where.error == ENOENT) {
    throw UsageError(option + " " + in_quotes(path) + ": the directory " + in_quotes(t.where.stopped_at()) +
                     " does not exist");
  }
  if (t.where.error != 0) throw UsageError(option + " " + t.where.problem());
  if (const std::string planted = planted_entry(t.where); !planted.empty()) {
    throw UsageError(option + " " + in_quotes(path) + ": " + planted);
  }
  const std::string dir = t.where.dir_path.empty() ? "/" : t.where.dir_path;
  if (!t.where.exists) {
    if (!can_create_in(t.where)) {
      throw UsageError(option + " " + in_quotes(path) + ": cannot create a file in " + in_quotes(dir) + " (" +
                       std::strerror(errno) + ")");
    }
    // A temporary file's name in a directory another user owns, or may write without the sticky
    // bit, could be theirs by the time it is renamed: the file is made at its own name there.
    t.kind = untrusted_parent(t.where).empty() ? Kind::Replace : Kind::InPlace;
    return t;
  }
  const struct stat& st = t.where.st;
  t.exists = true;
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    throw UsageError(option + " " + in_quotes(path) + ": is " + kind_of(st.st_mode) +
                     ", not a file to write a report to");
  }
  if (::faccessat(t.where.dir.get(), t.where.name.c_str(), W_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno != EINVAL) {
    throw UsageError(option + " " + in_quotes(path) + ": " +
                     (S_ISREG(st.st_mode) ? "the file is not writable" : "not writable") + " (" + std::strerror(errno) +
                     ")");
  }
  t.mode = st.st_mode & 07777;
  t.uid = st.st_uid;
  t.gid = st.st_gid;
  // A file another user owns, reached through a link, keeps its inode: it is written in place,
  // never renamed over.
  const bool others_through_link = t.where.via_link && st.st_uid != ::geteuid();
  t.kind = S_ISREG(st.st_mode) && can_create_in(t.where) && !others_through_link && untrusted_parent(t.where).empty()
               ? Kind::Replace
               : Kind::InPlace;
  return t;
}

void OutputTarget::write(const std::string& contents) const {
  switch (kind) {
    case Kind::Replace: replace_file(*this, contents); return;
    case Kind::InPlace: write_in_place(*this, contents); return;
    case Kind::Descriptor:
      if (const int err = write_all(fd, contents); err != 0) {
        throw OutputError("cannot write " + option + " " + in_quotes(path) + ": " + std::strerror(err));
      }
      return;
  }
}

namespace {

/// Whether two checked targets are one file: the same inode, or the same new name in one directory.
bool same_place(const OutputTarget& a, const OutputTarget& b) {
  if (a.kind == OutputTarget::Kind::Descriptor || b.kind == OutputTarget::Kind::Descriptor) return false;
  const struct stat &x = a.where.st, &y = b.where.st;
  if (a.exists && b.exists) return x.st_dev == y.st_dev && x.st_ino == y.st_ino && S_ISREG(x.st_mode);
  return !a.exists && !b.exists && a.where.dir_st.st_dev == b.where.dir_st.st_dev &&
         a.where.dir_st.st_ino == b.where.dir_st.st_ino && a.where.name == b.where.name;
}

}  // namespace

std::vector<OutputTarget> check_report_files(const Options& options) {
  std::vector<OutputTarget> out;
  for (const auto& [option, path] : {std::pair{"--json", &options.json_file}, std::pair{"--junit", &options.junit_file},
                                     std::pair{"--prom", &options.prom_file}}) {
    if (path->empty()) continue;
    OutputTarget t = OutputTarget::check(option, *path);
    for (const OutputTarget& other : out) {
      if (same_place(t, other)) {
        throw UsageError(std::string(option) + " " + in_quotes(*path) + " and " + other.option + " " +
                         in_quotes(other.path) + " name the same file: one report would overwrite the other");
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

void write_atomically(const std::string& path, const std::string& contents) {
  OutputTarget::check("the result file", path).write(contents);
}

void check_rank_dir(const Options& options) {
  const std::string& dir = options.json_per_rank_dir;
  if (dir.empty()) return;
  const SafePath where = resolve_path(dir);
  const std::string shown = "--json-per-rank " + in_quotes(dir) + ": ";
  if (!where.refusal.empty()) throw UsageError(shown + where.refusal);
  if (const std::string planted = planted_entry(where); !planted.empty()) throw UsageError(shown + planted);
  if (where.error == ENOENT) return;  // made when the rank writes its file, parents too
  if (where.error != 0) throw UsageError("--json-per-rank " + where.problem());
  if (where.exists && !S_ISDIR(where.st.st_mode)) throw UsageError(shown + "exists and is not a directory");
}

SafePath make_rank_dir(const std::string& dir) {
  SafePath where = make_directories(dir, 0755);
  if (const std::string problem = where.problem(); !problem.empty()) {
    throw OutputError("--json-per-rank " + in_quotes(dir) + ": " + problem);
  }
  return where;
}

int emit_report(const Report& report, const Options& options, const EnvSnapshot& env, int verdict_code) {
  try {
    // Checked again: the run may have taken a minute, and what the paths are may have changed.
    const std::vector<OutputTarget> files = check_report_files(options);
    for (const OutputTarget& t : files) {
      const std::string& name = t.option;
      t.write(name == "--json"    ? render_json(report, options)
              : name == "--junit" ? render_junit(report, options)
                                  : render_prometheus(report, options));
    }
  } catch (const UsageError& e) {  // the second check: a path planted while the run went on
    std::cerr << "preflight: error: " << e.what() << "\n";
    return to_int(ExitCode::Usage);
  } catch (const std::runtime_error& e) {  // OutputError: the write itself failed
    std::cerr << "preflight: error: " << e.what() << "\n";
    return to_int(ExitCode::Internal);
  }
  std::string text;
  switch (options.format) {
    case Format::Text:
      text = render_text(report, options, use_color(options, env));
      if (!utf8_terminal(env)) text = ascii_only(text);
      break;
    case Format::Json: text = render_json(report, options); break;
    case Format::Junit: text = render_junit(report, options); break;
    case Format::Prometheus: text = render_prometheus(report, options); break;
  }
  std::cout.flush();
  const int err = write_all(STDOUT_FILENO, text);
  if (err == EPIPE) return verdict_code;  // `preflight | head`: the reader has what it wanted
  if (err != 0) {
    std::cerr << "preflight: error: cannot write the report to standard output: " << std::strerror(err) << "\n";
    return to_int(ExitCode::Internal);
  }
  return verdict_code;
}

}  // namespace preflight
