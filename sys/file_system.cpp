// SPDX-License-Identifier: MIT
#include "sys/file_system.hpp"
#include "sys/host_link.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/text.hpp"

namespace preflight {

namespace {

std::string rooted(const std::string& root, std::string_view path) {
  std::string out = root;
  if (path.empty() || path.front() != '/') out += '/';
  out += path;
  return out;
}

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  for (std::string_view part : split(path, '/')) {
    if (!part.empty() && part != ".") out.emplace_back(part);
  }
  return out;
}

std::string absolute_of(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out.empty() ? std::string("/") : out;
}

constexpr int kMaxLinkHops = 40;            // the kernel's own bound (MAXSYMLINKS)
constexpr std::size_t kMaxListed = 100000;  // entries recorded per directory
constexpr std::size_t kMaxLinkText = 1u << 20;

}  // namespace

std::optional<std::string> read_host_link(const std::string& path) {
  std::string buf(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
    if (n < 0) return std::nullopt;
    if (static_cast<std::size_t>(n) < buf.size()) {
      buf.resize(static_cast<std::size_t>(n));
      return buf;
    }
    if (buf.size() >= kMaxLinkText) {
      errno = ENAMETOOLONG;
      return std::nullopt;
    }
    buf.resize(buf.size() * 2);
  }
}

FsRecorder::FsRecorder(std::string dir) : m_dir(std::move(dir)) {
  while (m_dir.size() > 1 && m_dir.back() == '/') m_dir.pop_back();
}

void FsRecorder::set_paused(bool paused) {
  std::lock_guard lock(m_mutex);
  m_paused = paused;
}

bool FsRecorder::paused() const {
  std::lock_guard lock(m_mutex);
  return m_paused;
}

std::string FsRecorder::dest(const std::string& live) const { return m_dir + live; }

void FsRecorder::problem(const std::string& what) {
  if (m_problems.size() < 1000) m_problems.push_back(what);
}

std::vector<std::string> FsRecorder::recorded() const {
  std::lock_guard lock(m_mutex);
  return {m_recorded.begin(), m_recorded.end()};
}

std::vector<std::string> FsRecorder::problems() const {
  std::lock_guard lock(m_mutex);
  return m_problems;
}

namespace {

/// The text of a link recreated at depth `depth` (the number of directories above it, below the
/// capture's root): a relative target that stays inside the root is kept as written; an absolute
/// one, or one that climbs above the root, is rewritten relative to the root, so the kernel never
/// leaves the capture when it follows the link.
std::string capture_link_text(const std::string& target, std::size_t depth, const std::vector<std::string>& dir) {
  if (!target.empty() && target.front() != '/') {
    long d = static_cast<long>(depth);
    bool escapes = false;
    for (const std::string& part : components(target)) {
      d += part == ".." ? -1 : 1;
      if (d < 0) escapes = true;
    }
    if (!escapes) return target;
  }
  // Lexically, clamped at the root (as the kernel clamps ".." at "/").
  std::vector<std::string> abs = target.empty() || target.front() == '/' ? std::vector<std::string>{} : dir;
  for (const std::string& part : components(target)) {
    if (part == "..") {
      if (!abs.empty()) abs.pop_back();
    } else {
      abs.push_back(part);
    }
  }
  std::string out;
  for (std::size_t i = 0; i < depth; ++i) out += "../";
  for (std::size_t i = 0; i < abs.size(); ++i) out += (i ? "/" : "") + abs[i];
  return out.empty() ? std::string(".") : out;
}

std::string read_link_text(const std::string& path) { return read_host_link(path).value_or(std::string()); }

}  // namespace

std::string FsRecorder::materialize(std::string_view path, bool leaf_file) {
  std::vector<std::string> pending = components(path);
  std::reverse(pending.begin(), pending.end());
  std::vector<std::string> done;
  int hops = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::vector<std::string> next = done;
    next.push_back(part);
    const std::string live = absolute_of(next);
    struct stat st {};
    if (::lstat(live.c_str(), &st) != 0) return {};
    if (S_ISLNK(st.st_mode)) {
      if (++hops > kMaxLinkHops) return {};
      const std::string target = read_link_text(live);
      if (target.empty()) return {};
      struct stat existing {};
      if (::lstat(dest(live).c_str(), &existing) != 0) {
        if (::symlink(capture_link_text(target, done.size(), done).c_str(), dest(live).c_str()) != 0) {
          problem(live + ": symlink: " + std::strerror(errno));
        }
      }
      m_recorded.insert(live);
      std::vector<std::string> parts = components(target);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(*it);
      if (target.front() == '/') done.clear();
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (::mkdir(dest(live).c_str(), 0755) != 0 && errno != EEXIST) {
        problem(live + ": mkdir: " + std::strerror(errno));
        return {};
      }
      done = std::move(next);
      continue;
    }
    if (!pending.empty()) return {};  // a file in the middle of a path
    if (leaf_file && S_ISREG(st.st_mode)) {
      const int fd = ::open(dest(live).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd >= 0) ::close(fd);
    }
    done = std::move(next);
  }
  return absolute_of(done);
}

void FsRecorder::filter(std::string path, std::function<std::string(const std::string&)> keep, std::string why) {
  std::lock_guard lock(m_mutex);
  m_filters[std::move(path)] = {std::move(keep), std::move(why)};
}

void FsRecorder::filter_every(std::function<std::string(const std::string&)> keep, std::string why) {
  std::lock_guard lock(m_mutex);
  m_every = {std::move(keep), std::move(why)};
}

std::map<std::string, std::string> FsRecorder::filtered() const {
  std::lock_guard lock(m_mutex);
  return m_filtered;
}

void FsRecorder::file(std::string_view path, const std::string& contents) {
  std::lock_guard lock(m_mutex);
  if (m_paused) return;
  const std::string live = materialize(path, false);
  if (live.empty() || live == "/") return;
  auto filter = m_filters.find(path);
  if (filter == m_filters.end()) filter = m_filters.find(live);
  const Filter* use = filter != m_filters.end() ? &filter->second : (m_every.keep ? &m_every : nullptr);
  std::string kept;
  if (use != nullptr) {
    kept = use->keep(contents);
    if (use != &m_every || kept != contents) m_filtered[live] = use->why;
  }
  const std::string& data = use != nullptr ? kept : contents;
  const std::string out = dest(live);
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    problem(live + ": " + std::strerror(errno));
    return;
  }
  std::size_t put = 0;
  while (put < data.size()) {
    const ssize_t n = ::write(fd, data.data() + put, data.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      problem(live + ": write: " + std::strerror(errno));
      break;
    }
    put += static_cast<std::size_t>(n);
  }
  ::close(fd);
  m_written.insert(live);
  m_recorded.insert(std::string(path));
}

void FsRecorder::directory(std::string_view path, const std::vector<std::string>& names) {
  std::lock_guard lock(m_mutex);
  if (m_paused) return;
  const std::string live = materialize(path, false);
  if (live.empty()) return;
  const std::vector<std::string> dir = components(live);
  std::size_t count = 0;
  for (const std::string& name : names) {
    if (++count > kMaxListed) break;
    if (name.find('/') != std::string::npos || name == "." || name == "..") continue;
    const std::string entry = (live == "/" ? std::string() : live) + "/" + name;
    struct stat st {};
    if (::lstat(entry.c_str(), &st) != 0) continue;
    struct stat existing {};
    const bool present = ::lstat(dest(entry).c_str(), &existing) == 0;
    if (S_ISLNK(st.st_mode)) {
      const std::string target = read_link_text(entry);
      if (!present && !target.empty() &&
          ::symlink(capture_link_text(target, dir.size(), dir).c_str(), dest(entry).c_str()) != 0) {
        problem(entry + ": symlink: " + std::strerror(errno));
      }
    } else if (S_ISDIR(st.st_mode)) {
      if (!present && ::mkdir(dest(entry).c_str(), 0755) != 0) problem(entry + ": mkdir: " + std::strerror(errno));
    } else if (S_ISREG(st.st_mode) && !present) {
      const int fd = ::open(dest(entry).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd >= 0) ::close(fd);
    }
  }
  m_recorded.insert(std::string(path));
}

void FsRecorder::failed(std::string_view path, const ProbeError& error) {
  std::lock_guard lock(m_mutex);
  if (m_paused || m_failed.size() >= 100000) return;
  m_failed[std::string(path)] = error;
  // An empty stand-in left by a listing would read as "": the recorded error stands instead.
  const std::string live = materialize(path, false);
  struct stat st {};
  if (!live.empty() && m_written.count(live) == 0 && ::lstat(dest(live).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    ::unlink(dest(live).c_str());
  }
}

std::map<std::string, ProbeError> FsRecorder::failures() const {
  std::lock_guard lock(m_mutex);
  return m_failed;
}

void FsRecorder::path(std::string_view path) {
  std::lock_guard lock(m_mutex);
  if (m_paused) return;
  if (!materialize(path, true).empty()) m_recorded.insert(std::string(path));
}

namespace {

// ---------------------------------------------------------------------------------------------
// The walk: symbolic links resolved one component at a time inside a root.

/// What the walk asks of a tree about a path whose components before the last are resolved (no
/// link among them): lstat's type, or an errno; a link's text, or an errno.
struct WalkOps {
  std::function<int(const std::string& path, FsStat::Type& type)> lstat;
  std::function<int(const std::string& path, std::string& target)> read_link;
};

/// realpath(3) inside a root: `path` with every link resolved by `ops` (an absolute target restarts
/// at the root, ".." stops at it); with `follow_last` false, a link in the last component is kept
/// (lstat, readlink). 0 and the path in `out`, or the errno: ENOENT, ENOTDIR (a file followed by
/// more components, or by a slash), ELOOP (more than 40 links), or what `ops` failed with.
int walk(std::string_view path, bool follow_last, const WalkOps& ops, std::string& out) {
  if (path.empty()) return ENOENT;
  // The components still to walk, the next one last. A slash after the last component reads as a
  // "." after it, so a file followed by anything at all is ENOTDIR, as realpath(3) finds it.
  std::vector<std::string> pending;
  const auto push = [&pending](std::string_view text) {
    std::vector<std::string> parts;
    for (const std::string_view part : split(text, '/')) {
      if (!part.empty()) parts.emplace_back(part);
    }
    if (!parts.empty() && text.back() == '/') parts.emplace_back(".");
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(std::move(*it));
  };
  push(path);
  std::vector<std::string> done;
  int hops = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    done.push_back(std::move(part));
    const std::string current = absolute_of(done);
    FsStat::Type type = FsStat::Type::Other;
    if (const int err = ops.lstat(current, type); err != 0) return err;
    if (type == FsStat::Type::Directory) continue;
    if (type != FsStat::Type::Link || (pending.empty() && !follow_last)) {
      if (!pending.empty()) return ENOTDIR;
      continue;
    }
    if (++hops > kMaxLinkHops) return ELOOP;
    std::string target;
    if (const int err = ops.read_link(current, target); err != 0) return err;
    if (target.empty()) return ENOENT;
    done.pop_back();
    if (target.front() == '/') done.clear();
    push(target);
  }
  out = absolute_of(done);
  return 0;
}

FsStat::Type type_of(mode_t mode) {
  if (S_ISREG(mode)) return FsStat::Type::File;
  if (S_ISDIR(mode)) return FsStat::Type::Directory;
  if (S_ISLNK(mode)) return FsStat::Type::Link;
  return FsStat::Type::Other;
}

FsStat stat_of(const struct stat& st) {
  FsStat out;
  out.type = type_of(st.st_mode);
  out.size = static_cast<std::uint64_t>(st.st_size);
  out.dev = static_cast<std::uint64_t>(st.st_dev);
  return out;
}

FsStats stats_of(const struct statfs& s) {
  // As statvfs(3) derives them: the fragment size, else the block size.
  const std::uint64_t unit =
      s.f_frsize != 0 ? static_cast<std::uint64_t>(s.f_frsize) : static_cast<std::uint64_t>(s.f_bsize);
  FsStats out;
  out.block_size = unit;
  out.total_bytes = static_cast<std::uint64_t>(s.f_blocks) * unit;
  out.free_bytes = static_cast<std::uint64_t>(s.f_bfree) * unit;
  out.available_bytes = static_cast<std::uint64_t>(s.f_bavail) * unit;
  out.total_inodes = static_cast<std::uint64_t>(s.f_files);
  out.free_inodes = static_cast<std::uint64_t>(s.f_ffree);
  out.fs_type = static_cast<std::uint64_t>(s.f_type);
  out.read_only = (s.f_flags & ST_RDONLY) != 0;
  return out;
}

int read_fd(int fd, std::size_t max_bytes, std::string& out, bool& too_large) {
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      too_large = true;
      return 0;
    }
  }
}

int read_fd_at(int fd, std::uint64_t offset, std::size_t size, std::string& out) {
  out.assign(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, out.data() + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return 0;
}

/// The names in an open directory (the fd is taken over), unsorted.
int list_fd(int fd, std::vector<std::string>& names) {
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return 0;
}

/// readlinkat(2) of an O_PATH | O_NOFOLLOW descriptor of the link itself; EINVAL for anything else.
int read_link_fd(int fd, std::string& out) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  if (!S_ISLNK(st.st_mode)) return EINVAL;
  std::string buf(256, '\0');
  for (;;) {
    const ssize_t n = ::readlinkat(fd, "", buf.data(), buf.size());
    if (n < 0) return errno;
    if (static_cast<std::size_t>(n) < buf.size()) {
      buf.resize(static_cast<std::size_t>(n));
      out = std::move(buf);
      return 0;
    }
    if (buf.size() >= kMaxLinkText) return ENAMETOOLONG;
    buf.resize(buf.size() * 2);
  }
}

/// Closes a descriptor when it goes out of scope.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// The backends FileSystem reads through. Each call answers 0 or the errno it failed with.

class FsBackend {
 public:
  virtual ~FsBackend() = default;
  /// `too_large`: more than max_bytes were there (`out` then holds more than max_bytes).
  virtual int read(std::string_view path, std::size_t max_bytes, std::string& out, bool& too_large) const = 0;
  virtual int read_at(std::string_view path, std::uint64_t offset, std::size_t size, std::string& out) const = 0;
  virtual int list(std::string_view path, std::vector<std::string>& names) const = 0;
  virtual int stat(std::string_view path, bool follow_last, FsStat& out) const = 0;
  virtual int stat_fs(std::string_view path, FsStats& out) const = 0;
  /// EINVAL: the path is no symbolic link.
  virtual int read_link(std::string_view path, std::string& out) const = 0;
  virtual int real_path(std::string_view path, std::string& out) const = 0;
  virtual bool uses_openat2() const { return false; }
  /// Whether a path under this root is a path on this machine (host_path).
  virtual bool has_host_paths() const { return true; }
};

namespace {

/// What reads through file descriptors: each backend says how a path is opened (an fd, or -errno).
class FdBackend : public FsBackend {
 public:
  int read(std::string_view path, std::size_t max_bytes, std::string& out, bool& too_large) const override {
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -fd;
    FdGuard guard{fd};
    return read_fd(fd, max_bytes, out, too_large);
  }
  int read_at(std::string_view path, std::uint64_t offset, std::size_t size, std::string& out) const override {
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -fd;
    FdGuard guard{fd};
    return read_fd_at(fd, offset, size, out);
  }
  int list(std::string_view path, std::vector<std::string>& names) const override {
    const int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -fd;
    return list_fd(fd, names);
  }

 protected:
  virtual int open(std::string_view path, int flags) const = 0;
};

/// The live system: the kernel's own lookups on the path as written.
class LiveBackend final : public FdBackend {
 public:
  int stat(std::string_view path, bool follow_last, FsStat& out) const override {
    struct stat st {};
    const std::string p = rooted({}, path);
    if ((follow_last ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st)) != 0) return errno;
    out = stat_of(st);
    return 0;
  }
  int stat_fs(std::string_view path, FsStats& out) const override {
    struct statfs s {};
    int rc = 0;
    do {
      rc = ::statfs(rooted({}, path).c_str(), &s);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return errno;
    out = stats_of(s);
    return 0;
  }
  int read_link(std::string_view path, std::string& out) const override {
    std::optional<std::string> target = read_host_link(rooted({}, path));
    if (!target) return errno;
    out = std::move(*target);
    return 0;
  }
  int real_path(std::string_view path, std::string& out) const override {
    if (path.empty()) return ENOENT;
    char* real = ::realpath(rooted({}, path).c_str(), nullptr);
    if (real == nullptr) return errno;
    out = real;
    std::free(real);
    return 0;
  }

 protected:
  int open(std::string_view path, int flags) const override {
    const int fd = ::open(rooted({}, path).c_str(), flags);
    return fd >= 0 ? fd : -errno;
  }
};

/// A directory on this machine (--sysroot, a capture): every lookup relative to one descriptor of
/// the root, with openat2(RESOLVE_IN_ROOT) so that links, absolute ones included, and ".." resolve
/// inside it; where openat2 is refused (ENOSYS on kernels before 5.6, EPERM from a seccomp filter),
/// the path is first resolved by the walk inside the root and the link-free result opened.
class DirBackend final : public FdBackend {
 public:
  DirBackend(std::string root, RootLookup lookup) : m_root(std::move(root)), m_lookup(lookup) {}
  ~DirBackend() override {
    if (m_fd >= 0) ::close(m_fd);
  }
  DirBackend(const DirBackend&) = delete;
  DirBackend& operator=(const DirBackend&) = delete;

  int stat(std::string_view path, bool follow_last, FsStat& out) const override {
    const int fd = open(path, O_PATH | O_CLOEXEC | (follow_last ? 0 : O_NOFOLLOW));
    if (fd < 0) return -fd;
    FdGuard guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno;
    out = stat_of(st);
    return 0;
  }
  int stat_fs(std::string_view path, FsStats& out) const override {
    const int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return -fd;
    FdGuard guard{fd};
    struct statfs s {};
    int rc = 0;
    do {
      rc = ::fstatfs(fd, &s);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return errno;
    out = stats_of(s);
    return 0;
  }
  int read_link(std::string_view path, std::string& out) const override {
    const int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -fd;
    FdGuard guard{fd};
    return read_link_fd(fd, out);
  }
  int real_path(std::string_view path, std::string& out) const override {
    int err = 0;
    const int root = root_fd(err);
    if (root < 0) return err;
    struct stat st {};
    if (::fstat(root, &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    return walk(path, true, host_ops(), out);
  }
  bool uses_openat2() const override {
    int err = 0;
    root_fd(err);
    std::lock_guard lock(m_mutex);
    return m_openat2;
  }

 protected:
  int open(std::string_view path, int flags) const override {
    int err = 0;
    const int root = root_fd(err);
    if (root < 0) return -err;
    if (path.empty()) return -ENOENT;
    bool openat2 = false;
    {
      std::lock_guard lock(m_mutex);
      openat2 = m_openat2;
    }
    if (openat2) return open_in_root(root, std::string(path), flags);
    std::string resolved;
    if (const int e = walk(path, (flags & O_NOFOLLOW) == 0, host_ops(), resolved); e != 0) return -e;
    // No link is left on the way; O_NOFOLLOW turns one made since into ELOOP, never a way out.
    const int fd = ::open(rooted(m_root, resolved).c_str(), flags | O_NOFOLLOW);
    return fd >= 0 ? fd : -errno;
  }

 private:
  static int open_in_root(int root, const std::string& path, int flags) {
    struct open_how how {};
    how.flags = static_cast<std::uint64_t>(flags);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    // EAGAIN: a rename raced a ".." lookup; the kernel asks for a retry.
    for (int attempt = 0;; ++attempt) {
      const long fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
      if (fd >= 0) return static_cast<int>(fd);
      if ((errno == EAGAIN && attempt < 16) || errno == EINTR) continue;
      return -errno;
    }
  }

  /// The walk's questions asked of the host's lstat and readlink under the root: safe, as the walk
  /// only asks about paths with no link before their last component.
  WalkOps host_ops() const {
    return {[this](const std::string& p, FsStat::Type& type) {
              struct stat st {};
              if (::lstat(rooted(m_root, p).c_str(), &st) != 0) return errno;
              type = type_of(st.st_mode);
              return 0;
            },
            [this](const std::string& p, std::string& target) {
              std::optional<std::string> text = read_host_link(rooted(m_root, p));
              if (!text) return errno;
              target = std::move(*text);
              return 0;
            }};
  }

  /// The root's descriptor, opened on first use (a test may make the directory after the
  /// FileSystem); -1 and `err` while it cannot be opened.
  int root_fd(int& err) const {
    std::lock_guard lock(m_mutex);
    if (m_fd >= 0) return m_fd;
    const int fd = ::open(m_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      return -1;
    }
    m_fd = fd;
    if (m_lookup == RootLookup::Auto) {
      struct open_how how {};
      how.flags = O_PATH | O_CLOEXEC;
      how.resolve = RESOLVE_IN_ROOT;
      const long probe = ::syscall(SYS_openat2, fd, ".", &how, sizeof how);
      if (probe >= 0) {
        ::close(static_cast<int>(probe));
        m_openat2 = true;
      }
    }
    return m_fd;
  }

  std::string m_root;
  RootLookup m_lookup;
  mutable std::mutex m_mutex;
  mutable int m_fd = -1;
  mutable bool m_openat2 = false;
};

/// A MemoryTree: the walk over its maps, with the errors it injects.
class MemoryBackend final : public FsBackend {
 public:
  explicit MemoryBackend(const MemoryTree& tree) : m_tree(tree) {}

  int read(std::string_view path, std::size_t max_bytes, std::string& out, bool& too_large) const override {
    const MemoryTree::Node* node = nullptr;
    if (const int err = find(path, true, node); err != 0) return err;
    if (node->type == FsStat::Type::Directory) return EISDIR;
    out = node->data.size() > max_bytes ? node->data.substr(0, max_bytes + 1) : node->data;
    too_large = node->data.size() > max_bytes;
    return 0;
  }
  int read_at(std::string_view path, std::uint64_t offset, std::size_t size, std::string& out) const override {
    const MemoryTree::Node* node = nullptr;
    if (const int err = find(path, true, node); err != 0) return err;
    if (node->type == FsStat::Type::Directory) return EISDIR;
    out = offset >= node->data.size() ? std::string() : node->data.substr(static_cast<std::size_t>(offset), size);
    return 0;
  }
  int list(std::string_view path, std::vector<std::string>& names) const override {
    std::string dir;
    if (const int err = resolve(path, true, dir); err != 0) return err;
    const auto it = m_tree.nodes().find(dir);
    if (it->second.type != FsStat::Type::Directory) return ENOTDIR;
    const std::string prefix = dir == "/" ? dir : dir + "/";
    for (auto c = m_tree.nodes().upper_bound(prefix); c != m_tree.nodes().end() && c->first.starts_with(prefix); ++c) {
      const std::string_view name = std::string_view(c->first).substr(prefix.size());
      if (!name.empty() && name.find('/') == std::string_view::npos) names.emplace_back(name);
    }
    return 0;
  }
  int stat(std::string_view path, bool follow_last, FsStat& out) const override {
    const MemoryTree::Node* node = nullptr;
    if (const int err = find(path, follow_last, node); err != 0) return err;
    out = FsStat{};
    out.type = node->type;
    out.size = node->type == FsStat::Type::Directory ? 0 : node->data.size();
    return 0;
  }
  int stat_fs(std::string_view path, FsStats& out) const override {
    std::string at;
    if (const int err = resolve(path, true, at); err != 0) return err;
    for (;;) {
      if (const auto it = m_tree.all_stats().find(at); it != m_tree.all_stats().end()) {
        out = it->second;
        return 0;
      }
      if (at == "/") return EIO;
      const std::size_t slash = at.find_last_of('/');
      at = slash == 0 ? std::string("/") : at.substr(0, slash);
    }
  }
  int read_link(std::string_view path, std::string& out) const override {
    const MemoryTree::Node* node = nullptr;
    if (const int err = find(path, false, node); err != 0) return err;
    if (node->type != FsStat::Type::Link) return EINVAL;
    out = node->data;
    return 0;
  }
  int real_path(std::string_view path, std::string& out) const override { return resolve(path, true, out); }
  bool has_host_paths() const override { return false; }

 private:
  int resolve(std::string_view path, bool follow_last, std::string& out) const {
    const WalkOps ops{[this](const std::string& p, FsStat::Type& type) {
                        if (const auto e = m_tree.errors().find(p); e != m_tree.errors().end()) return e->second;
                        const auto it = m_tree.nodes().find(p);
                        if (it == m_tree.nodes().end()) return ENOENT;
                        type = it->second.type;
                        return 0;
                      },
                      [this](const std::string& p, std::string& target) {
                        target = m_tree.nodes().at(p).data;
                        return 0;
                      }};
    if (const int err = walk(path, follow_last, ops, out); err != 0) return err;
    // The root itself: the walk asks nothing about it.
    if (const auto e = m_tree.errors().find(out); e != m_tree.errors().end()) return e->second;
    return 0;
  }
  int find(std::string_view path, bool follow_last, const MemoryTree::Node*& node) const {
    std::string at;
    if (const int err = resolve(path, follow_last, at); err != 0) return err;
    node = &m_tree.nodes().at(at);
    return 0;
  }

  MemoryTree m_tree;
};

}  // namespace

MemoryTree::MemoryTree() { m_nodes["/"] = Node{FsStat::Type::Directory, {}}; }

MemoryTree::Node& MemoryTree::make(std::string_view path, FsStat::Type type) {
  const std::vector<std::string> parts = components(path);
  std::vector<std::string> at;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    at.push_back(parts[i]);
    m_nodes.try_emplace(absolute_of(at), Node{FsStat::Type::Directory, {}});
  }
  Node& node = m_nodes[absolute_of(parts)];
  node = Node{type, {}};
  return node;
}

MemoryTree& MemoryTree::file(std::string_view path, std::string data) {
  make(path, FsStat::Type::File).data = std::move(data);
  return *this;
}

MemoryTree& MemoryTree::dir(std::string_view path) {
  make(path, FsStat::Type::Directory);
  return *this;
}

MemoryTree& MemoryTree::link(std::string_view path, std::string target) {
  make(path, FsStat::Type::Link).data = std::move(target);
  return *this;
}

MemoryTree& MemoryTree::error(std::string_view path, int err) {
  m_errors[absolute_of(components(path))] = err;
  return *this;
}

MemoryTree& MemoryTree::stats(std::string_view path, const FsStats& stats) {
  m_stats[absolute_of(components(path))] = stats;
  return *this;
}

FileSystem::FileSystem(std::string root, std::shared_ptr<FsRecorder> recorder, RootLookup lookup)
    : m_root(std::move(root)), m_recorder(std::move(recorder)) {
  while (!m_root.empty() && m_root.back() == '/') m_root.pop_back();
  if (m_root.empty()) {
    m_backend = std::make_shared<LiveBackend>();
    return;
  }
  m_live = false;
  m_backend = std::make_shared<DirBackend>(m_root, lookup);
  // A capture's manifest names the files that could not be read on the node, and why.
  std::string text;
  if (const int fd = ::open((m_root + "/preflight-capture.json").c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < (64u << 20);)
      text.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
  }
  if (text.empty()) return;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("unreadable") || !doc.at("unreadable").is_object()) return;
  auto failures = std::make_shared<std::map<std::string, ProbeError>>();
  for (const auto& [path, e] : doc.at("unreadable").items()) {
    if (!e.is_object()) continue;
    const ProbeErrc code = probe_errc_from_string(e.value("error", std::string("unreadable")));
    failures->emplace(path, ProbeError{code == ProbeErrc::NotFound ? ProbeErrc::Unreadable : code,
                                       e.value("detail", std::string("unreadable")) + " (on the captured node)"});
  }
  m_failures = std::move(failures);
}

const ProbeError* FileSystem::recorded_failure(std::string_view path) const {
  if (m_failures == nullptr) return nullptr;
  const auto it = m_failures->find(std::string(path));
  return it == m_failures->end() ? nullptr : &it->second;
}

FsRecorder* FileSystem::active_recorder() const {
  return m_recorder != nullptr && is_live() && !m_recorder->paused() ? m_recorder.get() : nullptr;
}

FileSystem::FileSystem(const MemoryTree& tree)
    : m_root("(memory tree)"), m_live(false), m_backend(std::make_shared<MemoryBackend>(tree)) {}

bool FileSystem::uses_openat2() const { return m_backend->uses_openat2(); }

std::string FileSystem::host_path(std::string_view path) const {
  // What a probe hands to a system call (stat, readlink, realpath) is recorded like a read.
  if (FsRecorder* r = active_recorder()) r->path(path);
  return m_backend->has_host_paths() ? rooted(m_root, path) : std::string();
}

ProbeError probe_error_from_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR: return {ProbeErrc::NotFound, "does not exist"};
    case EACCES:
    case EPERM: return {ProbeErrc::PermissionDenied, "permission denied"};
    default: return {ProbeErrc::Unreadable, std::strerror(err)};
  }
}

ProbeError FileSystem::failure(std::string_view path, int err) const {
  const ProbeError e = probe_error_from_errno(err);
  if (e.code == ProbeErrc::NotFound) {
    if (const ProbeError* f = recorded_failure(path)) return *f;
  } else if (FsRecorder* r = active_recorder()) {
    r->failed(path, e);
  }
  return e;
}

Probed<std::string> FileSystem::read(std::string_view path, std::size_t max_bytes) const {
  const std::string source(path);
  std::string data;
  bool too_large = false;
  if (const int err = m_backend->read(path, max_bytes, data, too_large); err != 0) {
    return Probed<std::string>::error(failure(path, err), source);
  }
  if (too_large)
    return Probed<std::string>::error(ProbeErrc::ParseError, "larger than " + format_bytes(max_bytes), source);
  if (FsRecorder* r = active_recorder()) r->file(path, data);
  return Probed<std::string>::ok(std::move(data), source);
}

Probed<std::string> FileSystem::read_at(std::string_view path, std::uint64_t offset, std::size_t size) const {
  const std::string source(path);
  std::string data;
  if (const int err = m_backend->read_at(path, offset, size, data); err != 0) {
    return Probed<std::string>::error(probe_error_from_errno(err), source);
  }
  return Probed<std::string>::ok(std::move(data), source);
}

Probed<std::string> FileSystem::read_line(std::string_view path) const {
  Probed<std::string> p = read(path, 64u << 10);
  if (std::string* v = p.value()) *v = std::string(trim(*v));
  return p;
}

Probed<std::vector<std::string>> FileSystem::list(std::string_view path) const {
  using Result = Probed<std::vector<std::string>>;
  std::vector<std::string> names;
  if (const int err = m_backend->list(path, names); err != 0)
    return Result::error(failure(path, err), std::string(path));
  std::sort(names.begin(), names.end());
  if (FsRecorder* r = active_recorder()) r->directory(path, names);
  return Result::ok(std::move(names), std::string(path));
}

bool FileSystem::exists(std::string_view path) const {
  FsStat st;
  const bool found = m_backend->stat(path, true, st) == 0;
  if (FsRecorder* r = found ? active_recorder() : nullptr) r->path(path);
  return found;
}

Probed<FsStat> FileSystem::stat(std::string_view path, bool follow_last) const {
  // Recorded as host_path records what a probe hands to stat(2): the path and its links.
  if (FsRecorder* r = active_recorder()) r->path(path);
  FsStat st;
  if (const int err = m_backend->stat(path, follow_last, st); err != 0) {
    return Probed<FsStat>::error(probe_error_from_errno(err), std::string(path));
  }
  return Probed<FsStat>::ok(st, std::string(path));
}

Probed<FsStats> FileSystem::stat_fs(std::string_view path) const {
  if (FsRecorder* r = active_recorder()) r->path(path);
  FsStats s;
  if (const int err = m_backend->stat_fs(path, s); err != 0) {
    return Probed<FsStats>::error(probe_error_from_errno(err), std::string(path));
  }
  return Probed<FsStats>::ok(s, std::string(path));
}

Probed<std::string> FileSystem::read_link(std::string_view path) const {
  const std::string source(path);
  std::string target;
  if (const int err = m_backend->read_link(path, target); err != 0) {
    if (err == EINVAL) {
      if (FsRecorder* r = active_recorder()) r->path(path);  // the file or directory it is instead
      return Probed<std::string>::error(ProbeErrc::ParseError, "is not a symbolic link", source);
    }
    return Probed<std::string>::error(failure(path, err), source);
  }
  if (FsRecorder* r = active_recorder()) r->path(path);  // the link, recreated with its chain
  return Probed<std::string>::ok(std::move(target), source);
}

Probed<std::string> FileSystem::real_path(std::string_view path) const {
  const std::string source(path);
  std::string real;
  if (const int err = m_backend->real_path(path, real); err != 0)
    return Probed<std::string>::error(failure(path, err), source);
  if (FsRecorder* r = active_recorder()) r->path(path);  // the chain of links that led there
  return Probed<std::string>::ok(std::move(real), source);
}

}  // namespace preflight
