// SPDX-License-Identifier: MIT
#include "core/fatbin.hpp"

#include <gtest/gtest.h>

#include "elf_fixture.hpp"

namespace preflight {
namespace core_fatbin_test {
namespace {

using elf_fixture::FatbinEntry;

ElfReader reader(const std::string& bytes) {
  return [bytes](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    if (offset > bytes.size()) return std::string();
    return bytes.substr(static_cast<std::size_t>(offset), size);
  };
}

std::string library(const std::string& section, const std::string& fatbins) {
  return elf_fixture::add_sections(elf_fixture::build({}),
                                   {{".rodata", 1, 0x2, "strings"}, {section, 1, 0x2, fatbins}});
}

std::vector<FatbinEntry> sass(std::initializer_list<std::uint32_t> sms) {
  std::vector<FatbinEntry> out;
  for (std::uint32_t sm : sms) out.push_back({2, sm, 1000 + sm, sm >= 100 ? 112u : 64u});
  return out;
}

// A PyPI CUDA wheel of torch: SASS for every architecture it was built for, no PTX.
TEST(Fatbin, SassOnly) {
  const std::string lib = library(".nv_fatbin", elf_fixture::fatbin(sass({50, 60, 70, 75, 80, 86, 90})) +
                                                    elf_fixture::fatbin(sass({50, 60, 70, 75, 80, 86, 90})));
  const Probed<FatbinArchs> a = elf_fatbin_archs(reader(lib));
  ASSERT_TRUE(a.ok()) << a.why();
  EXPECT_EQ(a.value()->arch_list(),
            (std::vector<std::string>{"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"}));
  EXPECT_EQ(a.value()->containers, 2u);
  EXPECT_EQ(a.value()->entries, 14u);
  EXPECT_EQ(a.value()->section, ".nv_fatbin");
}

TEST(Fatbin, PtxOnly) {
  const std::string lib = library(".nv_fatbin", elf_fixture::fatbin({{1, 80, 333, 64}}));
  const Probed<FatbinArchs> a = elf_fatbin_archs(reader(lib));
  ASSERT_TRUE(a.ok()) << a.why();
  EXPECT_EQ(a.value()->arch_list(), (std::vector<std::string>{"compute_80"}));
}

// Containers of either kind with the extended headers of SM 100 and later (112-byte ELF, 80-byte PTX
// entries), zero padding between containers; the relocatable section when there is no other.
TEST(Fatbin, MixedWithExtendedHeadersAndPadding) {
  std::vector<FatbinEntry> entries = sass({75, 80, 90, 100, 120});
  entries.push_back({1, 120, 5000, 80});
  const std::string bytes = elf_fixture::fatbin(entries) + std::string(16, '\0') + elf_fixture::fatbin(sass({110}));
  for (const char* section : {".nv_fatbin", "__nv_relfatbin"}) {
    const Probed<FatbinArchs> a = elf_fatbin_archs(reader(library(section, bytes)));
    ASSERT_TRUE(a.ok()) << a.why();
    EXPECT_EQ(a.value()->arch_list(),
              (std::vector<std::string>{"sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"}));
    EXPECT_EQ(a.value()->section, section);
  }
}

TEST(Fatbin, UnreadableLibrariesAreErrorsNeverAGuess) {
  // No device code at all.
  EXPECT_EQ(elf_fatbin_archs(reader(library(".data", "x"))).error()->code, ProbeErrc::NotFound);
  // Not ELF.
  EXPECT_EQ(elf_fatbin_archs(reader("#!/bin/sh\n")).error()->code, ProbeErrc::ParseError);
  // A section that does not start with a fatbin header.
  const Probed<FatbinArchs> garbage = elf_fatbin_archs(reader(library(".nv_fatbin", std::string(64, 'Z'))));
  EXPECT_EQ(garbage.error()->code, ProbeErrc::ParseError);
  EXPECT_NE(garbage.why().find("no fatbin header"), std::string::npos) << garbage.why();
  // A container that claims more than its section holds.
  std::string cut = elf_fixture::fatbin(sass({80, 90}));
  cut.resize(cut.size() - 200);
  EXPECT_EQ(elf_fatbin_archs(reader(library(".nv_fatbin", cut))).error()->code, ProbeErrc::ParseError);
  // An entry larger than its container.
  std::string big = elf_fixture::fatbin(sass({80}));
  elf_fixture::put_int<std::uint64_t>(big, 16 + 8, 1u << 30);
  EXPECT_EQ(elf_fatbin_archs(reader(library(".nv_fatbin", big))).error()->code, ProbeErrc::ParseError);
  // More entries than the bound: nothing partial.
  const Probed<FatbinArchs> bounded =
      elf_fatbin_archs(reader(library(".nv_fatbin", elf_fixture::fatbin(sass({70, 80, 90})))), 2);
  EXPECT_EQ(bounded.error()->code, ProbeErrc::Unsupported);
}

// The real layout, as NCCL 2.28.9's libnccl.so.2 for CUDA 13 has it (sm_75 ... sm_120 SASS and
// compute_120 PTX), where this machine has that library.
TEST(Fatbin, ReadsARealLibraryWhereOneIsInstalled) {
  const std::string path = "/usr/local/cuda/lib64/libnccl.so.2";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) GTEST_SKIP() << path << " is not installed";
  const ElfReader read = [f](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    std::string out(size, '\0');
    if (::fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0) return std::nullopt;
    out.resize(std::fread(out.data(), 1, size, f));
    return out;
  };
  const Probed<FatbinArchs> a = elf_fatbin_archs(read);
  std::fclose(f);
  ASSERT_TRUE(a.ok()) << a.why();
  EXPECT_TRUE(a.value()->sass.count(90) == 1 || a.value()->sass.count(80) == 1) << a.value()->arch_list().size();
  EXPECT_GT(a.value()->containers, 0u);
}

}  // namespace
}  // namespace core_fatbin_test
}  // namespace preflight
