// SPDX-License-Identifier: MIT
#include "core/elf_symbols.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/fatbin.hpp"

namespace preflight {
namespace {

constexpr std::uint32_t kShtDynsym = 11;
constexpr std::size_t kSymSize = 24;            // Elf64_Sym
constexpr std::size_t kSymsPerRead = 4096;      // 96 KiB of the table at a time
constexpr std::size_t kNameWindow = 64u << 10;  // the string table is read in windows this long
constexpr std::size_t kMaxName = 4096;          // a longer name is not one of ours

// The string table, read a window at a time around the names asked for.
class SymbolNames {
 public:
  SymbolNames(const ElfReader& read, const ElfSection& table) : m_read(read), m_table(table) {}

  // The name at `offset`, or nullopt when it cannot be read.
  std::optional<std::string> at(std::uint64_t offset) {
    if (offset >= m_table.size) return std::nullopt;
    if (!in_window(offset) && !load(offset)) return std::nullopt;
    const std::size_t from = static_cast<std::size_t>(offset - m_start);
    const std::size_t end = m_window.find('\0', from);
    if (end != std::string::npos) return m_window.substr(from, end - from);
    if (m_start == offset || !load(offset)) return std::nullopt;  // longer than a window
    const std::size_t again = m_window.find('\0');
    if (again == std::string::npos) return std::nullopt;
    return m_window.substr(0, again);
  }

 private:
  bool in_window(std::uint64_t offset) const { return offset >= m_start && offset < m_start + m_window.size(); }
  bool load(std::uint64_t offset) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kNameWindow, m_table.size - offset));
    std::optional<std::string> bytes = m_read(m_table.offset + offset, n);
    if (!bytes || bytes->empty()) return false;
    m_window = std::move(*bytes);
    m_start = offset;
    return true;
  }

  const ElfReader& m_read;
  const ElfSection& m_table;
  std::string m_window;
  std::uint64_t m_start = 0;
};

}  // namespace

Probed<std::vector<std::string>> elf_dynamic_symbols(const ElfReader& read, SymbolSide side, std::string_view prefix,
                                                     std::size_t max_symbols) {
  using Result = Probed<std::vector<std::string>>;
  const Probed<std::vector<ElfSection>> sections = elf_sections(read);
  if (!sections.ok()) return Result::error(*sections.error());
  const std::vector<ElfSection>& all = *sections.value();
  const auto dynsym = std::find_if(all.begin(), all.end(), [](const ElfSection& s) { return s.type == kShtDynsym; });
  if (dynsym == all.end()) return Result::error(ProbeErrc::NotFound, "no .dynsym (a static object)");
  if (dynsym->link >= all.size()) return Result::error(ProbeErrc::ParseError, ".dynsym names no string table");
  const std::uint64_t count = dynsym->size / kSymSize;
  if (count > max_symbols) {
    return Result::error(ProbeErrc::Unsupported, "more than " + std::to_string(max_symbols) + " dynamic symbols");
  }
  SymbolNames names(read, all[dynsym->link]);
  std::vector<std::string> out;
  for (std::uint64_t first = 0; first < count; first += kSymsPerRead) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kSymsPerRead, count - first));
    const std::optional<std::string> block = read(dynsym->offset + first * kSymSize, n * kSymSize);
    if (!block || block->size() < n * kSymSize) return Result::error(ProbeErrc::ParseError, ".dynsym cut short");
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view sym(block->data() + i * kSymSize, kSymSize);
      const std::uint64_t name = elf_le(sym, 0, 4);
      const unsigned bind = static_cast<unsigned char>(sym[4]) >> 4;
      const bool undefined = elf_le(sym, 6, 2) == 0;
      const bool wanted = side == SymbolSide::Needed ? undefined : !undefined && (bind == 1 || bind == 2);
      if (name == 0 || !wanted) continue;
      const std::optional<std::string> text = names.at(name);
      if (!text) return Result::error(ProbeErrc::ParseError, "a symbol name outside the string table");
      if (text->size() <= kMaxName && text->starts_with(prefix)) out.push_back(*text);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return Result::ok(std::move(out), ".dynsym");
}

}  // namespace preflight
