// SPDX-License-Identifier: MIT
// The affinity probe: live (this process, pinned by the test) and over a generated --sysroot tree.
#include <sched.h>

#include <gtest/gtest.h>

#include "pcie_sysfs_fixture.hpp"
#include "probes/probe.hpp"
#include "sys/os.hpp"

namespace preflight {
namespace probes_affinity_probe_test {
namespace {
using namespace pcie_fixture;

AffinityFacts probe(const FileSystem& fs) {
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_affinity(ProbeContext{fs, env, options}, facts);
  return facts.affinity;
}

TEST(AffinityProbe, LiveMatchesSchedGetaffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> want;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(static_cast<std::size_t>(c), &set)) want.push_back(c);
  }
  const AffinityFacts a = probe(FileSystem{});
  ASSERT_TRUE(a.cpus.ok()) << a.cpus.why();
  EXPECT_EQ(*a.cpus.value(), want);
  EXPECT_EQ(a.cpus.source(), "sched_getaffinity(0)");
  ASSERT_TRUE(a.online_cpus.ok()) << a.online_cpus.why();
  EXPECT_FALSE(a.online_cpus.value()->empty());
  if (a.mempolicy.ok()) {
    EXPECT_FALSE(a.mempolicy.value()->mode.empty());
    EXPECT_EQ(a.mempolicy.value()->mode.find("unknown"), std::string::npos);
  } else {
    EXPECT_EQ(a.mempolicy.error()->code, ProbeErrc::PermissionDenied) << a.mempolicy.why();
  }
}

TEST(AffinityProbe, LivePinnedToOneCpu) {
  cpu_set_t old;
  ASSERT_EQ(::sched_getaffinity(0, sizeof old, &old), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c) {
    if (CPU_ISSET(static_cast<std::size_t>(c), &old)) first = c;
  }
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(static_cast<std::size_t>(first), &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  const AffinityFacts a = probe(FileSystem{});
  ::sched_setaffinity(0, sizeof old, &old);
  ASSERT_TRUE(a.cpus.ok());
  EXPECT_EQ(*a.cpus.value(), std::vector<int>{first});
}

TEST(AffinityProbe, SysrootReadsFilesButNotTheProcess) {
  TempTree t;
  build_two_socket(t.path());
  const AffinityFacts a = probe(FileSystem{t.path().string()});
  ASSERT_FALSE(a.cpus.ok());
  EXPECT_EQ(a.cpus.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(a.cpus.why().find("--sysroot"), std::string::npos);
  EXPECT_EQ(a.mempolicy.error()->code, ProbeErrc::Unsupported);
  ASSERT_TRUE(a.online_cpus.ok());
  EXPECT_EQ(a.online_cpus.value()->size(), 32u);
  ASSERT_TRUE(a.mems_allowed.ok()) << a.mems_allowed.why();
  EXPECT_EQ(*a.mems_allowed.value(), (std::vector<int>{0, 1}));
  ASSERT_TRUE(a.numa_nodes.ok()) << a.numa_nodes.why();
  ASSERT_EQ(a.numa_nodes.value()->size(), 2u);
  EXPECT_EQ((*a.numa_nodes.value())[1].node, 1);
  EXPECT_EQ((*a.numa_nodes.value())[1].cpus.front(), 16);
  EXPECT_EQ((*a.numa_nodes.value())[1].cpus.back(), 31);
}

TEST(AffinityProbe, GarbageAndMissingFiles) {
  TempTree t;
  write_file(t.path() / "sys/devices/system/cpu/online", "zero-one\n");
  write_file(t.path() / "proc/self/status", "Name:\tx\n");
  const AffinityFacts a = probe(FileSystem{t.path().string()});
  EXPECT_EQ(a.online_cpus.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(a.mems_allowed.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(a.numa_nodes.error()->code, ProbeErrc::NotFound);
}

TEST(AffinityProbe, MempolicyModeNames) {
  EXPECT_EQ(mempolicy_mode_name(0), "default");
  EXPECT_EQ(mempolicy_mode_name(1), "preferred");
  EXPECT_EQ(mempolicy_mode_name(2), "bind");
  EXPECT_EQ(mempolicy_mode_name(2 | (1 << 15)), "bind");        // MPOL_F_STATIC_NODES
  EXPECT_EQ(mempolicy_mode_name(3 | (1 << 14)), "interleave");  // MPOL_F_RELATIVE_NODES
  EXPECT_EQ(mempolicy_mode_name(4), "local");
  EXPECT_EQ(mempolicy_mode_name(5), "preferred_many");
  EXPECT_EQ(mempolicy_mode_name(6 | (1 << 13)), "weighted_interleave");  // MPOL_F_NUMA_BALANCING
  EXPECT_EQ(mempolicy_mode_name(9), "unknown(9)");
}

}  // namespace
}  // namespace probes_affinity_probe_test
}  // namespace preflight
