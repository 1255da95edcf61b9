// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/elf_strings.hpp"
#include "elf_fixture.hpp"
#include "sys/file_system.hpp"

namespace preflight {
namespace core_elf_strings_test {
namespace {

// A minimal ELF64 object: .rodata, a writable .data and .debug_str with NCCL_* strings, and the
// section-name table. Only .rodata's names are variables.
std::string tiny_elf() {
  static const char kRodata[] = "NCCL_BUFFSIZE\0NCCL_ALGO was set to %s\0NCCL_IB_HCA\0xNCCL_NOT";
  static const char kData[] = "NCCL_IN_DATA";
  static const char kDebug[] = "NCCL_IB_SL_DEFAULT";
  return elf_fixture::with_sections({{".rodata", 1, 0x2, std::string(kRodata, sizeof kRodata)},
                                     {".data", 1, 0x3, std::string(kData, sizeof kData)},
                                     {".debug_str", 1, 0x30, std::string(kDebug, sizeof kDebug)}});
}

ElfReader reader(const std::string& bytes) {
  return [&bytes](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
    if (offset > bytes.size()) return std::string();
    return bytes.substr(static_cast<std::size_t>(offset), size);
  };
}

TEST(ElfStrings, WholeNamesOnly) {
  static const char kBytes[] = "NCCL_A\0NCCL_B c\0NCCL_\0ANCCL_C\0NCCL_D_2";
  const std::string bytes(kBytes, sizeof kBytes - 1);
  EXPECT_EQ(env_names_in(bytes, "NCCL_"), (std::vector<std::string>{"NCCL_A", "NCCL_D_2"}));
}

TEST(ElfStrings, ReadsTheReadOnlyDataSectionsOnly) {
  const std::string elf = tiny_elf();
  const Probed<std::vector<std::string>> names = elf_rodata_env_names(reader(elf), "NCCL_", 1u << 20);
  ASSERT_TRUE(names.ok()) << names.why();
  EXPECT_EQ(*names.value(), (std::vector<std::string>{"NCCL_BUFFSIZE", "NCCL_IB_HCA"}));
  EXPECT_FALSE(elf_rodata_env_names(reader(std::string("not an elf file at all, no")), "NCCL_", 1024).ok());
  // The budget bounds what is read: a few bytes of .rodata hold only the first name.
  const Probed<std::vector<std::string>> few = elf_rodata_env_names(reader(elf), "NCCL_", 14);
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(*few.value(), (std::vector<std::string>{"NCCL_BUFFSIZE"}));
}

TEST(ElfStrings, TheRealLibraryNamesItsVariablesNotItsConstants) {
  const char* path = "/usr/local/cuda/lib/libnccl.so.2";
  const FileSystem fs;
  if (!fs.exists(path)) GTEST_SKIP() << "no " << path;
  const Probed<std::vector<std::string>> names = elf_rodata_env_names(
      [&](std::uint64_t offset, std::size_t size) -> std::optional<std::string> {
        Probed<std::string> b = fs.read_at(path, offset, size);
        return b.ok() ? std::optional<std::string>(*b.value()) : std::nullopt;
      },
      "NCCL_", 64u << 20);
  ASSERT_TRUE(names.ok()) << names.why();
  const auto has = [&](const char* n) { return std::binary_search(names.value()->begin(), names.value()->end(), n); };
  EXPECT_TRUE(has("NCCL_BUFFSIZE"));
  EXPECT_TRUE(has("NCCL_SOCKET_IFNAME"));
  EXPECT_TRUE(has("NCCL_DEBUG"));
  EXPECT_FALSE(has("NCCL_IB_SL_DEFAULT"));  // a constant in the debug information
  EXPECT_FALSE(has("NCCL_LOG_WARN"));
  EXPECT_GT(names.value()->size(), 150u);
}

}  // namespace
}  // namespace core_elf_strings_test
}  // namespace preflight
