// SPDX-License-Identifier: MIT
// The NUL-terminated strings a shared object keeps in its read-only data (`strings`, limited to the
// sections the program itself reads): NCCL names every variable it reads with getenv("NCCL_…"), so
// the NCCL_* strings of libnccl.so.2's .rodata are the names that release reads. Pure: the bytes
// come through a reader, a bounded number of them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf_dynamic.hpp"
#include "core/probed.hpp"

namespace preflight {

/// The strings of `bytes` that are exactly `prefix` followed by [A-Z0-9_]+ and end at a NUL byte
/// (or the end of the buffer): "NCCL_BUFFSIZE", not "NCCL_ALGO was set to %s". Sorted, unique.
std::vector<std::string> env_names_in(std::string_view bytes, std::string_view prefix);

/// The prefix names of a 64-bit little-endian ELF file's read-only data sections (.rodata*), read
/// through `read` at most `max_bytes` in all. Without section headers (a stripped object may lack
/// them) the first `max_bytes` of the file are scanned instead. ParseError for a file that is not
/// such an ELF object.
Probed<std::vector<std::string>> elf_rodata_env_names(const ElfReader& read, std::string_view prefix,
                                                      std::size_t max_bytes);

}  // namespace preflight
