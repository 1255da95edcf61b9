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
#include "core/launch.hpp"
#include "core/text.hpp"
#include "sys/host_link.hpp"

namespace preflight {
namespace {

bool use_color(const Options& options, const EnvSnapshot& env) {
  if (options.color) return *options.color == 1;
  if (env.has("NO_COLOR")) return false;
  return is_terminal(STDOUT_FILENO, env);
}

std::string in_quotes(const std::string& path) { return "'" + printable(path, 200) + "'"; }

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

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

/// `path` with every symlink on the way to its last component followed (at most 40, as the
/// kernel allows), the last component's target included even when that target does not exist yet
/// (a dangling link is written through, as `>` would). ELOOP past that.
std::string follow_links(std::string path, const std::string& option) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    const std::optional<std::string> link = read_host_link(path);
    if (!link || link->empty()) {
      throw UsageError(option + " " + in_quotes(path) + ": cannot read the symlink: " + std::strerror(errno));
    }
    path = link->front() == '/' ? *link : directory_of(path) + "/" + *link;
  }
  throw UsageError(option + " " + in_quotes(path) + ": too many levels of symlinks");
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

/// The temporary file next to `target`, mode and owner as the file it replaces (or as a new file
/// would get: 0666 less the umask), written, flushed to disk, renamed over `target`.
void replace_file(const OutputTarget& t, const std::string& contents) {
  const std::size_t slash = t.target.find_last_of('/');
  const std::string dir = directory_of(t.target);
  const std::string name = slash == std::string::npos ? t.target : t.target.substr(slash + 1);
  std::string tmp = dir + "/." + name + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  const auto fail = [&](int err) -> void {
    throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) + ": " + std::strerror(err));
  };
  if (fd < 0) fail(errno);
  int err = 0;
  mode_t mode = t.mode;
  if (!t.exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) err = errno;
  if (err == 0 && t.exists && ::geteuid() == 0) (void)::fchown(fd, t.uid, t.gid);  // best effort
  if (err == 0) err = write_all(fd, contents);
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), t.target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(err);
  }
}

/// Written where it is: a device, a FIFO (with a reader: else ENXIO at once, never a hang), or a
/// regular file in a directory we may not create files in.
void write_in_place(const OutputTarget& t, const std::string& contents) {
  struct stat st {};
  const bool regular = ::stat(t.target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const int fd = ::open(t.target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (regular ? O_TRUNC : O_NONBLOCK));
  if (fd < 0) {
    const int err = errno;
    throw OutputError(
        "cannot write " + t.option + " " + in_quotes(t.path) + ": " +
        (err == ENXIO && S_ISFIFO(st.st_mode) ? std::string("no process reads the FIFO") : std::strerror(err)));
  }
  int err = write_all(fd, contents);
  if (err == 0 && regular && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) throw OutputError("cannot write " + t.option + " " + in_quotes(t.path) + ": " + std::strerror(err));
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
  t.target = follow_links(path, option);
  struct stat st {};
  if (::stat(t.target.c_str(), &st) == 0) {
    t.exists = true;
    if (S_ISREG(st.st_mode)) {
      if (::access(t.target.c_str(), W_OK) != 0) {
        throw UsageError(option + " " + in_quotes(path) + ": the file is not writable (" + std::strerror(errno) + ")");
      }
      const std::string dir = directory_of(t.target);
      t.kind = ::access(dir.c_str(), W_OK | X_OK) == 0 ? Kind::Replace : Kind::InPlace;
      t.mode = st.st_mode & 07777;
      t.uid = st.st_uid;
      t.gid = st.st_gid;
      return t;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      if (::access(t.target.c_str(), W_OK) != 0) {
        throw UsageError(option + " " + in_quotes(path) + ": not writable (" + std::strerror(errno) + ")");
      }
      t.kind = Kind::InPlace;
      return t;
    }
    throw UsageError(option + " " + in_quotes(path) + ": is " + kind_of(st.st_mode) +
                     ", not a file to write a report to");
  }
  if (errno != ENOENT) throw UsageError(option + " " + in_quotes(path) + ": " + std::strerror(errno));
  const std::string dir = directory_of(t.target);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    throw UsageError(option + " " + in_quotes(path) + ": the directory " + in_quotes(dir) + " does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(option + " " + in_quotes(path) + ": cannot create a file in " + in_quotes(dir) + " (" +
                     std::strerror(errno) + ")");
  }
  t.kind = Kind::Replace;
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

std::vector<OutputTarget> check_report_files(const Options& options) {
  std::vector<OutputTarget> out;
  for (const auto& [option, path] : {std::pair{"--json", &options.json_file}, std::pair{"--junit", &options.junit_file},
                                     std::pair{"--prom", &options.prom_file}}) {
    if (path->empty()) continue;
    OutputTarget t = OutputTarget::check(option, *path);
    for (const OutputTarget& other : out) {
      struct stat a {
      }, b{};
      const bool same_file = t.kind != OutputTarget::Kind::Descriptor && other.kind != OutputTarget::Kind::Descriptor &&
                             t.exists && other.exists && ::stat(t.target.c_str(), &a) == 0 &&
                             ::stat(other.target.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
                             S_ISREG(a.st_mode);
      if (same_file || (t.kind != OutputTarget::Kind::Descriptor && t.target == other.target)) {
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
  } catch (const std::runtime_error& e) {  // OutputError, or UsageError from the second check
    std::cerr << "preflight: error: " << e.what() << "\n";
    return to_int(ExitCode::Internal);
  }
  std::string text;
  switch (options.format) {
    case Format::Text: text = render_text(report, options, use_color(options, env)); break;
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
