// SPDX-License-Identifier: MIT
// Bounded, non-blocking reads of files preflight was pointed at, and of a directory's entries
// beneath the directory (sys/bounded_read.hpp).
#include "sys/bounded_read.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/text.hpp"

namespace preflight {
namespace {

constexpr int kReadFlags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;

std::atomic<bool> g_openat2_missing{false};

/// Closes the descriptor it holds.
class ClosingFd {
 public:
  explicit ClosingFd(int fd) : m_fd(fd) {}
  ClosingFd(const ClosingFd&) = delete;
  ClosingFd& operator=(const ClosingFd&) = delete;
  ~ClosingFd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  int get() const { return m_fd; }

 private:
  int m_fd;
};

BoundedRead refused(BoundedRead::Refusal why, int error = 0) {
  BoundedRead r;
  r.refusal = why;
  r.error = error;
  return r;
}

/// Reads until end of file or one byte past `max_bytes`.
BoundedRead read_descriptor(int fd, std::uintmax_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return refused(BoundedRead::Refusal::Read, errno);
  BoundedRead r;
  r.type = st.st_mode & S_IFMT;
  r.size = static_cast<std::uintmax_t>(st.st_size);
  if (S_ISDIR(st.st_mode)) return refused(BoundedRead::Refusal::Directory);
  if (!S_ISREG(st.st_mode)) {
    r.refusal = BoundedRead::Refusal::NotRegular;
    return r;
  }
  if (r.size > max_bytes) {
    r.refusal = BoundedRead::Refusal::TooLarge;
    return r;
  }
  const std::size_t limit = static_cast<std::size_t>(max_bytes) + 1;
  r.text.resize(std::min<std::size_t>(limit, r.size > 0 ? static_cast<std::size_t>(r.size) + 1 : 65536));
  std::size_t have = 0;
  for (;;) {
    if (have == r.text.size()) {
      if (have >= limit) break;
      r.text.resize(std::min(limit, have * 2));
    }
    const ssize_t n = ::read(fd, r.text.data() + have, r.text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return refused(BoundedRead::Refusal::Read, errno);
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  r.text.resize(have);
  r.grew = r.size > 0 && have > r.size;
  if (have > max_bytes) {
    r.refusal = BoundedRead::Refusal::TooLarge;
    r.size = have;
    r.text.clear();
  }
  return r;
}

int open_beneath(int dir_fd, const std::string& name, BoundedRead::Refusal& why) {
  if (!g_openat2_missing.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(kReadFlags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EXDEV || errno == ELOOP) why = BoundedRead::Refusal::Escapes;
    if (errno != ENOSYS) return -1;
    g_openat2_missing.store(true, std::memory_order_relaxed);
  }
  // No openat2: no symlink at all, whether it stays inside or not.
  const int fd = ::openat(dir_fd, name.c_str(), kReadFlags | O_NOFOLLOW);
  if (fd < 0 && errno == ELOOP) why = BoundedRead::Refusal::Symlink;
  return fd;
}

}  // namespace

OpenDir OpenDir::open(const std::string& path) {
  OpenDir dir;
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    dir.m_fd = std::shared_ptr<const int>(new int(fd), [](const int* p) {
      ::close(*p);
      delete p;
    });
  }
  return dir;
}

std::string file_type_name(mode_t type) {
  switch (type & S_IFMT) {
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFDIR: return "a directory";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
  }
}

std::string BoundedRead::problem(std::uintmax_t max_bytes) const {
  switch (refusal) {
    case Refusal::None: return "";
    case Refusal::Open: return std::string("cannot read: ") + std::strerror(error);
    case Refusal::Escapes: return "a symbolic link that leads out of the directory (not followed)";
    case Refusal::Symlink:
      return "a symbolic link (not followed: this kernel has no openat2 to keep it inside the directory)";
    case Refusal::Directory: return "a directory, not a file";
    case Refusal::NotRegular: return file_type_name(type) + ", not a regular file";
    case Refusal::TooLarge: return "larger than " + format_bytes(max_bytes);
    case Refusal::Read: return std::string("cannot read: ") + std::strerror(error);
  }
  return "cannot read";
}

BoundedRead read_regular_file(const std::string& path, std::uintmax_t max_bytes) {
  const ClosingFd fd(::open(path.c_str(), kReadFlags));
  if (fd.get() < 0) return refused(BoundedRead::Refusal::Open, errno);
  return read_descriptor(fd.get(), max_bytes);
}

BoundedRead read_regular_beneath(int dir_fd, const std::string& name, std::uintmax_t max_bytes) {
  BoundedRead::Refusal why = BoundedRead::Refusal::Open;
  const ClosingFd fd(open_beneath(dir_fd, name, why));
  if (fd.get() < 0) return refused(why, errno);
  return read_descriptor(fd.get(), max_bytes);
}

bool has_openat2() { return !g_openat2_missing.load(std::memory_order_relaxed); }

}  // namespace preflight
