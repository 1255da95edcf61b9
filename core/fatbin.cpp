// SPDX-License-Identifier: MIT
#include "core/fatbin.hpp"

#include <algorithm>

namespace preflight {
namespace {

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::size_t kContainerHeader = 16;
constexpr std::size_t kEntryHeaderRead = 32;  // kind, version, header size, payload size, ..., SM at 28

}  // namespace

std::uint64_t elf_le(std::string_view b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n && at + i < b.size(); ++i)
    v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

Probed<std::vector<ElfSection>> elf_sections(const ElfReader& read) {
  using Result = Probed<std::vector<ElfSection>>;
  const std::optional<std::string> header = read(0, 64);
  if (!header || header->size() < 64 ||
      header->compare(0, 4,
                      "\x7f"
                      "ELF") != 0) {
    return Result::error(ProbeErrc::ParseError, "not an ELF file");
  }
  const std::string_view h(*header);
  if (h[4] != 2 || h[5] != 1) return Result::error(ProbeErrc::ParseError, "not a 64-bit little-endian ELF file");
  const std::uint64_t shoff = elf_le(h, 0x28, 8);
  const std::uint64_t shentsize = elf_le(h, 0x3a, 2), shnum = elf_le(h, 0x3c, 2), shstrndx = elf_le(h, 0x3e, 2);
  if (shoff == 0 || shnum == 0 || shentsize < 64 || shnum > 65535 || shstrndx >= shnum) {
    return Result::error(ProbeErrc::NotFound, "no section headers");
  }
  const std::optional<std::string> table = read(shoff, static_cast<std::size_t>(shnum * shentsize));
  if (!table || table->size() < shnum * shentsize) return Result::error(ProbeErrc::NotFound, "section table cut short");
  const std::string_view t(*table);
  const auto field = [&](std::uint64_t i, std::size_t off, std::size_t n) { return elf_le(t, i * shentsize + off, n); };
  const std::uint64_t names_off = field(shstrndx, 0x18, 8), names_size = field(shstrndx, 0x20, 8);
  if (names_size == 0 || names_size > (1u << 20)) return Result::error(ProbeErrc::NotFound, "no section names");
  const std::optional<std::string> names = read(names_off, static_cast<std::size_t>(names_size));
  if (!names) return Result::error(ProbeErrc::NotFound, "section names cut short");
  std::vector<ElfSection> out;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint64_t name = field(i, 0, 4);
    out.push_back({name < names->size() ? std::string(names->c_str() + name) : std::string(),
                   static_cast<std::uint32_t>(field(i, 4, 4)), field(i, 8, 8), field(i, 0x18, 8), field(i, 0x20, 8),
                   static_cast<std::uint32_t>(field(i, 0x28, 4))});
  }
  return Result::ok(std::move(out), "section headers");
}

std::vector<std::string> FatbinArchs::arch_list() const {
  std::vector<std::string> out;
  for (unsigned sm : sass) out.push_back("sm_" + std::to_string(sm));
  for (unsigned sm : ptx) out.push_back("compute_" + std::to_string(sm));
  return out;
}

Probed<FatbinArchs> elf_fatbin_archs(const ElfReader& read, std::size_t max_entries) {
  using Result = Probed<FatbinArchs>;
  const Probed<std::vector<ElfSection>> sections = elf_sections(read);
  if (!sections.ok()) return Result::error(*sections.error());
  const ElfSection* fatbin = nullptr;
  for (const char* want : {".nv_fatbin", "__nv_relfatbin"}) {
    for (const ElfSection& s : *sections.value()) {
      if (s.name == want && s.type != 8 /* SHT_NOBITS */) fatbin = &s;
    }
    if (fatbin != nullptr) break;
  }
  if (fatbin == nullptr) return Result::error(ProbeErrc::NotFound, "no .nv_fatbin or __nv_relfatbin section");
  FatbinArchs out;
  out.section = fatbin->name;
  const std::uint64_t end = fatbin->offset + fatbin->size;
  std::uint64_t at = fatbin->offset;
  const auto where = [&](std::uint64_t p) { return out.section + " at offset " + std::to_string(p - fatbin->offset); };
  while (at + kContainerHeader <= end) {
    const std::optional<std::string> h = read(at, kContainerHeader);
    if (!h || h->size() < kContainerHeader) return Result::error(ProbeErrc::ParseError, where(at) + ": cut short");
    if (elf_le(*h, 0, 8) == 0) {  // padding between containers (a header starts with its magic)
      at += 8;
      continue;
    }
    if (elf_le(*h, 0, 4) != kFatbinMagic) return Result::error(ProbeErrc::ParseError, where(at) + ": no fatbin header");
    const std::uint64_t header_size = elf_le(*h, 6, 2), body = elf_le(*h, 8, 8);
    if (header_size < kContainerHeader || header_size > end - at || body > end - at - header_size) {
      return Result::error(ProbeErrc::ParseError, where(at) + ": a container larger than its section");
    }
    ++out.containers;
    std::uint64_t entry = at + header_size;
    const std::uint64_t container_end = at + header_size + body;
    while (entry + kEntryHeaderRead <= container_end) {
      if (++out.entries > max_entries) {
        return Result::error(ProbeErrc::Unsupported, "more than " + std::to_string(max_entries) + " fatbin entries");
      }
      const std::optional<std::string> e = read(entry, kEntryHeaderRead);
      if (!e || e->size() < kEntryHeaderRead) return Result::error(ProbeErrc::ParseError, where(entry) + ": cut short");
      const std::uint64_t kind = elf_le(*e, 0, 2), size = elf_le(*e, 4, 4), payload = elf_le(*e, 8, 8),
                          sm = elf_le(*e, 28, 4);
      if (size < kEntryHeaderRead || size > 4096 || payload > container_end - entry - size) {
        return Result::error(ProbeErrc::ParseError, where(entry) + ": an entry larger than its container");
      }
      if (sm > 0 && sm < 1000) {
        if (kind == 1) out.ptx.insert(static_cast<unsigned>(sm));
        if (kind == 2 || kind == 0x10) out.sass.insert(static_cast<unsigned>(sm));
      }
      entry += size + payload;
    }
    at = container_end;
  }
  if (out.sass.empty() && out.ptx.empty()) {
    return Result::error(ProbeErrc::ParseError, out.section + " holds no PTX or SASS entry");
  }
  const std::string source = out.section;
  return Result::ok(std::move(out), source);
}

}  // namespace preflight
