// SPDX-License-Identifier: MIT
#include "core/elf_strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

namespace preflight {
namespace {

constexpr std::size_t kChunk = 1u << 20;

std::uint64_t le(std::string_view b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n && at + i < b.size(); ++i)
    v |= std::uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

bool name_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// Scans [offset, offset + size) chunk by chunk; a string cut at a chunk boundary is re-read whole
// because each chunk starts after the last NUL of the previous one.
void scan(const ElfReader& read, std::uint64_t offset, std::uint64_t size, std::string_view prefix, std::size_t& budget,
          std::set<std::string>& out) {
  std::uint64_t at = offset;
  const std::uint64_t end = offset + size;
  while (at < end && budget > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>({end - at, kChunk, budget}));
    const std::optional<std::string> bytes = read(at, want);
    if (!bytes || bytes->empty()) return;
    std::string_view view(*bytes);
    std::size_t used = view.size();
    if (at + view.size() < end && view.size() == want) {
      const std::size_t nul = view.rfind('\0');
      if (nul != std::string_view::npos && nul > 0) used = nul + 1;
    }
    for (std::string& n : env_names_in(view.substr(0, used), prefix)) out.insert(std::move(n));
    budget -= std::min(budget, used);
    at += used;
    if (view.size() < want) return;  // the end of the file
  }
}

}  // namespace

std::vector<std::string> env_names_in(std::string_view bytes, std::string_view prefix) {
  std::set<std::string> found;
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t nul = bytes.find('\0', start);
    if (nul == std::string_view::npos) nul = bytes.size();
    const std::string_view s = bytes.substr(start, nul - start);
    if (s.size() > prefix.size() && s.size() < 128 && s.starts_with(prefix) &&
        std::all_of(s.begin() + static_cast<std::ptrdiff_t>(prefix.size()), s.end(), name_char)) {
      found.emplace(s);
    }
    start = nul + 1;
  }
  return {found.begin(), found.end()};
}

Probed<std::vector<std::string>> elf_rodata_env_names(const ElfReader& read, std::string_view prefix,
                                                      std::size_t max_bytes) {
  using Result = Probed<std::vector<std::string>>;
  const std::optional<std::string> header = read(0, 64);
  if (!header || header->size() < 64 ||
      header->compare(0, 4,
                      "\x7f"
                      "ELF") != 0) {
    return Result::error(ProbeErrc::ParseError, "not an ELF file");
  }
  const std::string_view h(*header);
  if (h[4] != 2 || h[5] != 1) return Result::error(ProbeErrc::ParseError, "not a 64-bit little-endian ELF file");
  const std::uint64_t shoff = le(h, 0x28, 8);
  const std::uint64_t shentsize = le(h, 0x3a, 2), shnum = le(h, 0x3c, 2), shstrndx = le(h, 0x3e, 2);
  std::set<std::string> out;
  std::size_t budget = max_bytes;
  const auto whole_prefix = [&] {
    scan(read, 0, max_bytes, prefix, budget, out);
    return Result::ok({out.begin(), out.end()},
                      "the first " + std::to_string(max_bytes) + " bytes (no section headers)");
  };
  if (shoff == 0 || shnum == 0 || shentsize < 64 || shnum > 4096 || shstrndx >= shnum) return whole_prefix();
  const std::optional<std::string> table = read(shoff, static_cast<std::size_t>(shnum * shentsize));
  if (!table || table->size() < shnum * shentsize) return whole_prefix();
  const std::string_view t(*table);
  const auto field = [&](std::uint64_t i, std::size_t off, std::size_t n) { return le(t, i * shentsize + off, n); };
  const std::uint64_t names_off = field(shstrndx, 0x18, 8), names_size = field(shstrndx, 0x20, 8);
  if (names_size == 0 || names_size > (1u << 20)) return whole_prefix();
  const std::optional<std::string> names = read(names_off, static_cast<std::size_t>(names_size));
  if (!names) return whole_prefix();
  std::vector<std::string> scanned;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint64_t name = field(i, 0, 4), type = field(i, 4, 4), flags = field(i, 8, 8);
    if (name >= names->size()) continue;
    const std::string section(names->c_str() + name);
    constexpr std::uint64_t kProgbits = 1, kAlloc = 0x2, kWrite = 0x1, kExec = 0x4;
    if (type != kProgbits || (flags & kAlloc) == 0 || (flags & (kWrite | kExec)) != 0) continue;
    if (section != ".rodata" && !section.starts_with(".rodata.")) continue;
    scan(read, field(i, 0x18, 8), field(i, 0x20, 8), prefix, budget, out);
    scanned.push_back(section);
  }
  if (scanned.empty()) return whole_prefix();
  return Result::ok({out.begin(), out.end()},
                    "sections " + std::string(scanned.size() == 1 ? scanned[0] : std::to_string(scanned.size())));
}

}  // namespace preflight
