// SPDX-License-Identifier: MIT
// shm.capacity on hand-built facts (every status), the /dev/shm need model, and the probe over a
// captured tree.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "core/shm_model.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace checks_shm_capacity_test {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

RankFacts facts_with_shm(std::uint64_t total, std::uint64_t free_bytes, int local_ranks = 8) {
  RankFacts f;
  f.placement.local_ranks = local_ranks;
  FsUsage u;
  u.total_bytes = total;
  u.free_bytes = free_bytes;
  u.is_tmpfs = true;
  u.writable = true;
  f.shm.usage = Probed<FsUsage>::ok(u, "statfs(/dev/shm)");
  MountEntry m;
  m.mount_point = "/dev/shm";
  m.fstype = "tmpfs";
  m.source = "shm";
  m.options = "rw,nosuid,size=65536k";
  f.shm.mount = Probed<MountEntry>::ok(m, "/proc/self/mountinfo");
  ShmAllocTest t;
  t.ok = true;
  t.requested_bytes = 1;
  f.shm.alloc = Probed<ShmAllocTest>::ok(t, "fallocate");
  return f;
}

Verdict judge(const RankFacts& f, Options o = {}, Profile p = Profile::Node) {
  return run_check(kShmCapacity, CheckContext{f, o, p});
}

TEST(ShmNeed, CountsProxyPoolShmTransportAndDataLoaderPerLocalRank) {
  Placement p;
  p.local_ranks = 8;
  const ShmNeed n = shm_need(p, Options{}, EnvSnapshot{});
  EXPECT_TRUE(n.network_transport);
  EXPECT_TRUE(n.shm_transport);
  EXPECT_EQ(n.proxy_per_rank, kNcclProxyPoolBytes);
  EXPECT_EQ(n.shm_transport_per_rank, 4u * 9637888u);
  EXPECT_EQ(n.dataloader_per_rank, 256 * kMiB);
  EXPECT_EQ(n.node_total, 8 * n.per_rank);
  EXPECT_NE(n.formula.find("8 local ranks"), std::string::npos);
}

TEST(ShmNeed, SingleNodeHasNoProxyPoolAndShmDisableDropsSegments) {
  Placement p;
  p.local_ranks = 4;
  p.nodes = 1;
  const ShmNeed n = shm_need(p, Options{}, EnvSnapshot({{"NCCL_SHM_DISABLE", "1"}}));
  EXPECT_FALSE(n.network_transport);
  EXPECT_FALSE(n.shm_transport);
  EXPECT_EQ(n.node_total, 4 * 256 * kMiB);
}

TEST(ShmNeed, BuffsizeIsReadTheWayNcclReadsIt) {
  Placement p;
  p.local_ranks = 2;
  // strtoll(.., 0): hexadecimal is accepted.
  const ShmNeed n = shm_need(p, Options{}, EnvSnapshot({{"NCCL_BUFFSIZE", "0x800000"}}));
  EXPECT_EQ(n.shm_transport_per_rank, 4u * (kNcclShmSegmentFixedBytes + 8 * kMiB));
}

TEST(ShmNeed, RecommendationRoundsUpToWholeGiB) {
  EXPECT_EQ(recommended_shm_bytes(100 * kMiB), kGiB);
  EXPECT_EQ(recommended_shm_bytes(2 * kGiB), 3 * kGiB);
  EXPECT_EQ(recommended_shm_bytes(2 * kGiB + 1), 4 * kGiB);
}

TEST(ShmCapacity, PassesWhenLargeEnough) {
  const Verdict v = judge(facts_with_shm(8 * kGiB, 8 * kGiB));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "shm.capacity/enough");
  EXPECT_NE(v.summary.find("8 GiB"), std::string::npos);
  EXPECT_EQ(v.evidence["local_ranks"], 8);
}

TEST(ShmCapacity, FailsWhen64MiBFor8Ranks) {
  const Verdict v = judge(facts_with_shm(64 * kMiB, 64 * kMiB));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "shm.capacity/too-small");
  EXPECT_EQ(v.finding.params["gib"], 4);
  EXPECT_NE(v.summary.find("/dev/shm is 64 MiB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("8 local ranks need ≥ 2.5 GiB"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("--shm-size=4g"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.evidence["total_bytes"], 64 * kMiB);
  EXPECT_GT(v.evidence["required_bytes"].get<std::uint64_t>(), v.evidence["free_bytes"].get<std::uint64_t>());
}

TEST(ShmCapacity, FailsWhenTheAllocationTestHitsAQuota) {
  RankFacts f = facts_with_shm(8 * kGiB, 8 * kGiB);
  ShmAllocTest t;
  t.requested_bytes = 2 * kGiB;
  t.err = ENOSPC;
  t.step = "fallocate";
  t.error = "No space left on device";
  f.shm.alloc = Probed<ShmAllocTest>::ok(t, "fallocate");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "shm.capacity/allocation-failed");
  EXPECT_NE(v.summary.find("allocating 2 GiB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("No space left on device"), std::string::npos);
  EXPECT_NE(v.remedy.find("memory limit"), std::string::npos);
}

TEST(ShmCapacity, FailsWhenReadOnly) {
  RankFacts f = facts_with_shm(8 * kGiB, 8 * kGiB);
  f.shm.usage.value()->writable = false;
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "shm.capacity/read-only");
  EXPECT_NE(v.summary.find("read-only"), std::string::npos);
}

TEST(ShmCapacity, FailsWhenMissing) {
  RankFacts f = facts_with_shm(0, 0);
  f.shm.usage = Probed<FsUsage>::error(ProbeErrc::NotFound, "does not exist", "/dev/shm");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "shm.capacity/missing");
  EXPECT_NE(v.summary.find("does not exist"), std::string::npos);
}

TEST(ShmCapacity, AllocationRefusedForPermissionsIsItsOwnFinding) {
  RankFacts f = facts_with_shm(8 * kGiB, 8 * kGiB);
  ShmAllocTest t;
  t.requested_bytes = 64 * kMiB;
  t.err = EACCES;
  t.step = "open";
  t.error = "Permission denied";
  f.shm.alloc = Probed<ShmAllocTest>::ok(t, "open");
  const Verdict v = judge(f);
  EXPECT_EQ(v.finding.code, "shm.capacity/allocation-denied");
  EXPECT_NE(v.remedy.find("mode 1777"), std::string::npos) << v.remedy;
}

TEST(ShmCapacity, EveryFindingIsReportedWithItsOwnStatus) {
  // Read-only and too small at once: both findings, worst first, each with its status.
  RankFacts f = facts_with_shm(64 * kMiB, 64 * kMiB);
  f.shm.usage.value()->writable = false;
  const Verdict v = judge(f);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "shm.capacity/read-only");
  EXPECT_EQ(v.findings[1].code, "shm.capacity/too-small");
  EXPECT_EQ(v.findings[1].status, Status::Fail);
  // The fix's Kubernetes braces are text, its {gib} a parameter.
  EXPECT_NE(v.remedy.find("{medium: Memory, sizeLimit: 4Gi}"), std::string::npos) << v.remedy;
}

TEST(ShmCapacity, WarnsWhenNotTmpfs) {
  RankFacts f = facts_with_shm(100 * kGiB, 100 * kGiB);
  f.shm.usage.value()->is_tmpfs = false;
  f.shm.mount.value()->fstype = "overlay";
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "shm.capacity/not-tmpfs");
  EXPECT_EQ(v.finding.params["fstype"], "overlay");
  EXPECT_NE(v.summary.find("not tmpfs (overlay)"), std::string::npos) << v.summary;
}

TEST(ShmCapacity, WarnsBelowNcclsOneGibRecommendation) {
  Options o;
  o.shm_dataloader_bytes = 16 * kMiB;
  const Verdict v = judge(facts_with_shm(512 * kMiB, 512 * kMiB, 1), o);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "shm.capacity/below-recommended");
  EXPECT_NE(v.summary.find("1 GiB"), std::string::npos);
}

TEST(ShmCapacity, UnknownWhenSizeCannotBeRead) {
  RankFacts f = facts_with_shm(0, 0);
  f.shm.usage = Probed<FsUsage>::error(ProbeErrc::PermissionDenied, "permission denied", "/dev/shm");
  EXPECT_EQ(judge(f).status, Status::Unknown);
  RankFacts never;  // nothing probed at all
  EXPECT_EQ(judge(never).status, Status::Unknown);
}

TEST(ShmCapacity, UnknownWhenTheAllocationTestCouldNotRun) {
  RankFacts f = facts_with_shm(8 * kGiB, 8 * kGiB);
  f.shm.alloc = Probed<ShmAllocTest>::error(ProbeErrc::Timeout, "did not finish", "fallocate");
  EXPECT_EQ(judge(f).status, Status::Unknown);
  EXPECT_EQ(judge(f).finding.code, "shm.capacity/allocation-untested");
}

TEST(ShmCapacity, SkippedInTheImageProfile) {
  const Verdict v = judge(facts_with_shm(64 * kMiB, 64 * kMiB), Options{}, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_NE(v.summary.find("image"), std::string::npos);
}

RankFacts probe_shm_fixture(const std::string& name) {
  const FileSystem fs(std::string(preflight::test_paths::fixtures_dir() + "/shm/") + name);
  const EnvSnapshot env;
  const Options o;
  RankFacts f;
  run_probe(FactSource::Shm, ProbeContext{fs, env, o}, f);
  return f;
}

TEST(ShmProbe, ReadsTheCapturedMountTableAndSkipsTheAllocationUnderSysroot) {
  const RankFacts f = probe_shm_fixture("docker-64m");
  ASSERT_TRUE(f.shm.mount.ok()) << f.shm.mount.why();
  EXPECT_EQ(f.shm.mount.value()->source, "shm");
  EXPECT_EQ(f.shm.mount.value()->size_option, 64 * kMiB);
  ASSERT_TRUE(f.shm.usage.ok()) << f.shm.usage.why();
  ASSERT_FALSE(f.shm.alloc.ok());
  EXPECT_EQ(f.shm.alloc.error()->code, ProbeErrc::Unsupported);
}

TEST(ShmProbe, MissingMountTableIsAnErrorFactNotACrash) {
  const RankFacts f = probe_shm_fixture("no-mountinfo");
  ASSERT_FALSE(f.shm.mount.ok());
  EXPECT_EQ(f.shm.mount.error()->code, ProbeErrc::NotFound);
}

}  // namespace
}  // namespace checks_shm_capacity_test
}  // namespace preflight
