// SPDX-License-Identifier: MIT
#include "core/elf_dynamic.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/text.hpp"

namespace preflight {
namespace {

// ELF64 constants (elf.h); declared here so the parser does not depend on the host's headers.
constexpr std::uint32_t kPtLoad = 1;
constexpr std::uint32_t kPtDynamic = 2;
constexpr std::int64_t kDtNull = 0;
constexpr std::int64_t kDtNeeded = 1;
constexpr std::int64_t kDtStrtab = 5;
constexpr std::int64_t kDtStrsz = 10;
constexpr std::int64_t kDtSoname = 14;
constexpr std::int64_t kDtRpath = 15;
constexpr std::int64_t kDtRunpath = 29;
constexpr std::size_t kEhdrSize = 64;
constexpr std::size_t kPhdrSize = 56;
constexpr std::size_t kDynSize = 16;
constexpr std::size_t kMaxPhdrs = 4096;
constexpr std::size_t kMaxDynamic = 1u << 16;  // 4096 entries
constexpr std::size_t kMaxString = 64u << 10;  // one DT_NEEDED / DT_RPATH string

template <typename T>
T load(const std::string& buf, std::size_t at) {
  T v{};
  std::memcpy(&v, buf.data() + at, sizeof v);  // little-endian host (x86-64, aarch64)
  return v;
}

Probed<ElfDynamic> bad(std::string why) { return Probed<ElfDynamic>::error(ProbeErrc::ParseError, std::move(why)); }

struct Segment {
  std::uint32_t type = 0;
  std::uint64_t offset = 0, vaddr = 0, filesz = 0;
};

std::vector<std::string> split_path_list(std::string_view s) {
  std::vector<std::string> out;
  for (const std::string_view part : split(s, ':')) out.emplace_back(part);  // "" is the working directory
  return out;
}

}  // namespace

Probed<ElfDynamic> parse_elf_dynamic(const ElfReader& read) {
  const std::optional<std::string> ehdr = read(0, kEhdrSize);
  if (!ehdr || ehdr->size() < 4 ||
      ehdr->compare(0, 4,
                    "\x7f"
                    "ELF") != 0)
    return bad("not an ELF file");
  if (ehdr->size() < kEhdrSize) return bad("truncated ELF header");
  if ((*ehdr)[4] != 2 || (*ehdr)[5] != 1) return bad("not a 64-bit little-endian ELF file");
  const auto phoff = load<std::uint64_t>(*ehdr, 0x20);
  const auto phentsize = load<std::uint16_t>(*ehdr, 0x36);
  const auto phnum = load<std::uint16_t>(*ehdr, 0x38);
  if (phnum == 0 || phnum > kMaxPhdrs || phentsize < kPhdrSize) return bad("no usable program headers");
  const std::optional<std::string> ph = read(phoff, std::size_t{phnum} * phentsize);
  if (!ph || ph->size() < std::size_t{phnum} * phentsize) return bad("program headers past the end of the file");

  std::vector<Segment> loads;
  std::optional<Segment> dynamic;
  for (std::size_t i = 0; i < phnum; ++i) {
    const std::size_t at = i * phentsize;
    Segment s{load<std::uint32_t>(*ph, at), load<std::uint64_t>(*ph, at + 8), load<std::uint64_t>(*ph, at + 16),
              load<std::uint64_t>(*ph, at + 32)};
    if (s.type == kPtLoad) loads.push_back(s);
    if (s.type == kPtDynamic && !dynamic) dynamic = s;
  }
  if (!dynamic) return bad("no PT_DYNAMIC segment (a statically linked object)");
  const std::size_t dyn_size = static_cast<std::size_t>(std::min<std::uint64_t>(dynamic->filesz, kMaxDynamic));
  const std::optional<std::string> dyn = read(dynamic->offset, dyn_size);
  if (!dyn || dyn->size() < std::min<std::size_t>(dyn_size, kDynSize))
    return bad("PT_DYNAMIC past the end of the file");

  std::optional<std::uint64_t> strtab, strsz;
  std::vector<std::pair<std::int64_t, std::uint64_t>> names;  // (tag, string offset)
  for (std::size_t at = 0; at + kDynSize <= dyn->size(); at += kDynSize) {
    const auto tag = load<std::int64_t>(*dyn, at);
    const auto val = load<std::uint64_t>(*dyn, at + 8);
    if (tag == kDtNull) break;
    if (tag == kDtStrtab) strtab = val;
    if (tag == kDtStrsz) strsz = val;
    if (tag == kDtNeeded || tag == kDtSoname || tag == kDtRpath || tag == kDtRunpath) names.emplace_back(tag, val);
  }
  ElfDynamic out;
  if (names.empty()) return Probed<ElfDynamic>::ok(std::move(out), "PT_DYNAMIC");
  if (!strtab || !strsz) return bad("the dynamic section has no string table (DT_STRTAB/DT_STRSZ)");
  // DT_STRTAB is an address: find the file offset through the PT_LOAD segment holding it.
  std::optional<std::uint64_t> str_off;
  for (const Segment& s : loads) {
    if (*strtab >= s.vaddr && *strtab - s.vaddr < s.filesz) {
      str_off = s.offset + (*strtab - s.vaddr);
      break;
    }
  }
  if (!str_off) return bad("DT_STRTAB lies outside every PT_LOAD segment");

  // Only the strings named are read (a framework's string table holds every exported symbol's
  // name: megabytes), each up to kMaxString bytes.
  for (const auto& [tag, off] : names) {
    if (off >= *strsz) return bad("a dynamic string offset outside the string table");
    const std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(*strsz - off, kMaxString));
    const std::optional<std::string> chunk = read(*str_off + off, room);
    if (!chunk || chunk->empty()) return bad("the dynamic string table runs past the end of the file");
    const std::size_t end = chunk->find('\0');
    if (end == std::string::npos) return bad("an unterminated or overlong dynamic string");
    const std::string value = chunk->substr(0, end);
    switch (tag) {
      case kDtNeeded: out.needed.push_back(value); break;
      case kDtSoname: out.soname = value; break;
      case kDtRpath: {
        const auto parts = split_path_list(value);
        out.rpath.insert(out.rpath.end(), parts.begin(), parts.end());
        break;
      }
      default: {
        out.has_runpath = true;
        const auto parts = split_path_list(value);
        out.runpath.insert(out.runpath.end(), parts.begin(), parts.end());
        break;
      }
    }
  }
  return Probed<ElfDynamic>::ok(std::move(out), "PT_DYNAMIC");
}

Probed<ElfDynamic> parse_elf_dynamic(std::string_view bytes) {
  return parse_elf_dynamic([bytes](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    if (offset >= bytes.size()) return std::nullopt;
    return std::string(bytes.substr(static_cast<std::size_t>(offset), size));
  });
}

std::optional<std::string> expand_origin(std::string_view entry, std::string_view origin_dir) {
  std::string out;
  for (std::size_t i = 0; i < entry.size();) {
    if (entry[i] != '$') {
      out += entry[i++];
      continue;
    }
    std::string_view rest = entry.substr(i + 1);
    if (rest.starts_with("{ORIGIN}")) {
      out += origin_dir;
      i += 9;
    } else if (rest.starts_with("ORIGIN") &&
               (rest.size() == 6 || !(std::isalnum(static_cast<unsigned char>(rest[6])) || rest[6] == '_'))) {
      out += origin_dir;
      i += 7;
    } else {
      return std::nullopt;  // $LIB, $PLATFORM or another token
    }
  }
  if (out.empty() || out.front() != '/') return std::nullopt;
  // Normalise "a/b/../c" lexically, as the loader's path is used to open files.
  std::vector<std::string> parts;
  for (const std::string_view p : split(out, '/')) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.emplace_back(p);
  }
  std::string norm;
  for (const std::string& p : parts) norm += "/" + p;
  return norm.empty() ? std::string("/") : norm;
}

std::vector<LoaderDir> loader_search_order(const ElfDynamic& object, std::string_view object_dir,
                                           std::string_view object_name,
                                           const std::vector<std::string>& ld_library_path,
                                           const std::vector<std::string>& cache_dirs,
                                           const std::vector<std::string>& default_dirs) {
  std::vector<LoaderDir> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& dir, const std::string& via) {
    if (dir.empty() || !seen.insert(dir).second) return;
    out.push_back(LoaderDir{dir, via});
  };
  const std::string name(object_name);
  auto add_list = [&](const std::vector<std::string>& entries, const std::string& via) {
    for (const std::string& e : entries) {
      if (auto d = expand_origin(e, object_dir)) add(*d, via + " " + e);
    }
  };
  if (!object.has_runpath) add_list(object.rpath, "DT_RPATH of " + name + ":");
  for (const std::string& d : ld_library_path) add(d, "LD_LIBRARY_PATH");
  add_list(object.runpath, "DT_RUNPATH of " + name + ":");
  for (const std::string& d : cache_dirs) add(d, "ld.so.cache");
  for (const std::string& d : default_dirs) add(d, "default");
  return out;
}

}  // namespace preflight
