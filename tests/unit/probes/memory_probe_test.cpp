// SPDX-License-Identifier: MIT
// The host-memory parsers (core/meminfo, core/cgroup) and probe_memory over the fixture sysroots in
// tests/fixtures/memory.
#include <gtest/gtest.h>

#include "core/cgroup.hpp"
#include "core/meminfo.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_memory_probe_test {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

// ---- /proc/meminfo ----

TEST(Meminfo, ParsesTheFourCountersInBytes) {
  const Probed<MemInfo> p = parse_meminfo(
      "MemTotal:       65843896 kB\nMemFree:         1234 kB\nMemAvailable:   60000000 kB\n"
      "SwapTotal:       2097148 kB\nSwapFree:        2097000 kB\nHugePages_Total:       0\n");
  ASSERT_TRUE(p.ok()) << p.why();
  EXPECT_EQ(p.value()->mem_total, 65843896ull * 1024);
  EXPECT_EQ(p.value()->mem_available, 60000000ull * 1024);
  EXPECT_EQ(p.value()->swap_total, 2097148ull * 1024);
  EXPECT_EQ(p.value()->swap_free, 2097000ull * 1024);
  EXPECT_EQ(p.source(), "/proc/meminfo");
}

TEST(Meminfo, MissingMemAvailableIsAParseErrorNamingTheKernel) {
  const Probed<MemInfo> p = parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::ParseError);
  EXPECT_NE(p.error()->detail.find("no MemAvailable line"), std::string::npos);
  EXPECT_NE(p.error()->detail.find("3.14"), std::string::npos);
}

TEST(Meminfo, GarbageNumbersAreAParseErrorQuotingTheLine) {
  const Probed<MemInfo> p = parse_meminfo("MemTotal: 100 kB\nMemAvailable: lots kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::ParseError);
  EXPECT_NE(p.error()->detail.find("'MemAvailable: lots kB'"), std::string::npos);

  EXPECT_FALSE(parse_meminfo("MemTotal: 100 MB\nMemAvailable: 1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n").ok());
  EXPECT_FALSE(parse_meminfo("MemTotal: -100 kB\nMemAvailable: 1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n").ok());
  EXPECT_FALSE(parse_meminfo("").ok());
}

TEST(Meminfo, HugeValuesFitOrAreRejected) {
  // 16 EiB - 1 KiB is the largest kB count that fits in bytes; one more overflows.
  const std::string rest = "MemAvailable: 1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
  const Probed<MemInfo> fits = parse_meminfo("MemTotal: 18014398509481983 kB\n" + rest);
  ASSERT_TRUE(fits.ok()) << fits.why();
  EXPECT_EQ(fits.value()->mem_total, 18014398509481983ull * 1024);
  EXPECT_FALSE(parse_meminfo("MemTotal: 18014398509481984 kB\n" + rest).ok());
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999999 kB\n" + rest).ok());
}

// ---- /proc/self/cgroup ----

TEST(Cgroup, ProcSelfCgroupV2) {
  const Probed<CgroupMembership> p = parse_proc_self_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n");
  ASSERT_TRUE(p.ok()) << p.why();
  EXPECT_EQ(p.value()->version, 2);
  EXPECT_EQ(p.value()->path, "/user.slice/user-1000.slice/session-2.scope");
}

TEST(Cgroup, ProcSelfCgroupV1MemoryInAControllerList) {
  const Probed<CgroupMembership> p =
      parse_proc_self_cgroup("11:cpu,cpuacct:/a\n7:blkio,memory:/slurm/uid_1000/job_42\n1:name=systemd:/a\n");
  ASSERT_TRUE(p.ok()) << p.why();
  EXPECT_EQ(p.value()->version, 1);
  EXPECT_EQ(p.value()->path, "/slurm/uid_1000/job_42");
}

TEST(Cgroup, ProcSelfCgroupHybridPrefersTheV1MemoryHierarchy) {
  const Probed<CgroupMembership> p = parse_proc_self_cgroup("0::/docker/x\n12:memory:/docker/x\n");
  ASSERT_TRUE(p.ok()) << p.why();
  EXPECT_EQ(p.value()->version, 1);
}

TEST(Cgroup, ProcSelfCgroupPathMayContainColons) {
  const Probed<CgroupMembership> p = parse_proc_self_cgroup("0::/kubepods/pod:a:b\n");
  ASSERT_TRUE(p.ok()) << p.why();
  EXPECT_EQ(p.value()->path, "/kubepods/pod:a:b");
}

TEST(Cgroup, ProcSelfCgroupWithoutMemoryIsUnsupported) {
  const Probed<CgroupMembership> p = parse_proc_self_cgroup("3:cpu,cpuacct:/\n2:devices:/\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(parse_proc_self_cgroup("").error()->code, ProbeErrc::Unsupported);
}

TEST(Cgroup, ProcSelfCgroupMalformedLineIsAParseError) {
  for (const char* text : {"garbage\n", "x:memory:/a\n", "4:memory:relative\n", "4:memory\n"}) {
    const Probed<CgroupMembership> p = parse_proc_self_cgroup(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.error()->code, ProbeErrc::ParseError) << text;
  }
}

// ---- value files ----

TEST(Cgroup, LimitValues) {
  EXPECT_EQ(parse_cgroup_limit("max\n"), kCgroupUnlimited);
  EXPECT_EQ(parse_cgroup_limit("34359738368"), 32 * kGiB);
  EXPECT_EQ(parse_cgroup_limit("0"), 0u);
  EXPECT_EQ(parse_cgroup_limit("9223372036854771712"), kCgroupUnlimited);        // v1, 4 KiB pages
  EXPECT_EQ(parse_cgroup_limit("9223372036854710272"), kCgroupUnlimited);        // v1, 64 KiB pages
  EXPECT_EQ(parse_cgroup_limit("4611686018427387903"), 4611686018427387903ull);  // just under 2^62
  EXPECT_FALSE(parse_cgroup_limit("lots"));
  EXPECT_FALSE(parse_cgroup_limit("-1"));
  EXPECT_FALSE(parse_cgroup_limit("32G"));
  EXPECT_FALSE(parse_cgroup_limit(""));
}

TEST(Cgroup, StatValues) {
  const char* stat = "anon 10\nfile 20\ninactive_file 7\ntotal_inactive_file 9\nbad_value x\n";
  EXPECT_EQ(parse_cgroup_stat(stat, "inactive_file"), 7u);
  EXPECT_EQ(parse_cgroup_stat(stat, "total_inactive_file"), 9u);
  EXPECT_FALSE(parse_cgroup_stat(stat, "bad_value"));
  EXPECT_FALSE(parse_cgroup_stat(stat, "missing"));
}

// ---- mounts and the hierarchy ----

TEST(Cgroup, LineageGoesUpToTheRoot) {
  EXPECT_EQ(cgroup_lineage("/a/b/c", "/"), (std::vector<std::string>{"/a/b/c", "/a/b", "/a", "/"}));
  EXPECT_EQ(cgroup_lineage("/docker/x/y", "/docker/x"), (std::vector<std::string>{"/docker/x/y", "/docker/x"}));
  EXPECT_EQ(cgroup_lineage("/", "/"), (std::vector<std::string>{"/"}));
  EXPECT_TRUE(cgroup_lineage("/docker/xy", "/docker/x").empty());  // a prefix, not an ancestor
  EXPECT_TRUE(cgroup_lineage("/other", "/docker/x").empty());
}

TEST(Cgroup, FindsTheMemoryMountAndResolvesAContainerRoot) {
  const MountInfo info = parse_mountinfo(
      "25 24 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
      "26 24 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
      "27 24 0:37 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
  const MountInfoLine* v1 = find_memory_cgroup_mount(info, {1, "/docker/abc"});
  ASSERT_NE(v1, nullptr);
  EXPECT_EQ(v1->mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup_dir(*v1, "/docker/abc"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup_dir(*v1, "/docker/abc/inner"), "/sys/fs/cgroup/memory/inner");
  EXPECT_EQ(find_memory_cgroup_mount(info, {1, "/elsewhere"}), nullptr);

  const MountInfoLine* v2 = find_memory_cgroup_mount(info, {2, "/user.slice"});
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(cgroup_dir(*v2, "/user.slice"), "/sys/fs/cgroup/unified/user.slice");
  EXPECT_EQ(cgroup_dir(*v2, "/"), "/sys/fs/cgroup/unified");
}

// ---- the probe over fixture sysroots ----

MemoryFacts probe(const std::string& fixture) {
  const FileSystem fs(std::string(preflight::test_paths::fixtures_dir() + "/memory/") + fixture);
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_memory(ProbeContext{fs, env, options}, facts);
  return facts.memory;
}

TEST(MemoryProbe, CgroupV2SmallestLimitOnThePathWins) {
  const MemoryFacts m = probe("cgroup2-limited");
  ASSERT_TRUE(m.meminfo.ok()) << m.meminfo.why();
  EXPECT_EQ(m.meminfo.value()->mem_total, 128 * kGiB);
  EXPECT_EQ(m.meminfo.value()->mem_available, 120 * kGiB);
  ASSERT_TRUE(m.cgroup.ok()) << m.cgroup.why();
  const CgroupMemory& cg = *m.cgroup.value();
  EXPECT_EQ(cg.version, 2);
  EXPECT_EQ(cg.path, "/job.slice");  // 32 GiB on the slice beats 48 GiB on the scope
  EXPECT_EQ(cg.limit, 32 * kGiB);
  EXPECT_EQ(cg.usage, 2 * kGiB);
  EXPECT_EQ(cg.inactive_file, 1 * kGiB);
  EXPECT_EQ(cg.swap_limit, 0u);
  EXPECT_EQ(m.cgroup.source(), "/sys/fs/cgroup/job.slice");
}

TEST(MemoryProbe, CgroupV1InAContainerWhoseMountRootIsItsOwnGroup) {
  const MemoryFacts m = probe("cgroup1-container");
  ASSERT_TRUE(m.cgroup.ok()) << m.cgroup.why();
  const CgroupMemory& cg = *m.cgroup.value();
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.path, "/docker/0123abcd");
  EXPECT_EQ(cg.limit, 16 * kGiB);
  EXPECT_EQ(cg.usage, 4 * kGiB);
  EXPECT_EQ(cg.inactive_file, 512ull << 20);  // total_inactive_file, not the group-local line
  EXPECT_EQ(cg.swap_limit, 8 * kGiB);         // memsw 24 GiB - memory 16 GiB
}

TEST(MemoryProbe, CgroupV1UnlimitedEverywhere) {
  const MemoryFacts m = probe("cgroup1-unlimited");
  ASSERT_TRUE(m.cgroup.ok()) << m.cgroup.why();
  const CgroupMemory& cg = *m.cgroup.value();
  EXPECT_EQ(cg.version, 1);
  EXPECT_FALSE(cg.limit);
  EXPECT_FALSE(cg.swap_limit);
  EXPECT_EQ(cg.path, "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(cg.usage, 123456789u);
}

TEST(MemoryProbe, NoMemoryControllerIsUnsupportedNotAnError) {
  const MemoryFacts m = probe("no-cgroup");
  ASSERT_TRUE(m.meminfo.ok());
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::Unsupported);
}

TEST(MemoryProbe, UnmountedHierarchyIsNotFound) {
  const MemoryFacts m = probe("cgroup2-unmounted");
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(m.cgroup.source(), "/proc/self/mountinfo");
}

TEST(MemoryProbe, MissingGroupDirectoryIsNotFoundNotUnlimited) {
  const MemoryFacts m = probe("cgroup2-missing-group");
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(m.cgroup.source(), "/sys/fs/cgroup/gone.scope");
}

TEST(MemoryProbe, GarbageFilesBecomeParseErrors) {
  const MemoryFacts m = probe("garbage");
  ASSERT_FALSE(m.meminfo.ok());
  EXPECT_EQ(m.meminfo.error()->code, ProbeErrc::ParseError);
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(m.cgroup.source(), "/sys/fs/cgroup/memory.max");
  EXPECT_NE(m.cgroup.error()->detail.find("'lots'"), std::string::npos);
}

TEST(MemoryProbe, UnreadableFilesBecomeUnreadableErrors) {
  const MemoryFacts m = probe("unreadable");  // directories where the files should be (EISDIR)
  ASSERT_FALSE(m.meminfo.ok());
  EXPECT_EQ(m.meminfo.error()->code, ProbeErrc::Unreadable);
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::Unreadable);
  EXPECT_EQ(m.cgroup.source(), "/sys/fs/cgroup/memory.max");
}

TEST(MemoryProbe, MissingTreeIsNotFoundAndUnsupported) {
  const MemoryFacts m = probe("does-not-exist");
  ASSERT_FALSE(m.meminfo.ok());
  EXPECT_EQ(m.meminfo.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(m.meminfo.source(), "/proc/meminfo");
  ASSERT_FALSE(m.cgroup.ok());
  EXPECT_EQ(m.cgroup.error()->code, ProbeErrc::Unsupported);
}

}  // namespace
}  // namespace probes_memory_probe_test
}  // namespace preflight
