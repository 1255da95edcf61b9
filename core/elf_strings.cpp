// SPDX-License-Identifier: MIT
#include "core/elf_strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "core/fatbin.hpp"

namespace preflight {
namespace {

constexpr std::size_t kChunk = 1u << 20;

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
  const Probed<std::vector<ElfSection>> sections = elf_sections(read);
  if (!sections.ok() && sections.error()->code == ProbeErrc::ParseError) return Result::error(*sections.error());
  std::set<std::string> out;
  std::size_t budget = max_bytes;
  const auto whole_prefix = [&] {
    scan(read, 0, max_bytes, prefix, budget, out);
    return Result::ok({out.begin(), out.end()},
                      "the first " + std::to_string(max_bytes) + " bytes (no section headers)");
  };
  if (!sections.ok()) return whole_prefix();
  std::vector<std::string> scanned;
  for (const ElfSection& s : *sections.value()) {
    constexpr std::uint64_t kProgbits = 1, kAlloc = 0x2, kWrite = 0x1, kExec = 0x4;
    if (s.type != kProgbits || (s.flags & kAlloc) == 0 || (s.flags & (kWrite | kExec)) != 0) continue;
    if (s.name != ".rodata" && !s.name.starts_with(".rodata.")) continue;
    scan(read, s.offset, s.size, prefix, budget, out);
    scanned.push_back(s.name);
  }
  if (scanned.empty()) return whole_prefix();
  return Result::ok({out.begin(), out.end()},
                    "sections " + std::string(scanned.size() == 1 ? scanned[0] : std::to_string(scanned.size())));
}

}  // namespace preflight
