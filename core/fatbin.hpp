// SPDX-License-Identifier: MIT
// The GPU architectures a shared object carries code for, read from its fat binaries without CUDA
// tools: the `.nv_fatbin` section (else `__nv_relfatbin`) holds containers, each a 16-byte header
// (magic 0xBA55ED50, version 1, header size, size of what follows) and entries, each with its own
// header (kind: 1 PTX, 2 ELF/SASS; header size; payload size; the SM number at byte 28). Only the
// headers are read, through a bounded reader; the payloads (compressed cubins) are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/elf_dynamic.hpp"
#include "core/probed.hpp"

namespace preflight {

/// The little-endian unsigned integer of `n` bytes at `at` in `b` (bytes past its end read as 0).
std::uint64_t elf_le(std::string_view b, std::size_t at, std::size_t n);

/// One section of a 64-bit little-endian ELF file.
struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;  // sh_link: a symbol table's string table
};
/// The section table, indexed as the file numbers its sections (a section whose name cannot be read
/// has the name ""); ParseError for a file that is not a 64-bit little-endian ELF object, NotFound
/// for one without (readable) section headers: a stripped object may lack them.
Probed<std::vector<ElfSection>> elf_sections(const ElfReader& read);

struct FatbinArchs {
  std::set<unsigned> sass;  // SM numbers with SASS (ELF) entries: 75, 80, 90, 100, 120
  std::set<unsigned> ptx;   // SM numbers with PTX entries
  std::size_t containers = 0;
  std::size_t entries = 0;
  std::string section;  // ".nv_fatbin" or "__nv_relfatbin"
  /// As torch.cuda.get_arch_list() spells them: "sm_75", ..., then "compute_120".
  std::vector<std::string> arch_list() const;
};

/// Reads the fat binaries of an ELF shared object. NotFound: it has no fatbin section (no device
/// code); ParseError: a container or entry that is not what the format says; Unsupported: more than
/// `max_entries` entries (read no further: a partial list would miss architectures).
Probed<FatbinArchs> elf_fatbin_archs(const ElfReader& read, std::size_t max_entries = 1'000'000);

}  // namespace preflight
