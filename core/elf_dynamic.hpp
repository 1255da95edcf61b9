// SPDX-License-Identifier: MIT
// What the dynamic loader reads of a shared object before it loads anything: the DT_NEEDED sonames
// and the DT_RPATH / DT_RUNPATH search paths of a 64-bit little-endian ELF file (x86-64, aarch64),
// and the order in which ld.so searches for a needed soname (ld.so(8)). Pure: the bytes come
// through a reader callback, so a gigabyte-sized libtorch_cuda.so is read a few kilobytes at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"

namespace preflight {

/// The dynamic section of one ELF object.
struct ElfDynamic {
  std::string soname;                // DT_SONAME, "" if none
  std::vector<std::string> needed;   // DT_NEEDED, in order
  std::vector<std::string> rpath;    // DT_RPATH entries, as written ("$ORIGIN/../../nvidia/cuda_runtime/lib")
  std::vector<std::string> runpath;  // DT_RUNPATH entries, as written
  bool has_runpath = false;          // a DT_RUNPATH (even an empty one) makes ld.so ignore DT_RPATH
};

/// Reads `size` bytes at `offset`; fewer (or nullopt) at the end of the file or on an error.
using ElfReader = std::function<std::optional<std::string>(std::uint64_t offset, std::size_t size)>;

/// Parses the program headers, PT_DYNAMIC and the dynamic string table. ParseError naming what is
/// wrong: not ELF, not 64-bit little-endian, truncated headers, no PT_DYNAMIC (a static object),
/// a string table outside every PT_LOAD segment, offsets past the end.
Probed<ElfDynamic> parse_elf_dynamic(const ElfReader& read);

/// Convenience for tests and in-memory files.
Probed<ElfDynamic> parse_elf_dynamic(std::string_view bytes);

/// $ORIGIN and ${ORIGIN} replaced by origin_dir (the directory of the object that carries the
/// path); nullopt for entries with other tokens ($LIB, $PLATFORM) or that end up relative (ld.so
/// resolves those against the working directory: not the job's, so they are not followed).
std::optional<std::string> expand_origin(std::string_view entry, std::string_view origin_dir);

/// One directory ld.so would search, and why.
struct LoaderDir {
  std::string dir;
  std::string via;  // "DT_RPATH of libtorch_cuda.so", "LD_LIBRARY_PATH", "DT_RUNPATH of …", "ld.so.cache", "default"
};

/// The order ld.so searches for a soname needed by `object` (ld.so(8), "Rules"): its DT_RPATH when
/// it has no DT_RUNPATH, then LD_LIBRARY_PATH, then its DT_RUNPATH, then the directories of
/// ld.so.cache (the ld.so.conf directories), then the default directories. `object_name` names the
/// object in `via`. Duplicate directories keep their first place.
std::vector<LoaderDir> loader_search_order(const ElfDynamic& object, std::string_view object_dir,
                                           std::string_view object_name,
                                           const std::vector<std::string>& ld_library_path,
                                           const std::vector<std::string>& cache_dirs,
                                           const std::vector<std::string>& default_dirs);

}  // namespace preflight
