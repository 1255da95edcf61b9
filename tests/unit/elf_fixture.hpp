// SPDX-License-Identifier: MIT
// Builds the smallest 64-bit little-endian ELF shared object the dynamic loader's reader needs: an
// ELF header, a PT_LOAD and a PT_DYNAMIC program header, a dynamic section and its string table
// (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH). For tests of core/elf_dynamic and of the framework
// resolution in the cuda_runtime probe, without a compiler at test time. And an object of named
// sections only (with_sections: .rodata, .data, … and the section-name table), for core/elf_strings
// and the nccl_names probe; sections appended to either (add_sections), and fat binaries built from
// their format (fatbin: the .nv_fatbin of core/fatbin's tests).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace preflight::elf_fixture {

struct Spec {
  std::vector<std::string> needed;
  std::string soname;
  std::optional<std::string> rpath;
  std::optional<std::string> runpath;
  std::uint64_t vaddr = 0x400000;  // where the PT_LOAD segment is mapped
  std::size_t padding = 0;         // bytes between the headers and the dynamic section
};

inline void put(std::string& buf, std::size_t at, const void* data, std::size_t n) {
  if (buf.size() < at + n) buf.resize(at + n, '\0');
  std::memcpy(buf.data() + at, data, n);
}
template <typename T>
void put_int(std::string& buf, std::size_t at, T v) {
  put(buf, at, &v, sizeof v);
}

inline std::string build(const Spec& spec) {
  std::string strtab(1, '\0');
  auto add_string = [&strtab](const std::string& s) {
    const std::uint64_t off = strtab.size();
    strtab += s;
    strtab += '\0';
    return off;
  };
  std::vector<std::pair<std::int64_t, std::uint64_t>> dyn;
  for (const std::string& n : spec.needed) dyn.emplace_back(1, add_string(n));
  if (!spec.soname.empty()) dyn.emplace_back(14, add_string(spec.soname));
  if (spec.rpath) dyn.emplace_back(15, add_string(*spec.rpath));
  if (spec.runpath) dyn.emplace_back(29, add_string(*spec.runpath));
  const std::size_t phoff = 64, phnum = 2;
  const std::size_t strtab_off = phoff + phnum * 56 + spec.padding;
  const std::size_t dyn_off = (strtab_off + strtab.size() + 7) / 8 * 8;
  dyn.emplace_back(5, spec.vaddr + strtab_off);  // DT_STRTAB (an address)
  dyn.emplace_back(10, strtab.size());           // DT_STRSZ
  dyn.emplace_back(0, 0);                        // DT_NULL
  const std::size_t total = dyn_off + dyn.size() * 16;

  std::string buf(total, '\0');
  const unsigned char ident[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  put(buf, 0, ident, sizeof ident);
  put_int<std::uint16_t>(buf, 0x10, 3);   // ET_DYN
  put_int<std::uint16_t>(buf, 0x12, 62);  // EM_X86_64
  put_int<std::uint32_t>(buf, 0x14, 1);
  put_int<std::uint64_t>(buf, 0x20, phoff);
  put_int<std::uint16_t>(buf, 0x34, 64);
  put_int<std::uint16_t>(buf, 0x36, 56);
  put_int<std::uint16_t>(buf, 0x38, phnum);
  // PT_LOAD: the whole file at vaddr.
  put_int<std::uint32_t>(buf, phoff, 1);
  put_int<std::uint64_t>(buf, phoff + 8, 0);
  put_int<std::uint64_t>(buf, phoff + 16, spec.vaddr);
  put_int<std::uint64_t>(buf, phoff + 32, total);
  put_int<std::uint64_t>(buf, phoff + 40, total);
  // PT_DYNAMIC.
  put_int<std::uint32_t>(buf, phoff + 56, 2);
  put_int<std::uint64_t>(buf, phoff + 56 + 8, dyn_off);
  put_int<std::uint64_t>(buf, phoff + 56 + 16, spec.vaddr + dyn_off);
  put_int<std::uint64_t>(buf, phoff + 56 + 32, dyn.size() * 16);
  put_int<std::uint64_t>(buf, phoff + 56 + 40, dyn.size() * 16);
  put(buf, strtab_off, strtab.data(), strtab.size());
  for (std::size_t i = 0; i < dyn.size(); ++i) {
    put_int<std::int64_t>(buf, dyn_off + i * 16, dyn[i].first);
    put_int<std::uint64_t>(buf, dyn_off + i * 16 + 8, dyn[i].second);
  }
  return buf;
}

/// One section of with_sections(): its name, sh_type (1 PROGBITS), sh_flags (0x2 ALLOC, 0x1
/// WRITE) and contents.
struct Section {
  std::string name;
  std::uint32_t type = 1;
  std::uint64_t flags = 0x2;
  std::string bytes;
  std::uint32_t link = 0;  // sh_link: the index of a symbol table's string table
};

/// `elf` (an ELF64 little-endian object, its header first) with `sections` appended, a final
/// .shstrtab naming them, and the section header table after them (e_shoff, e_shnum, e_shstrndx set).
inline std::string add_sections(std::string buf, const std::vector<Section>& sections) {
  std::string names(1, '\0');
  std::vector<std::uint32_t> name_at;
  for (const Section& s : sections) {
    name_at.push_back(static_cast<std::uint32_t>(names.size()));
    names += s.name + '\0';
  }
  const auto shstrtab_at = static_cast<std::uint32_t>(names.size());
  names += std::string(".shstrtab") + '\0';
  std::vector<std::size_t> offsets;
  for (const Section& s : sections) {
    buf.resize((buf.size() + 7) / 8 * 8, '\0');
    offsets.push_back(buf.size());
    buf += s.bytes;
  }
  const std::size_t names_off = buf.size();
  buf += names;
  const std::size_t sh = (buf.size() + 7) / 8 * 8;
  const std::size_t count = sections.size() + 2;  // the null section, then .shstrtab last
  buf.resize(sh + count * 64, '\0');
  put_int<std::uint64_t>(buf, 0x28, sh);  // e_shoff
  put_int<std::uint16_t>(buf, 0x3a, 64);  // e_shentsize
  put_int<std::uint16_t>(buf, 0x3c, static_cast<std::uint16_t>(count));
  put_int<std::uint16_t>(buf, 0x3e, static_cast<std::uint16_t>(count - 1));  // e_shstrndx
  const auto header = [&](std::size_t i, std::uint32_t name, std::uint32_t type, std::uint64_t flags, std::size_t off,
                          std::size_t size, std::uint32_t link = 0) {
    const std::size_t at = sh + i * 64;
    put_int<std::uint32_t>(buf, at + 0x28, link);
    put_int<std::uint32_t>(buf, at, name);
    put_int<std::uint32_t>(buf, at + 4, type);
    put_int<std::uint64_t>(buf, at + 8, flags);
    put_int<std::uint64_t>(buf, at + 0x18, off);
    put_int<std::uint64_t>(buf, at + 0x20, size);
  };
  for (std::size_t i = 0; i < sections.size(); ++i) {
    header(i + 1, name_at[i], sections[i].type, sections[i].flags, offsets[i], sections[i].bytes.size(),
           sections[i].link);
  }
  header(count - 1, shstrtab_at, 3, 0, names_off, names.size());  // SHT_STRTAB
  return buf;
}

/// An ELF64 little-endian object with the section headers of `sections` (after the null section)
/// and a final .shstrtab naming them; no program headers.
inline std::string with_sections(const std::vector<Section>& sections) {
  std::string buf(64, '\0');
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  put(buf, 0, ident, sizeof ident);
  return add_sections(std::move(buf), sections);
}

/// One entry of a fat binary: kind 1 PTX or 2 ELF (SASS), the SM number, and a payload of
/// `payload` bytes (what the reader skips).
struct FatbinEntry {
  std::uint16_t kind = 2;
  std::uint32_t sm = 90;
  std::size_t payload = 40;
  std::uint32_t header_size = 64;  // 64; 80 or 112 for the extended headers of SM 100 and later
};

/// One fatbin container as nvcc lays it out: a 16-byte header (magic 0xBA55ED50, version 1, header
/// size 16, the size of the entries that follow), then each entry's header and payload (8-aligned).
inline std::string fatbin(const std::vector<FatbinEntry>& entries) {
  std::string body;
  for (const FatbinEntry& e : entries) {
    const std::size_t at = body.size();
    const std::size_t aligned = (e.payload + 7) / 8 * 8;
    body.resize(at + e.header_size + aligned, '\0');
    put_int<std::uint16_t>(body, at, e.kind);
    put_int<std::uint16_t>(body, at + 2, 0x0101);
    put_int<std::uint32_t>(body, at + 4, e.header_size);
    put_int<std::uint64_t>(body, at + 8, aligned);
    put_int<std::uint32_t>(body, at + 16, static_cast<std::uint32_t>(e.payload));
    put_int<std::uint32_t>(body, at + 28, e.sm);
    for (std::size_t i = 0; i < e.payload; ++i) body[at + e.header_size + i] = static_cast<char>(0xA5);
  }
  std::string out(16, '\0');
  put_int<std::uint32_t>(out, 0, 0xBA55ED50);
  put_int<std::uint16_t>(out, 4, 1);
  put_int<std::uint16_t>(out, 6, 16);
  put_int<std::uint64_t>(out, 8, body.size());
  return out + body;
}

inline void write(const std::string& path, const Spec& spec) { std::ofstream(path, std::ios::binary) << build(spec); }

/// One dynamic symbol of dynsym(): defined (in section 1) or undefined, with its binding (1 GLOBAL,
/// 2 WEAK, 0 LOCAL).
struct Symbol {
  std::string name;
  bool defined = true;
  unsigned bind = 1;
};

/// A .dynsym and its .dynstr, as sections 1 and 2 of add_sections().
inline std::vector<Section> dynsym(const std::vector<Symbol>& symbols) {
  std::string names(1, '\0');
  std::string table(24, '\0');  // the null symbol
  for (const Symbol& sym : symbols) {
    std::string entry(24, '\0');
    put_int<std::uint32_t>(entry, 0, static_cast<std::uint32_t>(names.size()));
    entry[4] = static_cast<char>((sym.bind << 4) | 2);  // STT_FUNC
    put_int<std::uint16_t>(entry, 6, sym.defined ? 1 : 0);
    names += sym.name + '\0';
    table += entry;
  }
  return {Section{".dynsym", 11, 0x2, table, 2}, Section{".dynstr", 3, 0x2, names, 0}};
}

}  // namespace preflight::elf_fixture
