// SPDX-License-Identifier: MIT
// When a large merge re-executes itself with glibc's huge-page heap tunables (merge_tunables):
// only for many bytes, a glibc that has the tunable, a kernel THP mode that honours it, and never
// over the user's own setting of either tunable (which also keeps the re-executed merge from
// re-executing again).
#include <gtest/gtest.h>

#include "cli/merge_heap.hpp"

namespace preflight {
namespace cli_merge_heap_test {
namespace {

constexpr const char* kMadvise = "always [madvise] never\n";
constexpr std::uintmax_t kLarge = 127u << 20;

TEST(MergeHeap, LargeMergeOnAMadviseKernelGetsTheTunables) {
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2.36", kLarge), std::string(kMergeTunables));
  EXPECT_EQ(merge_tunables(nullptr, "[always] madvise never", "2.35", kMergeHeapTuningMinBytes),
            std::string(kMergeTunables));
  EXPECT_EQ(merge_tunables("", kMadvise, "2.39", kLarge), std::string(kMergeTunables));
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "3.0", kLarge), std::string(kMergeTunables));
}

TEST(MergeHeap, TheUsersOtherTunablesAreKept) {
  EXPECT_EQ(merge_tunables("glibc.malloc.arena_max=2", kMadvise, "2.36", kLarge),
            "glibc.malloc.arena_max=2:" + std::string(kMergeTunables));
}

TEST(MergeHeap, TheUsersOwnHeapSettingStandsAndEndsTheReexecution) {
  EXPECT_EQ(merge_tunables("glibc.malloc.hugetlb=0", kMadvise, "2.36", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables("glibc.malloc.top_pad=0:glibc.malloc.arena_max=2", kMadvise, "2.36", kLarge), std::nullopt);
  // what the re-executed merge finds
  const std::optional<std::string> once = merge_tunables("glibc.malloc.arena_max=2", kMadvise, "2.36", kLarge);
  ASSERT_TRUE(once.has_value());
  EXPECT_EQ(merge_tunables(once->c_str(), kMadvise, "2.36", kLarge), std::nullopt);
}

TEST(MergeHeap, SmallMergesRunAsTheyAre) {
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2.36", kMergeHeapTuningMinBytes - 1), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2.36", 0), std::nullopt);
}

TEST(MergeHeap, KernelsWithoutHugePagesForTheHeapRunAsTheyAre) {
  EXPECT_EQ(merge_tunables(nullptr, "always madvise [never]", "2.36", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, "", "2.36", kLarge), std::nullopt);  // unreadable (no sysfs, no THP)
  EXPECT_EQ(merge_tunables(nullptr, "always madvise never", "2.36", kLarge), std::nullopt);  // none selected
  EXPECT_EQ(merge_tunables(nullptr, "[always", "2.36", kLarge), std::nullopt);
}

TEST(MergeHeap, CLibrariesWithoutTheTunableRunAsTheyAre) {
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2.34", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2.31", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "1.99", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "", kLarge), std::nullopt);  // not glibc
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "2", kLarge), std::nullopt);
  EXPECT_EQ(merge_tunables(nullptr, kMadvise, "two.36", kLarge), std::nullopt);
}

}  // namespace
}  // namespace cli_merge_heap_test
}  // namespace preflight
