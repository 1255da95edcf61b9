// SPDX-License-Identifier: MIT
// The text of a symbolic link on this machine, for the paths that are not read through a
// FileSystem root (sys/file_system.hpp resolves links inside its root itself): the report files
// the user names, a capture's own directory as it is archived, /proc/self/exe.
#pragma once

#include <optional>
#include <string>

namespace preflight {

/// readlink(2) of `path`, the whole target however long (up to 1 MiB); nullopt with errno set
/// (EINVAL: not a link; ENAMETOOLONG: a longer target).
std::optional<std::string> read_host_link(const std::string& path);

}  // namespace preflight
