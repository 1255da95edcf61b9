// SPDX-License-Identifier: MIT
// `preflight capture DIR` / `--tar FILE`: records what the checks read on this node, to judge it
// elsewhere with --sysroot (sys/capture.hpp describes the layout).
#pragma once

#include <chrono>
#include <string>

#include "core/options.hpp"

namespace preflight {

/// Exit 0 when every probe finished, 4 when the deadline cut the capture short (what was read is
/// kept, the manifest says so), 2 for a DIR or FILE that cannot be used (before anything is
/// probed), 5 when writing failed.
int capture_command(const Options& options, const std::string& dir, const std::string& tar_file,
                    std::chrono::steady_clock::time_point start);

/// Writes the tree under `dir` as a POSIX (pax) tar archive to `fd`: directories, regular files and
/// symbolic links, names relative to `dir`, in sorted order. "" on success, else why not.
std::string write_tar(const std::string& dir, int fd);

}  // namespace preflight
