// SPDX-License-Identifier: MIT
#include "sys/contained.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "core/text.hpp"
#include "sys/host_link.hpp"

extern char** environ;

namespace preflight {

namespace {

using Clock = std::chrono::steady_clock;

/// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : m_fd(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ~Fd() { reset(); }

  int get() const { return m_fd; }
  bool valid() const { return m_fd >= 0; }
  int release() {
    const int fd = m_fd;
    m_fd = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (m_fd >= 0) ::close(m_fd);  // not retried on EINTR: on Linux the fd is released anyway
    m_fd = fd;
  }

 private:
  int m_fd = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

bool make_pipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  p.read.reset(fds[0]);
  p.write.reset(fds[1]);
  return true;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// The environment for the helper: ours with `extra` applied ("NAME=value" sets, "NAME" removes).
std::vector<std::string> build_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& entry : extra) {
    const std::size_t eq = entry.find('=');
    const std::string_view name = std::string_view(entry).substr(0, eq);
    if (name.empty()) continue;
    std::erase_if(env, [name](const std::string& existing) {
      return existing.size() > name.size() && existing.compare(0, name.size(), name) == 0 &&
             existing[name.size()] == '=';
    });
    if (eq != std::string::npos) env.push_back(entry);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// Blocks SIGPIPE in this thread for the lifetime of the object (so writing to a helper that
/// exited gives EPIPE, not death), and swallows a SIGPIPE we caused before restoring the mask.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    m_was_pending = sigpipe_pending();
    const sigset_t pipe_set = sigpipe_set();
    m_active = ::pthread_sigmask(SIG_BLOCK, &pipe_set, &m_old) == 0;
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  ~SigpipeGuard() {
    if (!m_active) return;
    if (!m_was_pending && sigpipe_pending()) {
      const sigset_t pipe_set = sigpipe_set();
      const timespec zero{0, 0};
      while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {}
    }
    ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
  }
  const sigset_t& old_mask() const { return m_old; }

 private:
  static sigset_t sigpipe_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    return set;
  }
  static bool sigpipe_pending() {
    sigset_t pending;
    sigemptyset(&pending);
    return ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }

  sigset_t m_old{};
  bool m_was_pending = false;
  bool m_active = false;
};

enum class ChildState { Running, Zombie, Gone };

/// Has the child exited? Does not reap it (WNOWAIT), so its pid — and so its process group id —
/// cannot be reused while we still signal the group. Gone: someone else reaped it (SIGCHLD
/// ignored by the application), so its pid must not be signalled any more.
ChildState child_state(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  for (;;) {
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      return info.si_pid == pid ? ChildState::Zombie : ChildState::Running;
    }
    if (errno != EINTR) return ChildState::Gone;
  }
}

void kill_group(pid_t pid) {
  // The helper leads its own process group (POSIX_SPAWN_SETPGROUP): this takes its descendants
  // too. Fall back to the pid alone if the group is somehow gone.
  if (::kill(-pid, SIGKILL) != 0) ::kill(pid, SIGKILL);
}

/// A descriptor that becomes readable when `pid` exits (pidfd_open, Linux 5.3), so that the wait
/// below sleeps in poll() until the child's exit or its output instead of waking to ask. -1 where
/// the kernel (or a seccomp filter) has none: the wait then looks at the child every 10 ms.
int open_exit_fd(pid_t pid) {
#ifndef SYS_pidfd_open
  constexpr long SYS_pidfd_open = 434;  // the same number on every architecture
#endif
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);  // close-on-exec always
  if (fd < 0) return -1;
  return static_cast<int>(fd);
}

/// Makes our children ours to reap. A parent that ignores SIGCHLD passes that on through exec (a
/// Python wrapper with signal(SIGCHLD, SIG_IGN), some init scripts), and then — or with
/// SA_NOCLDWAIT — the kernel reaps every child at its exit: a helper's exit status (how a crash, a
/// failed init and a clean exit are told apart) would be lost, and every helper would read
/// "exited (status unknown)". The disposition is the process's, and this process runs helpers.
void keep_child_statuses() {
  struct sigaction current {};
  if (::sigaction(SIGCHLD, nullptr, &current) != 0) return;
  const bool ignored = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN;
  if (!ignored && (current.sa_flags & SA_NOCLDWAIT) == 0) return;
  if (ignored) {
    current.sa_handler = SIG_DFL;
    current.sa_flags = 0;
  }
  current.sa_flags &= ~SA_NOCLDWAIT;
  ::sigaction(SIGCHLD, &current, nullptr);
}

/// Reaps the child, waiting at most `grace`. Returns the wait status, or nullopt if it could not be reaped in time.
std::optional<int> reap(pid_t pid, std::chrono::milliseconds grace) {
  const Clock::time_point until = Clock::now() + grace;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;  // ECHILD: someone else reaped it
    if (r == 0) {
      if (Clock::now() >= until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

/// Reads what is available on `fd` into `sink` (keeping at most `cap` bytes). Returns false at
/// EOF or on a read error. `overflow` is set when more than `cap` bytes arrived.
bool drain(int fd, std::string& sink, std::size_t cap, bool& overflow) {
  std::array<char, 65536> buf;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      const auto got = static_cast<std::size_t>(n);
      const std::size_t room = cap > sink.size() ? cap - sink.size() : 0;
      sink.append(buf.data(), std::min(room, got));
      if (got > room) overflow = true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

}  // namespace

const char* to_string(ContainedOutcome outcome) {
  switch (outcome) {
    case ContainedOutcome::Exited: return "exited";
    case ContainedOutcome::Signaled: return "signaled";
    case ContainedOutcome::TimedOut: return "timed_out";
    case ContainedOutcome::SpawnFailed: return "spawn_failed";
    case ContainedOutcome::OutputTooLarge: return "output_too_large";
    case ContainedOutcome::Cancelled: return "cancelled";
  }
  return "unknown";
}

std::string signal_name(int signal) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},   {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"},     {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},     {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"},     {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"},   {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},   {SIGCHLD, "SIGCHLD"},
      {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},   {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},   {SIGXFSZ, "SIGXFSZ"},
      {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGIO, "SIGIO"},
      {SIGPWR, "SIGPWR"},       {SIGSYS, "SIGSYS"},
  };
  for (const auto& [number, name] : kNames) {
    if (number == signal) return name;
  }
  return "signal " + std::to_string(signal);
}

ContainedResult run_contained(const ContainedRequest& request) {
  ContainedResult result;
  result.deadline_s = std::chrono::duration<double>(request.deadline).count();
  result.max_output = request.max_output;

  SigpipeGuard sigpipe_guard;

  Pipe in, out, err;
  if (!make_pipe(in) || !make_pipe(out) || !make_pipe(err)) {
    result.outcome = ContainedOutcome::SpawnFailed;
    result.spawn_errno = errno;
    return result;
  }

  std::vector<std::string> argv_strings;
  argv_strings.push_back(request.executable);
  argv_strings.insert(argv_strings.end(), request.args.begin(), request.args.end());
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<std::string> env_strings = build_environment(request.extra_env);
  std::vector<char*> envp = pointers(env_strings);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int rc = ::posix_spawn_file_actions_init(&actions);
  if (rc != 0) {
    result.outcome = ContainedOutcome::SpawnFailed;
    result.spawn_errno = rc;
    return result;
  }
  rc = ::posix_spawnattr_init(&attr);
  if (rc != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    result.outcome = ContainedOutcome::SpawnFailed;
    result.spawn_errno = rc;
    return result;
  }
  // dup2 clears FD_CLOEXEC on the copies; every other descriptor of ours is O_CLOEXEC or closed.
  ::posix_spawn_file_actions_adddup2(&actions, in.read.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, out.write.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, err.write.get(), STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // fds someone opened without O_CLOEXEC
#endif
  // Own process group (so a kill takes grandchildren), default signal dispositions, empty mask
  // (we block SIGPIPE here; the helper must not inherit that).
  sigset_t defaults;
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  sigset_t empty;
  sigemptyset(&empty);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setsigmask(&attr, &empty);

  keep_child_statuses();
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + request.deadline;
  pid_t pid = -1;
  rc = ::posix_spawn(&pid, request.executable.c_str(), &actions, &attr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    result.outcome = ContainedOutcome::SpawnFailed;
    result.spawn_errno = rc;
    result.elapsed_s = seconds_since(start);
    return result;
  }
  result.pid = pid;
  // Opened before anything reaps the child (nothing does until reap() below: child_state uses
  // WNOWAIT), so the pid it names is this child's.
  Fd exit_fd(open_exit_fd(pid));

  // Our copies of the child's ends must go, or we never see EOF.
  in.read.reset();
  out.write.reset();
  err.write.reset();
  set_nonblocking(in.write.get());
  set_nonblocking(out.read.get());
  set_nonblocking(err.read.get());

  std::size_t written = 0;
  if (request.stdin_data.empty()) in.write.reset();

  bool exited = false;
  bool exit_signalled = false;  // the pidfd was readable at the last poll
  bool timed_out = false;
  bool cancelled = false;
  bool too_large = false;
  bool err_overflow = false;
  double elapsed_at_end = 0.0;

  // Phase 1: until the child exits, the deadline passes or stdout overflows.
  // Phase 2 (child exited): drain what is left in the pipes, still bounded by the deadline.
  for (;;) {
    if (!exited) {
      const ChildState state = child_state(pid);
      if (state == ChildState::Running && exit_signalled) exit_fd.reset();  // never spin on a pidfd that disagrees
      exit_signalled = false;
      if (state != ChildState::Running) {
        exited = true;
        elapsed_at_end = seconds_since(start);
        // Leftover descendants may hold our pipes open; the zombie keeps the pgid reserved.
        if (state == ChildState::Zombie) kill_group(pid);
        in.write.reset();
      }
    }
    const bool pipes_open = out.read.valid() || err.read.valid();
    if (exited && !pipes_open) break;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      if (!exited) {
        timed_out = true;
        elapsed_at_end = seconds_since(start);
        kill_group(pid);
        // What the helper wrote just before the kill is evidence (e.g. the step it was in): take
        // what is already in the pipes, without waiting (the pipes are non-blocking).
        if (out.read.valid()) drain(out.read.get(), result.out, request.max_output, too_large);
        if (err.read.valid()) drain(err.read.get(), result.err, request.max_output, err_overflow);
      }
      break;
    }

    std::array<pollfd, 5> fds{};
    nfds_t count = 0;
    const auto add = [&](const Fd& fd, short events) {
      if (fd.valid()) fds[count++] = pollfd{fd.get(), events, 0};
    };
    add(out.read, POLLIN);
    add(err.read, POLLIN);
    add(in.write, POLLOUT);
    // The child's exit must be noticed even when descendants keep the pipes open (or it closed
    // them): its pidfd wakes the poll; without one, short ticks while it runs.
    if (!exited) add(exit_fd, POLLIN);
    if (!exited && request.cancel_fd >= 0) fds[count++] = pollfd{request.cancel_fd, POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + std::chrono::milliseconds(1);
    if (!exited && !exit_fd.valid()) wait = std::min(wait, std::chrono::milliseconds(10));
    const int ready = ::poll(fds.data(), count, static_cast<int>(wait.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // ENOMEM: try again, deadline holds
      continue;
    }
    for (nfds_t i = 0; i < count; ++i) {
      const pollfd& p = fds[i];
      if (p.revents == 0) continue;
      if (p.fd == exit_fd.get()) {
        exit_signalled = true;
      } else if (p.fd == request.cancel_fd) {
        cancelled = true;
      } else if (p.fd == out.read.get()) {
        if (!drain(p.fd, result.out, request.max_output, too_large)) out.read.reset();
      } else if (p.fd == err.read.get()) {
        if (!drain(p.fd, result.err, request.max_output, err_overflow)) err.read.reset();
      } else if (p.fd == in.write.get()) {
        for (;;) {
          const std::size_t left = request.stdin_data.size() - written;
          if (left == 0) {
            in.write.reset();
            break;
          }
          const ssize_t n = ::write(p.fd, request.stdin_data.data() + written, left);
          if (n > 0) {
            written += static_cast<std::size_t>(n);
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
          in.write.reset();  // EPIPE: the helper does not want (more) input
          break;
        }
      }
    }
    if ((too_large || cancelled) && !exited) {
      elapsed_at_end = seconds_since(start);
      kill_group(pid);
      break;
    }
    cancelled = false;  // the helper had exited by itself: its own outcome stands
  }

  in.write.reset();
  out.read.reset();
  err.read.reset();

  const std::optional<int> status = reap(pid, exited ? std::chrono::milliseconds(1000) : request.kill_grace);
  result.reaped = status.has_value();
  result.elapsed_s = elapsed_at_end;
  result.err_truncated = err_overflow;

  if (timed_out) {
    result.outcome = ContainedOutcome::TimedOut;
  } else if (cancelled) {
    result.outcome = ContainedOutcome::Cancelled;
  } else if (too_large && !exited) {
    result.outcome = ContainedOutcome::OutputTooLarge;
  } else if (status && WIFSIGNALED(*status)) {
    result.outcome = ContainedOutcome::Signaled;
    result.signal = WTERMSIG(*status);
    result.signal_name = signal_name(result.signal);
  } else if (status && WIFEXITED(*status)) {
    result.outcome = ContainedOutcome::Exited;
    result.exit_code = WEXITSTATUS(*status);
    if (too_large) result.outcome = ContainedOutcome::OutputTooLarge;
  } else {
    // Exited per waitid but could not be reaped (someone else reaped it): report what we know.
    result.outcome = ContainedOutcome::Exited;
  }
  return result;
}

std::string ContainedResult::describe() const {
  switch (outcome) {
    case ContainedOutcome::Exited:
      if (exit_code < 0) return "exited (status unknown)";
      return "exited with status " + std::to_string(exit_code);
    case ContainedOutcome::Signaled: return "crashed with " + signal_name + " after " + fixed(elapsed_s, 1) + " s";
    case ContainedOutcome::TimedOut:
      return "did not finish within " + fixed(deadline_s, 1) + " s (killed" +
             (reaped ? std::string(")") : std::string(", but it did not die)"));
    case ContainedOutcome::SpawnFailed: return std::string("could not start: ") + std::strerror(spawn_errno);
    case ContainedOutcome::OutputTooLarge:
      return "wrote more than " + format_bytes(max_output) + " on its output (killed after " + fixed(elapsed_s, 1) +
             " s)";
    case ContainedOutcome::Cancelled:
      return "stopped by preflight after " + fixed(elapsed_s, 1) + " s (its work could no longer complete)";
  }
  return "unknown outcome";
}

std::string ContainedResult::stderr_tail(std::size_t max_len) const {
  std::string_view rest = err;
  while (!rest.empty()) {
    const std::size_t nl = rest.find_last_of('\n');
    const std::string_view line = trim(nl == std::string_view::npos ? rest : rest.substr(nl + 1));
    if (!line.empty()) return printable(line, max_len);
    if (nl == std::string_view::npos) break;
    rest = rest.substr(0, nl);
  }
  return {};
}

ProbeError ContainedResult::to_probe_error() const {
  switch (outcome) {
    case ContainedOutcome::TimedOut: return {ProbeErrc::Timeout, describe()};
    case ContainedOutcome::Signaled: return {ProbeErrc::Crashed, describe()};
    case ContainedOutcome::SpawnFailed:
      return {spawn_errno == ENOENT   ? ProbeErrc::NotFound
              : spawn_errno == EACCES ? ProbeErrc::PermissionDenied
                                      : ProbeErrc::Unreadable,
              describe()};
    case ContainedOutcome::OutputTooLarge: return {ProbeErrc::ParseError, describe()};
    case ContainedOutcome::Cancelled: return {ProbeErrc::NotProbed, describe()};
    case ContainedOutcome::Exited: break;
  }
  const std::string tail = stderr_tail();
  return {ProbeErrc::ApiError, tail.empty() ? describe() : describe() + ": " + tail};
}

// ---- helper_path -------------------------------------------------------------------------------

std::string helper_path(std::string_view name, std::string_view exe_path, std::string_view override_dir) {
  namespace fs = std::filesystem;
  if (!override_dir.empty()) return (fs::path(override_dir) / fs::path(name)).lexically_normal().string();
  const fs::path dir = fs::path(exe_path).parent_path();
  const fs::path beside = (dir / fs::path(name)).lexically_normal();
  const fs::path libexec = (dir / ".." / "libexec" / "preflight" / fs::path(name)).lexically_normal();
  for (const fs::path& candidate : {beside, libexec}) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return beside.string();
}

std::string helper_path(std::string_view name) {
  const std::string exe = read_host_link("/proc/self/exe").value_or("");
  const char* override_dir = std::getenv("PREFLIGHT_HELPER_DIR");
  return helper_path(name, exe, override_dir != nullptr ? override_dir : "");
}

// ---- protocol ----------------------------------------------------------------------------------

ContainedJson parse_contained_json(const ContainedResult& result) {
  ContainedJson parsed;
  if (!result.clean()) {
    parsed.error = result.describe();
    if (result.outcome == ContainedOutcome::Exited || result.outcome == ContainedOutcome::Signaled) {
      const std::string tail = result.stderr_tail();
      if (!tail.empty()) parsed.error += ": " + tail;
    }
    return parsed;
  }
  if (trim(result.out).empty()) {
    parsed.error = "nothing on the helper's pipe (it exited with status 0 but wrote no output)";
    return parsed;
  }
  try {
    parsed.value = nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::parse_error& e) {
    const std::string where = e.byte > result.out.size() ? "truncated: the document stops after " +
                                                               std::to_string(result.out.size()) + " bytes"
                                                         : "not JSON at byte " + std::to_string(e.byte);
    parsed.error = "garbage on the helper's pipe: '" + printable(result.out, 80) + "' (" + where + ")";
  } catch (const nlohmann::json::exception& e) {
    parsed.error = "garbage on the helper's pipe: " + printable(e.what(), 120);
  }
  return parsed;
}

EventLines for_each_event(std::string_view out,
                          const std::function<bool(const std::string& event, const nlohmann::json& doc)>& on_event) {
  EventLines read;
  for (const std::string_view raw : split(out, '\n')) {
    const std::string line(trim(raw));
    if (line.empty()) continue;
    ++read.lines;
    const nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("event") || !doc.at("event").is_string()) {
      ++read.bad;
      continue;
    }
    try {
      if (!on_event(doc.at("event").get<std::string>(), doc)) ++read.bad;
    } catch (const nlohmann::json::exception&) {
      ++read.bad;
    }
  }
  return read;
}

}  // namespace preflight
