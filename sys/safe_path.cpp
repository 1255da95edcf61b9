// SPDX-License-Identifier: MIT
// The walk of a path preflight writes, one component at a time on O_PATH descriptors, with the
// kernel's protected_symlinks, protected_regular and protected_fifos rules applied whatever the
// sysctls say (sys/safe_path.hpp).
#include "sys/safe_path.hpp"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <random>
#include <string_view>
#include <vector>

#include "core/text.hpp"

namespace preflight {
namespace {

constexpr int kMaxFollowedLinks = 40;  // as the kernel's MAXSYMLINKS

std::string shown_path(const std::string& path) { return "'" + printable(path.empty() ? "." : path, 200) + "'"; }

bool sticky_and_shared(const struct stat& dir) {
  return (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & (S_IWOTH | S_IWGRP)) != 0;
}

const char* kind_of_entry(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISREG(mode)) return "a file";
  return "an entry";
}

std::deque<std::string> path_parts(std::string_view path) {
  std::deque<std::string> out;
  for (std::string_view part : split(path, '/')) {
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

std::string child_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return "/" + name;
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string random_name_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[12];
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device rd;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string out;
  for (const unsigned char b : bytes) out += kChars[b % (sizeof kChars - 1)];
  return out;
}

/// One walk: resolve_path, or make_directories when `make_mode` is set.
class Walk {
 public:
  Walk(const std::string& path, std::optional<mode_t> make_mode) : m_make(make_mode) {
    m_r.path = path;
    m_euid = ::geteuid();
  }

  SafePath run() {
    if (m_r.path.empty()) return fail(ENOENT);
    const bool absolute = m_r.path.front() == '/';
    if (!start_at(absolute ? "/" : ".")) return m_r;
    m_cur_path = absolute ? "" : ".";
    m_todo = path_parts(m_r.path);
    if (m_todo.empty() || m_make) m_todo.emplace_back(".");  // the directory itself
    while (!m_todo.empty()) {
      std::string c = std::move(m_todo.front());
      m_todo.pop_front();
      const bool last = m_todo.empty();
      if (!(last ? step_last(c) : step(c))) return m_r;
    }
    return m_r;
  }

 private:
  SafePath fail(int err) {
    m_r.error = err;
    return m_r;
  }

  bool start_at(const char* where) {
    const int fd = ::open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      m_r.error = errno;
      return false;
    }
    m_cur = SharedFd(fd);
    m_cur_made = false;
    return stat_current();
  }

  bool stat_current() {
    if (::fstat(m_cur.get(), &m_cur_st) != 0) {
      m_r.error = errno;
      return false;
    }
    return true;
  }

  /// The current directory is where the walk stopped; `name` the component it stopped at.
  bool stop(const std::string& name, int err) {
    m_r.dir = m_cur;
    m_r.dir_path = m_cur_path;
    m_r.dir_st = m_cur_st;
    m_r.name = name;
    m_r.error = err;
    return false;
  }

  /// A component before the last: a directory to enter, or a link to follow.
  bool step(const std::string& c) {
    if (c == ".") return true;
    int fd = ::openat(m_cur.get(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    bool made = false;
    if (fd < 0 && errno == ENOENT && m_make) {
      if (!m_cur_made && !may_make_in(m_cur_st)) return refuse_chosen(c, nullptr);
      if (::mkdirat(m_cur.get(), c.c_str(), *m_make) == 0) {
        made = true;
      } else if (errno != EEXIST) {
        return stop(c, errno);
      }
      fd = ::openat(m_cur.get(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) return stop(c, errno);
    SharedFd entry(fd);
    struct stat st {};
    if (::fstat(entry.get(), &st) != 0) return stop(c, errno);
    if (S_ISLNK(st.st_mode)) return follow(entry, st, c);
    if (!S_ISDIR(st.st_mode)) return stop(c, ENOTDIR);
    if (c != ".." && !may_use_existing(m_cur_st, st.st_uid, m_euid)) return refuse_entry(c, st);
    m_cur = entry;
    m_cur_path = child_path(m_cur_path, c);
    m_cur_made = made;
    return stat_current();
  }

  /// The last component: what the path names, followed when it is a link the rule allows.
  bool step_last(const std::string& c) {
    if (c == "." || c == "..") {
      if (c == ".." && !step(c)) return false;
      m_r.dir = m_cur;
      m_r.dir_path = m_cur_path;
      m_r.dir_st = m_cur_st;
      m_r.name = ".";
      m_r.exists = true;
      m_r.st = m_cur_st;
      return m_cur_made || may_make_in(m_cur_st) || refuse_chosen(".", &m_cur_st);
    }
    struct stat st {};
    if (::fstatat(m_cur.get(), c.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) {
        stop(c, 0);
        return m_cur_made || may_make_in(m_cur_st) || refuse_chosen(c, nullptr);
      }
      return stop(c, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      const int fd = ::openat(m_cur.get(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return stop(c, errno);
      SharedFd link(fd);
      if (::fstat(link.get(), &st) != 0) return stop(c, errno);
      if (S_ISLNK(st.st_mode)) return follow(link, st, c);
    }
    stop(c, 0);
    m_r.exists = true;
    m_r.st = st;
    return !m_r.link_owner || st.st_uid == *m_r.link_owner || refuse_chosen(c, &st);
  }

  /// Whether a file or directory may be made in (or, for a directory the path names, written into)
  /// the directory `dir`: always, unless another user's symlink chose it; then only when that user
  /// owns it, or it is a sticky directory that others can write (where what is made is made
  /// exclusively, and what exists passes may_use_existing).
  bool may_make_in(const struct stat& dir) const {
    return !m_r.link_owner || dir.st_uid == *m_r.link_owner || sticky_and_shared(dir);
  }

  /// Refuses `c` in the current directory, where another user's symlink led: `st` is what exists
  /// there, nullptr when it was to be made.
  bool refuse_chosen(const std::string& c, const struct stat* st) {
    const std::string at = c == "." ? shown_path(m_cur_path) : shown_path(child_path(m_cur_path, c));
    const std::string owner = describe_uid(*m_r.link_owner);
    stop(c, 0);
    m_r.refusal =
        owner + "'s symlink leads to " + at +
        (st != nullptr ? ", " + std::string(kind_of_entry(st->st_mode)) + " owned by " + describe_uid(st->st_uid)
                       : ", to be made in a directory owned by " + describe_uid(m_cur_st.st_uid)) +
        ": preflight writes where another user's link leads only what that user owns; name the path "
        "without the link, or remove it";
    return false;
  }

  bool follow(const SharedFd& link, const struct stat& st, const std::string& c) {
    const std::string at = child_path(m_cur_path, c);
    if (!may_follow_link(m_cur_st, st.st_uid, m_euid)) {
      stop(c, 0);
      m_r.refusal = shown_path(at) + " is a symlink owned by " + describe_uid(st.st_uid) + " in " +
                    shown_path(m_cur_path) +
                    ", a sticky directory that others can write, and neither you nor the directory's owner made it: "
                    "preflight does not follow it (the kernel's protected_symlinks rule); remove it or name "
                    "another path";
      return false;
    }
    if (st.st_uid != m_euid && st.st_uid != 0) {
      if (m_r.link_owner && *m_r.link_owner != st.st_uid) {
        stop(c, 0);
        m_r.refusal = shown_path(at) + " is a symlink owned by " + describe_uid(st.st_uid) + ", on a path that " +
                      describe_uid(*m_r.link_owner) +
                      "'s symlink led to: two other users chose where it goes, and preflight does not follow it; "
                      "name the path without their links";
        return false;
      }
      m_r.link_owner = st.st_uid;
    }
    if (++m_links > kMaxFollowedLinks) return stop(c, ELOOP);
    std::vector<char> buf(4096);
    const ssize_t n = ::readlinkat(link.get(), "", buf.data(), buf.size());
    if (n < 0) return stop(c, errno);
    if (static_cast<std::size_t>(n) >= buf.size()) return stop(c, ENAMETOOLONG);
    const std::string target(buf.data(), static_cast<std::size_t>(n));
    if (target.empty()) return stop(c, ENOENT);
    m_r.via_link = true;
    std::deque<std::string> parts = path_parts(target);
    if (parts.empty()) parts.emplace_back(".");  // "/" itself
    m_todo.insert(m_todo.begin(), parts.begin(), parts.end());
    if (target.front() == '/') {
      m_cur_path.clear();
      return start_at("/");
    }
    return true;
  }

  bool refuse_entry(const std::string& c, const struct stat& st) {
    stop(c, 0);
    m_r.refusal = shown_path(child_path(m_cur_path, c)) + " is " + kind_of_entry(st.st_mode) + " owned by " +
                  describe_uid(st.st_uid) + " in " + shown_path(m_cur_path) +
                  ", a sticky directory that others can write: another user made it, and preflight does not "
                  "write into it (the kernel's protected_regular rule); remove it or name another path";
    return false;
  }

  SafePath m_r;
  std::optional<mode_t> m_make;
  uid_t m_euid = 0;
  SharedFd m_cur;
  struct stat m_cur_st {};
  std::string m_cur_path;
  bool m_cur_made = false;  // this walk made the current directory
  std::deque<std::string> m_todo;
  int m_links = 0;
};

}  // namespace

SharedFd::SharedFd(int fd)
    : m_fd(fd >= 0 ? std::shared_ptr<const int>(new int(fd),
                                                [](const int* p) {
                                                  ::close(*p);
                                                  delete p;
                                                })
                   : nullptr) {}

bool may_follow_link(const struct stat& dir, uid_t link_uid, uid_t follower) {
  if (link_uid == follower) return true;
  if (!sticky_and_shared(dir)) return true;
  return link_uid == dir.st_uid;
}

bool may_use_existing(const struct stat& dir, uid_t owner, uid_t user) {
  if (owner == user || !sticky_and_shared(dir)) return true;
  return owner == dir.st_uid;
}

std::string SafePath::stopped_at() const { return name.empty() ? path : child_path(dir_path, name); }

std::string SafePath::problem() const {
  if (!refusal.empty()) return refusal;
  if (error == 0) return {};
  return shown_path(stopped_at()) + ": " + std::strerror(error);
}

SafePath resolve_path(const std::string& path) { return Walk(path, std::nullopt).run(); }

SafePath resolve_directory(const std::string& path) {
  return Walk(path.empty() ? path : path + "/.", std::nullopt).run();
}

std::string planted_entry(const SafePath& where) {
  if (!where.exists || where.name == "." || may_use_existing(where.dir_st, where.st.st_uid, ::geteuid())) return {};
  return shown_path(child_path(where.dir_path, where.name)) + " is " + kind_of_entry(where.st.st_mode) + " owned by " +
         describe_uid(where.st.st_uid) + " in " + shown_path(where.dir_path) +
         ", a sticky directory that others can write: another user made it, and preflight does not write to it "
         "(the kernel's protected_regular and protected_fifos rules); remove it or name another path";
}

int create_exclusive(const SafePath& where, const std::string& prefix, std::string& name_out) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = prefix + random_name_suffix();
    const int fd =
        ::openat(where.dir.get(), name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
    if (fd >= 0) {
      name_out = std::move(name);
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  errno = EEXIST;
  return -1;
}

int create_anonymous(const SafePath& where, const std::string& prefix) {
  const int fd = ::openat(where.dir.get(), ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
  std::string name;
  const int named = create_exclusive(where, prefix, name);
  if (named >= 0) ::unlinkat(where.dir.get(), name.c_str(), 0);
  return named;
}

SafePath make_directories(const std::string& path, mode_t mode) { return Walk(path, mode).run(); }

namespace {

std::string untrusted(const struct stat& st, const std::string& shown) {
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) return shown + " is owned by " + describe_uid(st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return shown + " is writable by other users and not sticky: any of them may replace what is made there";
  }
  return {};
}

}  // namespace

std::string untrusted_directory(const SafePath& dir) {
  return untrusted(dir.st, shown_path(dir.name == "." ? dir.dir_path : child_path(dir.dir_path, dir.name)));
}

std::string untrusted_parent(const SafePath& file) {
  return untrusted(file.dir_st, shown_path(file.dir_path.empty() ? "/" : file.dir_path));
}

namespace {

std::string foreign_component(const std::string& path) {
  std::string at;
  for (const std::string& part : path_parts(path)) {
    if (part == "." || part == "..") return shown_path(path) + " is not a canonical path";
    at += "/" + part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) return {};
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != ::geteuid()) return shown_path(at) + " is owned by " + describe_uid(st.st_uid);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (std::string why = untrusted(st, shown_path(at)); !why.empty()) return why;
    } else if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      return shown_path(at) + " is owned by " + describe_uid(st.st_uid);
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return shown_path(at) + " is writable by other users";
    }
  }
  return {};
}

}  // namespace

std::string foreign_writable(const std::string& path) {
  if (path.empty() || path.front() != '/') return shown_path(path) + " is not an absolute path";
  if (std::string why = foreign_component(path); !why.empty()) return why;
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return foreign_component(buf);
}

std::string describe_uid(uid_t uid) {
  std::string out = "uid " + std::to_string(uid);
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr && found->pw_name != nullptr) {
    out += " (" + printable(found->pw_name, 64) + ")";
  }
  return out;
}

}  // namespace preflight
