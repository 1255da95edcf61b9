// SPDX-License-Identifier: MIT
#include "cli/merge_heap.hpp"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/text.hpp"

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

namespace preflight {
namespace {

/// The selected word of a sysfs choice list: "madvise" of "always [madvise] never"; "" when none is.
std::string_view selected_word(std::string_view choices) {
  const std::size_t open = choices.find('[');
  const std::size_t close = choices.find(']', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return {};
  return choices.substr(open + 1, close - open - 1);
}

/// Whether "MAJOR.MINOR…" is 2.35 or later.
bool glibc_has_hugetlb_tunable(std::string_view version) {
  const std::vector<std::string_view> parts = split(version, '.');
  if (parts.size() < 2) return false;
  const std::optional<std::int64_t> major = parse_int(parts[0]);
  const std::optional<std::int64_t> minor = parse_int(parts[1]);
  if (!major || !minor) return false;
  return *major > 2 || (*major == 2 && *minor >= 35);
}

/// The text of the kernel's THP mode ("always [madvise] never"); "" when it cannot be read.
std::string thp_mode(const FileSystem& fs) {
  const Probed<std::string> line = fs.read_line("/sys/kernel/mm/transparent_hugepage/enabled");
  return line.value() != nullptr ? *line.value() : std::string();
}

}  // namespace

std::optional<std::string> merge_tunables(const char* current, std::string_view thp_enabled,
                                          std::string_view glibc_version, std::uintmax_t bytes) {
  if (bytes < kMergeHeapTuningMinBytes || !glibc_has_hugetlb_tunable(glibc_version)) return std::nullopt;
  const std::string_view mode = selected_word(thp_enabled);
  if (mode != "always" && mode != "madvise") return std::nullopt;
  const std::string_view set = current == nullptr ? std::string_view() : std::string_view(current);
  if (set.find("glibc.malloc.hugetlb") != std::string_view::npos ||
      set.find("glibc.malloc.top_pad") != std::string_view::npos) {
    return std::nullopt;
  }
  return set.empty() ? std::string(kMergeTunables) : std::string(set) + ":" + std::string(kMergeTunables);
}

void tune_heap_for_merge(char** argv, const std::vector<std::string>& files, const FileSystem& fs) {
#if defined(__GLIBC__)
  if (getauxval(AT_SECURE) != 0) return;  // set-user-ID: glibc ignores the tunables
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && std::string_view(preload).find("vgpreload") != std::string_view::npos) return;  // valgrind
  std::uintmax_t bytes = 0;
  for (const std::string& path : files) {
    // The user's files, named as on the command line (relative to the working directory): not a
    // fact of the node, so not through `fs`, whose relative paths start at its root.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bytes += static_cast<std::uintmax_t>(st.st_size);
    if (bytes >= kMergeHeapTuningMinBytes) break;
  }
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> before = current == nullptr ? std::nullopt : std::optional<std::string>(current);
  const std::optional<std::string> tunables = merge_tunables(current, thp_mode(fs), gnu_get_libc_version(), bytes);
  if (!tunables) return;
  if (::setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // The exec failed (no /proc): the merge runs here, as it would have, in the environment it had.
  if (before) {
    ::setenv("GLIBC_TUNABLES", before->c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
  (void)files;
  (void)fs;
#endif
}

}  // namespace preflight
