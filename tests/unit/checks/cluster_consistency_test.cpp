// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "job_fixture.hpp"

namespace preflight {
namespace checks_cluster_consistency_test {
namespace {

using gpu_fixture::has;
using job_fixture::judge_job;

const CheckSpec& spec() { return *find_check("cluster.consistency"); }

NetInterface nic(const std::string& name, const std::string& driver, const std::string& version) {
  NetInterface i;
  i.name = name;
  i.up = i.running = true;
  i.pci_bus_id = "0000:17:00.0";
  i.driver = driver;
  i.driver_version = version;
  return i;
}

/// Four hosts of two ranks, every rank with the same stack: NCCL 2.21.5, torch 2.5.1+cu124, one NIC.
JobFacts stack_job() {
  JobFacts j = job_fixture::job(4, 2);
  for (RankFacts& f : j.ranks) {
    NcclLibrary n;
    n.version = "2.21.5";
    n.version_code = 22105;
    f.gpu.nccl = Probed<NcclLibrary>::ok(n, "ncclGetVersion");
    f.gpu.runtime.runtimes = {gpu_fixture::cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
    FrameworkBuild fw;
    fw.name = "torch";
    fw.version = "2.5.1+cu124";
    f.gpu.runtime.frameworks = {fw};
    NetInterface lo;
    lo.name = "lo";
    lo.loopback = true;
    f.net.interfaces =
        Probed<std::vector<NetInterface>>::ok({lo, nic("eth0", "mlx5_core", "24.10-1.1.4")}, "getifaddrs");
  }
  return j;
}

/// The ranks of host h (0-based) in stack_job.
template <typename F>
void on_host(JobFacts& j, int h, F change) {
  for (RankFacts& f : j.ranks) {
    if (f.placement.rank / 2 == h) change(f);
  }
}

TEST(ClusterConsistency, PassWhenEverythingAgrees) {
  const Verdict v = judge_job(spec(), stack_job());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.21.5 on every rank")) << v.summary;
  EXPECT_TRUE(has(v.summary, "NIC drivers mlx5_core 24.10-1.1.4 on every rank")) << v.summary;
  EXPECT_EQ(v.evidence["NCCL"]["2.21.5"].size(), 8u);
}

TEST(ClusterConsistency, SettingsThatMustAgreeFailOnOneOddHost) {
  // NCCL_ALGO on one host only (NVIDIA/nccl#1136: a hang), from the environment there.
  JobFacts j = stack_job();
  on_host(j, 1, [](RankFacts& f) { f.env = EnvSnapshot({{"NCCL_ALGO", "Tree"}}); });
  Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/setting-must-agree");
  EXPECT_EQ(v.finding.params["name"], "NCCL_ALGO");
  EXPECT_EQ(v.finding.params["odd"], "gpu-b (ranks 2–3) has NCCL_ALGO=Tree (environment)");
  EXPECT_EQ(v.finding.params["majority"], "unset");
  EXPECT_TRUE(has(v.summary, "nccl#1136")) << v.summary;
  // The same from NCCL's configuration file on that host; a value that reads the same is no drift.
  j = stack_job();
  on_host(j, 3, [](RankFacts& f) {
    ConfFileContents c;
    c.entries = {{"NCCL_IB_DISABLE", "1", 4}};
    f.nccl_conf.files = {{"/etc/nccl.conf", "system", Probed<ConfFileContents>::ok(c, "/etc/nccl.conf")}};
  });
  v = judge_job(spec(), j);
  EXPECT_EQ(v.finding.code, "cluster.consistency/setting-must-agree");
  EXPECT_EQ(v.finding.params["odd"], "gpu-d (ranks 6–7) has NCCL_IB_DISABLE=1 (/etc/nccl.conf:4)");
  EXPECT_EQ(v.finding.params["majority"], "unset (default 0)");
  for (RankFacts& f : j.ranks) f.env = EnvSnapshot({{"NCCL_IB_DISABLE", f.placement.rank < 6 ? "01" : "1"}});
  EXPECT_EQ(judge_job(spec(), j).status, Status::Pass) << judge_job(spec(), j).summary;
  // Unset where the default is the value others set: they agree.
  j = stack_job();
  on_host(j, 0, [](RankFacts& f) { f.env = EnvSnapshot({{"NCCL_P2P_DISABLE", "0"}}); });
  EXPECT_EQ(judge_job(spec(), j).status, Status::Pass) << judge_job(spec(), j).summary;
}

TEST(ClusterConsistency, SettingsThatOnlyChangeBehaviourWarn) {
  JobFacts j = stack_job();
  on_host(j, 2, [](RankFacts& f) { f.env = EnvSnapshot({{"NCCL_P2P_DISABLE", "1"}}); });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/setting-differs");
  EXPECT_EQ(v.finding.params["odd"], "gpu-c (ranks 4–5) has NCCL_P2P_DISABLE=1 (environment)");
  EXPECT_EQ(v.finding.params["majority"], "unset (default 0)");
}

TEST(ClusterConsistency, NodesWithOtherGpusWarn) {
  JobFacts j = stack_job();
  NvmlGpu h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.memory_total = 81559ull << 20;
  h100.cc_major = 9;
  NvmlGpu v100 = h100;
  v100.name = "Tesla V100-SXM2-32GB";
  v100.memory_total = 32768ull << 20;
  v100.cc_major = 7;
  for (RankFacts& f : j.ranks) f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({h100, h100}, "NVML");
  EXPECT_EQ(judge_job(spec(), j).status, Status::Pass) << judge_job(spec(), j).summary;
  on_host(j, 3, [&](RankFacts& f) { f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({v100, h100}, "NVML"); });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/gpu-drift");
  EXPECT_EQ(v.finding.params["odd"],
            "gpu-d (ranks 6–7) has 1 × NVIDIA H100 80GB HBM3 (81559 MiB, CC 9.0) + 1 × Tesla V100-SXM2-32GB (32768 "
            "MiB, CC 7.0)");
  EXPECT_EQ(v.finding.params["majority"], "2 × NVIDIA H100 80GB HBM3 (81559 MiB, CC 9.0)");
}

TEST(ClusterConsistency, NcclDriftFailsNamingOddHostsAndMajority) {
  JobFacts j = stack_job();
  on_host(j, 2, [](RankFacts& f) { f.gpu.nccl.value()->version = "2.18.1"; });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "NCCL drift: gpu-c (ranks 4–5) has 2.18.1, the majority (6 of 8 ranks) 2.21.5"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "hang or corrupt")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "libnccl.so.2")) << v.remedy;
  EXPECT_EQ(v.finding.code, "cluster.consistency/nccl-drift");
  EXPECT_EQ(v.finding.params["odd"], "gpu-c (ranks 4–5) has 2.18.1");
  EXPECT_EQ(v.finding.params["majority"], "2.21.5");
  EXPECT_EQ(v.finding.params["count"], 6);
  EXPECT_EQ(v.finding.params["total"], 8);
}

TEST(ClusterConsistency, DriverAndCudaDriftFail) {
  JobFacts j = stack_job();
  on_host(j, 3, [](RankFacts& f) {
    f.gpu.driver.nvml_driver_version = Probed<std::string>::ok("535.104.05", "nvmlSystemGetDriverVersion");
    f.gpu.driver.cuda_driver_version = Probed<int>::ok(12020, "cuDriverGetVersion");
  });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(
      has(v.summary, "NVIDIA driver drift: gpu-d (ranks 6–7) has 535.104.05, the majority (6 of 8 ranks) 550.54.15"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA driver API drift: gpu-d (ranks 6–7) has 12.2")) << v.summary;
  // Two findings with different values: each is reported with its own parameters.
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "cluster.consistency/driver-drift");
  EXPECT_EQ(v.findings[0].params["odd"], "gpu-d (ranks 6–7) has 535.104.05");
  EXPECT_EQ(v.findings[0].params["majority"], "550.54.15");
  EXPECT_EQ(v.findings[1].code, "cluster.consistency/cuda-driver-drift");
  EXPECT_EQ(v.findings[1].params["odd"], "gpu-d (ranks 6–7) has 12.2");
}

TEST(ClusterConsistency, CudaRuntimeDriftFails) {
  JobFacts j = stack_job();
  on_host(j, 0, [](RankFacts& f) { f.gpu.runtime.runtimes = {gpu_fixture::cuda_runtime("12.1", "torch")}; });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary,
                  "CUDA runtimes drift: gpu-a (ranks 0–1) has 12.1 (torch), the majority (6 of 8 ranks) 12.4 (torch)"))
      << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/cuda-runtime-drift");
  EXPECT_EQ(v.finding.params["odd"], "gpu-a (ranks 0–1) has 12.1 (torch)");
  EXPECT_EQ(v.finding.params["majority"], "12.4 (torch)");
}

TEST(ClusterConsistency, KernelFrameworkAndNicDriftWarn) {
  JobFacts j = stack_job();
  on_host(j, 1, [](RankFacts& f) {
    f.identity.kernel = "6.1.0-18-amd64";
    f.gpu.runtime.frameworks.front().version = "2.4.0+cu124";
    f.net.interfaces.value()->at(1).driver_version = "23.10-0.5.5";
  });
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(
      has(v.summary, "kernel drift: gpu-b (ranks 2–3) has 6.1.0-18-amd64, the majority (6 of 8 ranks) 6.1.0-28-amd64"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "framework drift: gpu-b (ranks 2–3) has torch 2.4.0+cu124")) << v.summary;
  EXPECT_TRUE(has(v.summary, "NIC drivers drift: gpu-b (ranks 2–3) has mlx5_core 23.10-0.5.5")) << v.summary;
  ASSERT_EQ(v.findings.size(), 3u);
  EXPECT_EQ(v.findings[0].code, "cluster.consistency/framework-drift");
  EXPECT_EQ(v.findings[0].params["odd"], "gpu-b (ranks 2–3) has torch 2.4.0+cu124");
  EXPECT_EQ(v.findings[1].code, "cluster.consistency/kernel-drift");
  EXPECT_EQ(v.findings[1].params["odd"], "gpu-b (ranks 2–3) has 6.1.0-18-amd64");
  EXPECT_EQ(v.findings[1].params["majority"], "6.1.0-28-amd64");
  EXPECT_EQ(v.findings[2].code, "cluster.consistency/nic-driver-drift");
  EXPECT_EQ(v.findings[2].params["odd"], "gpu-b (ranks 2–3) has mlx5_core 23.10-0.5.5");
  EXPECT_EQ(v.findings[2].params["majority"], "mlx5_core 24.10-1.1.4");
  for (const Finding& f : v.findings) EXPECT_EQ(f.status, Status::Warn) << f.code;
}

TEST(ClusterConsistency, UnreadableVersionIsUnknownOnlyWhenNothingDiffers) {
  JobFacts j = stack_job();
  on_host(j, 1, [](RankFacts& f) {
    f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Timeout, "ncclGetVersion did not return within 5.0 s", "helper");
  });
  Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(
      has(v.summary, "NCCL could not be read on gpu-b (ranks 2–3) (helper: ncclGetVersion did not return within 5.0 s"))
      << v.summary;
  EXPECT_EQ(v.evidence["NCCL"]["(unreadable)"].size(), 2u);
  EXPECT_EQ(v.finding.code, "cluster.consistency/unreadable");
  EXPECT_EQ(v.finding.params["item"], "NCCL");
  EXPECT_EQ(v.finding.params["where"], "gpu-b (ranks 2–3)");
  EXPECT_EQ(v.finding.params["why"], "helper: ncclGetVersion did not return within 5.0 s");

  on_host(j, 3, [](RankFacts& f) { f.identity.kernel = "6.12.0"; });
  v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // the unreadable NCCL is not a mismatch
  EXPECT_TRUE(has(v.summary, "kernel drift")) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/kernel-drift");
  ASSERT_EQ(v.findings.size(), 1u);
}

TEST(ClusterConsistency, NotReadableAnywhereIsUnknown) {
  // Nothing to compare is not agreement: a version no rank could read is UNKNOWN, never PASS.
  JobFacts j = stack_job();
  for (RankFacts& f : j.ranks) f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Timeout, "the helper hung", "helper");
  Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL not readable on any rank")) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/unreadable-everywhere");
  EXPECT_EQ(v.finding.params["item"], "NCCL");
  EXPECT_EQ(v.finding.params["why"], "helper: the helper hung");

  // Installed on no rank at all (a CPU-only job: no library, no kernel module): every rank agrees.
  JobFacts cpu = stack_job();
  for (RankFacts& f : cpu.ranks) {
    const RankFacts none = gpu_fixture::no_driver();
    f.gpu.driver = none.gpu.driver;
    f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::LibraryMissing, "libnccl.so.2: cannot open", "dlopen");
  }
  v = judge_job(spec(), cpu);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.evidence.dump(), "(unreadable)")) << v.evidence.dump();

  JobFacts k = stack_job();
  for (RankFacts& f : k.ranks) {
    f.gpu.driver.nvml_driver_version =
        Probed<std::string>::error(ProbeErrc::Crashed, "helper died of SIGSEGV", "helper");
    f.gpu.driver.kernel_module_version = Probed<std::string>::error(ProbeErrc::NotFound, "no such file", "/proc");
  }
  v = judge_job(spec(), k);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NVIDIA driver not readable on any rank")) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/unreadable-everywhere");
  EXPECT_EQ(v.finding.params["item"], "NVIDIA driver");
  EXPECT_EQ(v.finding.params["why"], "helper: helper died of SIGSEGV");

  // A drift elsewhere still decides the verdict; the unreadable version is then noted.
  on_host(k, 1, [](RankFacts& f) { f.identity.kernel = "6.12.0"; });
  v = judge_job(spec(), k);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
}

TEST(ClusterConsistency, OneRankSkipsAndAnUngatheredWorldIsUnknown) {
  RankFacts f = gpu_fixture::healthy();
  EXPECT_EQ(judge_job(spec(), job_fixture::single(f)).status, Status::Skip);
  EXPECT_EQ(judge_job(spec(), job_fixture::single(f)).finding.code, "cluster.consistency/single-rank");
  f.placement.world_size = 4;
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "only 1 of 4 ranks delivered facts")) << v.summary;
  EXPECT_EQ(v.finding.code, "cluster.consistency/not-gathered");
  EXPECT_EQ(v.finding.params["delivered"], 1);
  EXPECT_EQ(v.finding.params["world"], 4);
  EXPECT_EQ(judge_job(spec(), stack_job(), {}, Profile::Image).status, Status::Skip);
}

TEST(ClusterConsistency, Explained) {
  const std::string explain(spec().explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN", "SKIP"}) {
    EXPECT_TRUE(has(explain, part)) << part;
  }
}

}  // namespace
}  // namespace checks_cluster_consistency_test
}  // namespace preflight
