// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "job_fixture.hpp"

namespace preflight {
namespace checks_cluster_shm_namespace_test {
namespace {

using gpu_fixture::has;
using job_fixture::judge_job;

const CheckSpec& spec() { return *find_check("cluster.shm_namespace"); }

MountEntry shm_mount(const std::string& options) {
  MountEntry m;
  m.mount_point = "/dev/shm";
  m.fstype = "tmpfs";
  m.source = "shm";
  m.options = options;
  return m;
}

TEST(ClusterShmNamespace, PassWhenEachHostSharesOneShm) {
  const Verdict v = judge_job(spec(), job_fixture::job(2, 4));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "the ranks of each host share one /dev/shm (2 host(s) with several ranks)")) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.shm_namespace/shared");
  EXPECT_EQ(v.finding.params["hosts"], 2);
}

TEST(ClusterShmNamespace, SeparateContainersOnOneHostFail) {
  // Ranks 2 and 3 of gpu-a run in a second container with its own 64 MiB /dev/shm.
  JobFacts j = job_fixture::job(2, 4);
  for (int r : {2, 3}) {
    RankFacts& f = j.ranks[static_cast<std::size_t>(r)];
    f.shm.usage.value()->st_dev = 0x99;
    f.shm.mount =
        Probed<MountEntry>::ok(shm_mount("rw,nosuid,nodev,noexec,relatime,size=65536k"), "/proc/self/mountinfo");
  }
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary,
                  "gpu-a: the ranks see 2 different /dev/shm (ranks 0–1: st_dev 0x1a; ranks 2–3: st_dev 0x99, "
                  "tmpfs shm (rw,nosuid,nodev,noexec,relatime,size=65536k))"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL disables its SHM and P2P transports")) << v.summary;
  EXPECT_FALSE(has(v.summary, "gpu-b")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--ipc=host")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "medium: Memory")) << v.remedy;
  EXPECT_EQ(v.finding.code, "cluster.shm_namespace/separate-shm");
  EXPECT_EQ(v.finding.params["host"], "gpu-a");
  EXPECT_EQ(v.finding.params["count"], 2);
  EXPECT_EQ(v.finding.params["devices"],
            "ranks 0–1: st_dev 0x1a; ranks 2–3: st_dev 0x99, tmpfs shm (rw,nosuid,nodev,noexec,relatime,size=65536k)");
}

TEST(ClusterShmNamespace, EachHostWithSeparateShmIsNamed) {
  // Every rank in its own container on both hosts: one finding per host, each with its own values.
  JobFacts j = job_fixture::job(2, 2);
  for (RankFacts& f : j.ranks) f.shm.usage.value()->st_dev = 0x100 + static_cast<std::uint64_t>(f.placement.rank);
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "cluster.shm_namespace/separate-shm");
  EXPECT_EQ(v.findings[0].params["host"], "gpu-a");
  EXPECT_EQ(v.findings[0].params["devices"], "rank 0: st_dev 0x100; rank 1: st_dev 0x101");
  EXPECT_EQ(v.findings[1].code, "cluster.shm_namespace/separate-shm");
  EXPECT_EQ(v.findings[1].params["host"], "gpu-b");
  // The remedy is said once.
  EXPECT_EQ(v.remedy.find("--ipc=host"), v.remedy.rfind("--ipc=host")) << v.remedy;
}

TEST(ClusterShmNamespace, UnreadableShmIsUnknown) {
  JobFacts j = job_fixture::job(1, 2);
  j.ranks[1].shm.usage =
      Probed<FsUsage>::error(ProbeErrc::NotFound, "/dev/shm: No such file or directory", "statfs /dev/shm");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "gpu-a: /dev/shm could not be read on rank 1")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "shm.capacity")) << v.remedy;
  EXPECT_EQ(v.finding.code, "cluster.shm_namespace/shm-unreadable");
  EXPECT_EQ(v.finding.params["host"], "gpu-a");
  EXPECT_EQ(v.finding.params["ranks"], "rank 1");
  EXPECT_EQ(v.finding.params["why"], "statfs /dev/shm: /dev/shm: No such file or directory");
}

TEST(ClusterShmNamespace, OneRankPerHostPassesWithANote) {
  JobFacts j = job_fixture::job(3, 1);
  j.ranks[2].shm.usage = Probed<FsUsage>::error(ProbeErrc::NotFound, "no /dev/shm", "statfs /dev/shm");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "one rank per host: no /dev/shm is shared between ranks (3 host(s))")) << v.summary;
  const Options o;
  EXPECT_EQ(run_check(spec(), CheckContext{gpu_fixture::healthy(), o, Profile::Job}).status, Status::Pass);
}

TEST(ClusterShmNamespace, SameHostnameOtherBootIsAnotherHost) {
  JobFacts j = job_fixture::job(2, 1);
  j.ranks[1].identity.hostname = "gpu-a";  // another machine with the same name: its own /dev/shm is expected
  EXPECT_EQ(judge_job(spec(), j).status, Status::Pass);
}

TEST(ClusterShmNamespace, SkippedInImageProfileAndExplained) {
  EXPECT_EQ(judge_job(spec(), job_fixture::job(1, 2), {}, Profile::Image).status, Status::Skip);
  const std::string explain(spec().explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "UNKNOWN", "st_dev"}) {
    EXPECT_TRUE(has(explain, part)) << part;
  }
}

}  // namespace
}  // namespace checks_cluster_shm_namespace_test
}  // namespace preflight
