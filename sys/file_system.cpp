// SPDX-License-Identifier: MIT
#include "sys/file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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

constexpr int kMaxLinkHops = 40;           // the kernel's own bound (MAXSYMLINKS)
constexpr std::size_t kMaxListed = 100000;  // entries recorded per directory
constexpr std::size_t kMaxLinkText = 1u << 20;

/// readlink(2) of a host path, the whole target however long; nullopt with errno set.
std::optional<std::string> link_text(const std::string& host) {
  std::string buf(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(host.c_str(), buf.data(), buf.size());
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

}  // namespace

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

std::string read_link_text(const std::string& path) { return link_text(path).value_or(std::string()); }

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

void FsRecorder::file(std::string_view path, const std::string& data) {
  std::lock_guard lock(m_mutex);
  if (m_paused) return;
  const std::string live = materialize(path, false);
  if (live.empty() || live == "/") return;
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

FileSystem::FileSystem(std::string root, std::shared_ptr<FsRecorder> recorder)
    : m_root(std::move(root)), m_recorder(std::move(recorder)) {
  while (!m_root.empty() && m_root.back() == '/') m_root.pop_back();
  if (m_root.empty()) return;
  // A capture's manifest names the files that could not be read on the node, and why.
  std::string text;
  if (const int fd = ::open((m_root + "/preflight-capture.json").c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < (64u << 20);) text.append(buf, static_cast<std::size_t>(n));
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

std::string FileSystem::host_path(std::string_view path) const {
  // What a probe hands to a system call (stat, readlink, realpath) is recorded like a read.
  if (FsRecorder* r = active_recorder()) r->path(path);
  return rooted(m_root, path);
}

ProbeError probe_error_from_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return {ProbeErrc::NotFound, "does not exist"};
    case EACCES:
    case EPERM:
      return {ProbeErrc::PermissionDenied, "permission denied"};
    default:
      return {ProbeErrc::Unreadable, std::strerror(err)};
  }
}

Probed<std::string> FileSystem::read(std::string_view path, std::size_t max_bytes) const {
  const std::string real = rooted(m_root, path);
  const std::string source(path);
  const int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const ProbeError e = probe_error_from_errno(errno);
    if (e.code == ProbeErrc::NotFound) {
      if (const ProbeError* f = recorded_failure(path)) return Probed<std::string>::error(*f, source);
    } else if (FsRecorder* r = active_recorder()) {
      r->failed(path, e);
    }
    return Probed<std::string>::error(e, source);
  }
  std::string data;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      if (FsRecorder* r = active_recorder()) r->failed(path, probe_error_from_errno(err));
      return Probed<std::string>::error(probe_error_from_errno(err), source);
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      return Probed<std::string>::error(ProbeErrc::ParseError, "larger than " + format_bytes(max_bytes), source);
    }
  }
  ::close(fd);
  if (FsRecorder* r = active_recorder()) r->file(path, data);
  return Probed<std::string>::ok(std::move(data), source);
}

Probed<std::string> FileSystem::read_at(std::string_view path, std::uint64_t offset, std::size_t size) const {
  const std::string source(path);
  const int fd = ::open(rooted(m_root, path).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Probed<std::string>::error(probe_error_from_errno(errno), source);
  std::string data(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, data.data() + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Probed<std::string>::error(probe_error_from_errno(err), source);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  data.resize(got);
  return Probed<std::string>::ok(std::move(data), source);
}

Probed<std::string> FileSystem::read_line(std::string_view path) const {
  Probed<std::string> p = read(path, 64u << 10);
  if (std::string* v = p.value()) *v = std::string(trim(*v));
  return p;
}

Probed<std::vector<std::string>> FileSystem::list(std::string_view path) const {
  using Result = Probed<std::vector<std::string>>;
  const std::string real = rooted(m_root, path);
  DIR* dir = ::opendir(real.c_str());
  if (dir == nullptr) {
    const ProbeError e = probe_error_from_errno(errno);
    if (e.code == ProbeErrc::NotFound) {
      if (const ProbeError* f = recorded_failure(path)) return Result::error(*f, std::string(path));
    } else if (FsRecorder* r = active_recorder()) {
      r->failed(path, e);
    }
    return Result::error(e, std::string(path));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  if (FsRecorder* r = active_recorder()) r->directory(path, names);
  return Result::ok(std::move(names), std::string(path));
}

bool FileSystem::exists(std::string_view path) const {
  struct stat st {};
  const bool found = ::stat(rooted(m_root, path).c_str(), &st) == 0;
  if (FsRecorder* r = found ? active_recorder() : nullptr) r->path(path);
  return found;
}

Probed<std::string> FileSystem::read_link(std::string_view path) const {
  const std::string source(path);
  std::optional<std::string> target = link_text(rooted(m_root, path));
  if (!target) {
    const int err = errno;
    if (err == EINVAL) {
      if (FsRecorder* r = active_recorder()) r->path(path);  // the file or directory it is instead
      return Probed<std::string>::error(ProbeErrc::ParseError, "is not a symbolic link", source);
    }
    const ProbeError e = probe_error_from_errno(err);
    if (e.code == ProbeErrc::NotFound) {
      if (const ProbeError* f = recorded_failure(path)) return Probed<std::string>::error(*f, source);
    } else if (FsRecorder* r = active_recorder()) {
      r->failed(path, e);
    }
    return Probed<std::string>::error(e, source);
  }
  if (FsRecorder* r = active_recorder()) r->path(path);  // the link, recreated with its chain
  return Probed<std::string>::ok(std::move(*target), source);
}

Probed<std::string> FileSystem::real_path(std::string_view path) const {
  const std::string source(path);
  const auto fail = [&](int err) {
    const ProbeError e = probe_error_from_errno(err);
    if (e.code == ProbeErrc::NotFound) {
      if (const ProbeError* f = recorded_failure(path)) return Probed<std::string>::error(*f, source);
    } else if (FsRecorder* r = active_recorder()) {
      r->failed(path, e);
    }
    return Probed<std::string>::error(e, source);
  };
  const auto found = [&](std::string real) {
    if (FsRecorder* r = active_recorder()) r->path(path);  // the chain of links that led there
    return Probed<std::string>::ok(std::move(real), source);
  };
  if (path.empty()) return fail(ENOENT);
  if (is_live()) {
    char* real = ::realpath(rooted(m_root, path).c_str(), nullptr);
    if (real == nullptr) return fail(errno);
    std::string out(real);
    std::free(real);
    return found(std::move(out));
  }
  struct stat st {};
  if (::stat(rooted(m_root, "/").c_str(), &st) != 0) return fail(errno);
  if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR);
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
    if (::lstat(rooted(m_root, current).c_str(), &st) != 0) return fail(errno);
    if (S_ISDIR(st.st_mode)) continue;
    if (!S_ISLNK(st.st_mode)) {
      if (!pending.empty()) return fail(ENOTDIR);
      continue;
    }
    if (++hops > kMaxLinkHops) return fail(ELOOP);
    const Probed<std::string> target = read_link(current);
    if (!target.ok()) return Probed<std::string>::error(*target.error(), source);
    if (target.value()->empty()) return fail(ENOENT);
    done.pop_back();
    if (target.value()->front() == '/') done.clear();
    push(*target.value());
  }
  return found(absolute_of(done));
}

}  // namespace preflight
