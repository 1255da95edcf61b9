// SPDX-License-Identifier: MIT
// Builds the smallest 64-bit little-endian ELF shared object the dynamic loader's reader needs: an
// ELF header, a PT_LOAD and a PT_DYNAMIC program header, a dynamic section and its string table
// (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH). For tests of core/elf_dynamic and of the framework
// resolution in the cuda_runtime probe, without a compiler at test time.
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

inline void write(const std::string& path, const Spec& spec) {
  std::ofstream(path, std::ios::binary) << build(spec);
}

}  // namespace preflight::elf_fixture
