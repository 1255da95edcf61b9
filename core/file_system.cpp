// SPDX-License-Identifier: MIT
#include "core/file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/text.hpp"

namespace preflight {

FileSystem::FileSystem(std::string root) : m_root(std::move(root)) {
  while (!m_root.empty() && m_root.back() == '/') m_root.pop_back();
}

std::string FileSystem::host_path(std::string_view path) const {
  std::string out = m_root;
  if (path.empty() || path.front() != '/') out += '/';
  out += path;
  return out;
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
  const std::string real = host_path(path);
  const std::string source(path);
  const int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Probed<std::string>::error(probe_error_from_errno(errno), source);
  std::string data;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
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
  return Probed<std::string>::ok(std::move(data), source);
}

Probed<std::string> FileSystem::read_at(std::string_view path, std::uint64_t offset, std::size_t size) const {
  const std::string source(path);
  const int fd = ::open(host_path(path).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
  const std::string real = host_path(path);
  DIR* dir = ::opendir(real.c_str());
  if (dir == nullptr) return Result::error(probe_error_from_errno(errno), std::string(path));
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return Result::ok(std::move(names), std::string(path));
}

bool FileSystem::exists(std::string_view path) const {
  struct stat st {};
  return ::stat(host_path(path).c_str(), &st) == 0;
}

}  // namespace preflight
