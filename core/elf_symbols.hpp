// SPDX-License-Identifier: MIT
// The dynamic symbols of a 64-bit little-endian ELF object (.dynsym and its string table): the
// names it needs from other objects and the names it exports. What ld.so binds when Python imports
// torch (RTLD_NOW): every undefined symbol of libtorch_cuda.so must be exported by a library it
// loads, or the import fails with "undefined symbol". Pure: the bytes come through a reader.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/elf_dynamic.hpp"
#include "core/probed.hpp"

namespace preflight {

enum class SymbolSide {
  Needed,    ///< undefined here (st_shndx SHN_UNDEF): bound from another object at load
  Exported,  ///< defined here with global or weak binding
};

/// The names on `side` of the object's .dynsym that start with `prefix`, sorted, each once. At most
/// `max_symbols` symbols are read (more is Unsupported). NotFound: no section table or no .dynsym
/// (a static object); ParseError: not ELF, or a table outside the file.
Probed<std::vector<std::string>> elf_dynamic_symbols(const ElfReader& read, SymbolSide side, std::string_view prefix,
                                                     std::size_t max_symbols = std::size_t{1} << 22);

}  // namespace preflight
