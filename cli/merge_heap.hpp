// SPDX-License-Identifier: MIT
// A large `preflight merge` spends about half its time in page faults and malloc for what it holds
// (the ranks' facts and results: about three times the files' bytes). glibc's allocator backs its
// heaps with transparent huge pages when asked (the glibc.malloc.hugetlb=1 tunable, glibc 2.35 or
// later, where the kernel's THP mode is madvise or always) and grows them in large steps
// (glibc.malloc.top_pad): 4096 per-rank files merge in about half the time. Tunables are read at
// process start only, so a merge of many bytes re-executes itself once with them set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/file_system.hpp"

namespace preflight {

/// Result files of fewer bytes than this merge as they are (the re-execution costs a start-up).
inline constexpr std::uintmax_t kMergeHeapTuningMinBytes = 16u << 20;
/// What a large merge adds to GLIBC_TUNABLES: huge pages for the heaps, grown 64 MiB at a time.
inline constexpr std::string_view kMergeTunables = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864";

/// The GLIBC_TUNABLES value a merge of `bytes` of result files re-executes itself with, or nullopt
/// where it runs as it is: fewer than kMergeHeapTuningMinBytes; a glibc older than 2.35
/// (`glibc_version` as gnu_get_libc_version() says it; "" when the C library is not glibc); the
/// kernel's THP mode (`thp_enabled`, the text of /sys/kernel/mm/transparent_hugepage/enabled,
/// "always [madvise] never") neither always nor madvise, or unreadable; or `current` (the
/// environment's GLIBC_TUNABLES, null when unset) already setting either tunable: the user's
/// choice stands, and the re-executed merge does not re-execute again. Otherwise `current`, when
/// set, keeps its settings and kMergeTunables follows them.
std::optional<std::string> merge_tunables(const char* current, std::string_view thp_enabled,
                                          std::string_view glibc_version, std::uintmax_t bytes);

/// `preflight merge PATH...` as launched (`argv`): re-executes /proc/self/exe with the same
/// arguments and merge_tunables() in the environment when they apply to the bytes of the result
/// files (`files`, as result_files() listed them; the kernel's THP mode read through `fs`).
/// Returns when they do not apply, when the process runs under valgrind or set-user-ID (where the
/// tunables are ignored), or when the exec fails; the merge then runs in this process, with the
/// same results either way.
void tune_heap_for_merge(char** argv, const std::vector<std::string>& files, const FileSystem& fs = FileSystem());

}  // namespace preflight
