// SPDX-License-Identifier: MIT
#include "core/elf_symbols.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "elf_fixture.hpp"

namespace preflight {
namespace core_elf_symbols_test {
namespace {

using elf_fixture::Symbol;

ElfReader reader(const std::string& bytes) {
  return [bytes](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    if (offset > bytes.size()) return std::string();
    return bytes.substr(static_cast<std::size_t>(offset), size);
  };
}

std::string object(const std::vector<Symbol>& symbols) {
  return elf_fixture::add_sections(elf_fixture::build({}), elf_fixture::dynsym(symbols));
}

std::vector<std::string> symbols(const std::string& lib, SymbolSide side) {
  const Probed<std::vector<std::string>> s = elf_dynamic_symbols(reader(lib), side, "nccl");
  EXPECT_TRUE(s.ok()) << s.why();
  return s.ok() ? *s.value() : std::vector<std::string>{};
}

// torch's libtorch_cuda.so leaves NCCL's functions undefined; libnccl.so.2 exports them (global,
// or weak), and keeps its own helpers local.
TEST(ElfSymbols, NeededAndExported) {
  const std::string torch = object({{"ncclGetUniqueId", false},
                                    {"ncclCommRegister", false},
                                    {"ncclGetUniqueId", false},
                                    {"cudaMalloc", false},
                                    {"_ZN3c104cuda5getDeviceEv", true},
                                    {"ncclLocalHelper", true}});
  EXPECT_EQ(symbols(torch, SymbolSide::Needed), (std::vector<std::string>{"ncclCommRegister", "ncclGetUniqueId"}));
  EXPECT_EQ(symbols(torch, SymbolSide::Exported), (std::vector<std::string>{"ncclLocalHelper"}));
  const std::string nccl =
      object({{"ncclGetUniqueId", true, 1}, {"ncclAllReduce", true, 2}, {"ncclInternal", true, 0}, {"ncclX", false}});
  EXPECT_EQ(symbols(nccl, SymbolSide::Exported), (std::vector<std::string>{"ncclAllReduce", "ncclGetUniqueId"}));
}

TEST(ElfSymbols, UnreadableObjectsAreErrorsNotEmptyLists) {
  EXPECT_EQ(elf_dynamic_symbols(reader("not an ELF file at all, but long enough to have a header......"),
                                SymbolSide::Needed, "nccl")
                .error()
                ->code,
            ProbeErrc::ParseError);
  // Sections but no .dynsym: a static object.
  const std::string no_dynsym = elf_fixture::add_sections(elf_fixture::build({}), {{".text", 1, 0x6, "code"}});
  EXPECT_EQ(elf_dynamic_symbols(reader(no_dynsym), SymbolSide::Needed, "nccl").error()->code, ProbeErrc::NotFound);
  // A table cut short by the end of the file.
  std::string lib = object({{"ncclAllReduce", false}});
  std::vector<elf_fixture::Section> big = elf_fixture::dynsym({{"ncclAllReduce", false}});
  big[0].bytes.resize(24 * 5000, '\0');
  const std::string cut = elf_fixture::add_sections(elf_fixture::build({}), big).substr(0, 24 * 3000);
  EXPECT_FALSE(elf_dynamic_symbols(reader(cut), SymbolSide::Needed, "nccl").ok());
  // More symbols than the bound.
  EXPECT_EQ(elf_dynamic_symbols(reader(lib), SymbolSide::Needed, "nccl", 1).error()->code, ProbeErrc::Unsupported);
  // A name offset past the string table.
  std::vector<elf_fixture::Section> bad = elf_fixture::dynsym({{"ncclAllReduce", false}});
  bad[0].bytes[24] = '\x7f';
  bad[0].bytes[25] = '\x7f';
  EXPECT_EQ(
      elf_dynamic_symbols(reader(elf_fixture::add_sections(elf_fixture::build({}), bad)), SymbolSide::Needed, "nccl")
          .error()
          ->code,
      ProbeErrc::ParseError);
}

// The layout checked against a real NCCL where one is installed (the CUDA toolkit's, or Debian's).
TEST(ElfSymbols, RealNcclExportsTheApiTorchCalls) {
  std::string path;
  for (const char* p : {"/usr/local/cuda/lib64/libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}) {
    if (std::filesystem::exists(p)) path = p;
  }
  if (path.empty()) GTEST_SKIP() << "no libnccl.so.2 installed";
  const ElfReader file = [path](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::string out(size, '\0');
    in.read(out.data(), static_cast<std::streamsize>(size));
    out.resize(static_cast<std::size_t>(in.gcount()));
    return out;
  };
  const Probed<std::vector<std::string>> read = elf_dynamic_symbols(file, SymbolSide::Exported, "nccl");
  ASSERT_TRUE(read.ok()) << read.why();
  const std::vector<std::string>& exported = *read.value();
  for (const char* api : {"ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitRankConfig",
                          "ncclAllReduce", "ncclCommDestroy", "ncclCommAbort", "ncclGroupStart", "ncclGroupEnd"}) {
    EXPECT_TRUE(std::binary_search(exported.begin(), exported.end(), api)) << api << " in " << path;
  }
}

}  // namespace
}  // namespace core_elf_symbols_test
}  // namespace preflight
