// SPDX-License-Identifier: MIT
// core/elf_dynamic: the dynamic section of ELF objects (DT_NEEDED, DT_RPATH, DT_RUNPATH), $ORIGIN,
// and ld.so's search order; malformed files are errors, never crashes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "core/elf_dynamic.hpp"
#include "elf_fixture.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace {

using elf_fixture::Spec;

TEST(ElfDynamic, ReadsNeededSonameAndRpath) {
  Spec spec;
  spec.needed = {"libc10_cuda.so", "libcudart.so.12", "libnccl.so.2"};
  spec.soname = "libtorch_cuda.so";
  spec.rpath = "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN";
  const Probed<ElfDynamic> e = parse_elf_dynamic(elf_fixture::build(spec));
  ASSERT_TRUE(e.ok()) << e.why();
  EXPECT_EQ(e.value()->needed, spec.needed);
  EXPECT_EQ(e.value()->soname, "libtorch_cuda.so");
  EXPECT_EQ(e.value()->rpath, (std::vector<std::string>{"$ORIGIN/../../nvidia/cuda_runtime/lib",
                                                        "$ORIGIN/../../nvidia/nccl/lib", "$ORIGIN"}));
  EXPECT_FALSE(e.value()->has_runpath);
}

TEST(ElfDynamic, RunpathIsSeparateAndAnEmptyOneStillCounts) {
  Spec spec;
  spec.needed = {"libcudart.so.13"};
  spec.rpath = "/old";
  spec.runpath = "";
  const Probed<ElfDynamic> e = parse_elf_dynamic(elf_fixture::build(spec));
  ASSERT_TRUE(e.ok()) << e.why();
  EXPECT_TRUE(e.value()->has_runpath);
  EXPECT_EQ(e.value()->rpath, std::vector<std::string>{"/old"});
}

TEST(ElfDynamic, AStringTableAtAnUnalignedAddressIsFoundThroughPtLoad) {
  Spec spec;
  spec.needed = {"libcudart.so.12"};
  spec.vaddr = 0x7f0000001000;
  spec.padding = 333;
  const Probed<ElfDynamic> e = parse_elf_dynamic(elf_fixture::build(spec));
  ASSERT_TRUE(e.ok()) << e.why();
  EXPECT_EQ(e.value()->needed, std::vector<std::string>{"libcudart.so.12"});
}

TEST(ElfDynamic, MalformedFilesAreErrorsNamingWhat) {
  EXPECT_NE(parse_elf_dynamic(std::string_view("")).why().find("not an ELF file"), std::string::npos);
  EXPECT_NE(parse_elf_dynamic(std::string_view("#!/bin/sh\n")).why().find("not an ELF file"), std::string::npos);
  std::string elf32 = elf_fixture::build(Spec{});
  elf32[4] = 1;
  EXPECT_NE(parse_elf_dynamic(elf32).why().find("64-bit little-endian"), std::string::npos);
  Spec spec;
  spec.needed = {"libcudart.so.12"};
  const std::string good = elf_fixture::build(spec);
  EXPECT_NE(parse_elf_dynamic(std::string_view(good).substr(0, 40)).why().find("truncated"), std::string::npos);
  EXPECT_NE(parse_elf_dynamic(std::string_view(good).substr(0, 100)).why().find("program headers"), std::string::npos);
  // Every prefix and every single-byte corruption is an answer, never a crash.
  for (std::size_t n = 0; n < good.size(); ++n) (void)parse_elf_dynamic(std::string_view(good).substr(0, n));
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(~bad[i]);
    (void)parse_elf_dynamic(bad);
  }
  // No PT_DYNAMIC: a static object.
  std::string no_dyn = good;
  no_dyn[64 + 56] = 6;  // the second program header becomes PT_PHDR
  EXPECT_NE(parse_elf_dynamic(no_dyn).why().find("no PT_DYNAMIC"), std::string::npos);
}

TEST(ElfDynamic, ReadsThroughTheReaderOnlyWhatItNeeds) {
  Spec spec;
  spec.needed = {"libcudart.so.12"};
  spec.padding = 1 << 20;  // a large object: the reader is asked for small pieces only
  const std::string bytes = elf_fixture::build(spec);
  std::size_t asked = 0;
  const Probed<ElfDynamic> e = parse_elf_dynamic([&](std::uint64_t off, std::size_t n) -> std::optional<std::string> {
    asked += n;
    if (off >= bytes.size()) return std::nullopt;
    return bytes.substr(static_cast<std::size_t>(off), n);
  });
  ASSERT_TRUE(e.ok()) << e.why();
  EXPECT_LT(asked, 4096u);
}

TEST(ElfDynamic, ExpandOrigin) {
  EXPECT_EQ(expand_origin("$ORIGIN/../../nvidia/cuda_runtime/lib", "/venv/site/torch/lib"),
            "/venv/site/nvidia/cuda_runtime/lib");
  EXPECT_EQ(expand_origin("${ORIGIN}", "/a/b"), "/a/b");
  EXPECT_EQ(expand_origin("$ORIGIN/../../../..", "/conda/lib/python3.11/site-packages/torch/lib"), "/conda/lib");
  EXPECT_EQ(expand_origin("/usr/local/cuda/lib64/", "/x"), "/usr/local/cuda/lib64");
  EXPECT_EQ(expand_origin("$LIB/x", "/x"), std::nullopt);
  EXPECT_EQ(expand_origin("$ORIGINAL", "/x"), std::nullopt);
  EXPECT_EQ(expand_origin("relative/dir", "/x"), std::nullopt);
  EXPECT_EQ(expand_origin("", "/x"), std::nullopt);
}

std::vector<std::string> dirs(const std::vector<LoaderDir>& order) {
  std::vector<std::string> out;
  for (const LoaderDir& d : order) out.push_back(d.dir + " <" + d.via + ">");
  return out;
}

TEST(ElfDynamic, SearchOrderRpathBeforeLdLibraryPathRunpathAfter) {
  ElfDynamic rpath;
  rpath.rpath = {"$ORIGIN/../lib"};
  EXPECT_EQ(dirs(loader_search_order(rpath, "/o/bin", "libx.so", {"/ld"}, {"/conf"}, {"/usr/lib"})),
            (std::vector<std::string>{"/o/lib <DT_RPATH of libx.so: $ORIGIN/../lib>", "/ld <LD_LIBRARY_PATH>",
                                      "/conf <ld.so.cache>", "/usr/lib <default>"}));
  ElfDynamic both = rpath;  // DT_RUNPATH present: DT_RPATH is ignored
  both.has_runpath = true;
  both.runpath = {"/run"};
  EXPECT_EQ(dirs(loader_search_order(both, "/o/bin", "libx.so", {"/ld", "/run"}, {"/usr/lib"}, {"/usr/lib"})),
            (std::vector<std::string>{"/ld <LD_LIBRARY_PATH>", "/run <LD_LIBRARY_PATH>", "/usr/lib <ld.so.cache>"}));
}

}  // namespace
}  // namespace preflight

namespace preflight {
namespace {

// Real linker output (GNU ld, stripped), kept as the fuzz target's seeds: libx.so needing
// libcudart.so.12, once with DT_RPATH (--disable-new-dtags) and once with DT_RUNPATH.
TEST(ElfDynamic, ReadsWhatTheRealLinkerWrites) {
  const std::string dir = preflight::test_paths::fixtures_dir() + "/../fuzz/corpus/elf_dynamic/";
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const Probed<ElfDynamic> rpath = parse_elf_dynamic(read(dir + "rpath"));
  ASSERT_TRUE(rpath.ok()) << rpath.why();
  EXPECT_EQ(rpath.value()->needed, (std::vector<std::string>{"libcudart.so.12", "libc.so.6"}));
  EXPECT_EQ(rpath.value()->rpath, (std::vector<std::string>{"$ORIGIN/../../nvidia/cuda_runtime/lib", "$ORIGIN"}));
  EXPECT_FALSE(rpath.value()->has_runpath);
  const Probed<ElfDynamic> runpath = parse_elf_dynamic(read(dir + "runpath"));
  ASSERT_TRUE(runpath.ok()) << runpath.why();
  EXPECT_TRUE(runpath.value()->has_runpath);
  EXPECT_EQ(runpath.value()->runpath, std::vector<std::string>{"$ORIGIN/../../nvidia/cu13/lib"});
  EXPECT_TRUE(runpath.value()->rpath.empty());
}

}  // namespace
}  // namespace preflight
