// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "job_fixture.hpp"

namespace preflight {
namespace checks_launch_gpu_binding_test {
namespace {

using gpu_fixture::has;
using job_fixture::judge_job;

const CheckSpec& spec() { return *find_check("launch.gpu_binding"); }

void set_env(RankFacts& f, const std::map<std::string, std::string>& vars) { f.env = EnvSnapshot(vars); }

/// The findings of `v` with this code, in the verdict's order (worst first).
std::vector<const Finding*> findings(const Verdict& v, const std::string& code) {
  std::vector<const Finding*> out;
  for (const Finding& f : v.findings) {
    if (f.code == code) out.push_back(&f);
  }
  return out;
}

/// The rank sees only the CUDA devices at these NVML indices (as CUDA_VISIBLE_DEVICES does).
void restrict_cuda(RankFacts& f, const std::vector<int>& nvml_indices) {
  std::vector<CudaDevice> all = *f.gpu.driver.cuda_devices.value();
  std::vector<CudaDevice> seen;
  for (int i : nvml_indices) {
    CudaDevice d = all[static_cast<std::size_t>(i)];
    d.ordinal = static_cast<int>(seen.size());
    seen.push_back(d);
  }
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::ok(seen, "cuDeviceGet");
}

TEST(LaunchGpuBinding, PassOneRankPerGpu) {
  const Verdict v = judge_job(spec(), job_fixture::job(2, 8));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "16 ranks on 2 host(s), each with a GPU of its own")) << v.summary;
  EXPECT_EQ(v.evidence["ranks"][3]["gpu"], gpu_fixture::uuid(3) + " (bus " + gpu_fixture::cuda_bus(3) + ")");
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/gpu-per-rank");
  EXPECT_EQ(v.finding.params["rank_count"], 16);
  EXPECT_EQ(v.finding.params["host_count"], 2);
}

TEST(LaunchGpuBinding, PerRankVisibleDevicesPass) {
  // srun --gpus-per-task=1: every rank sees one GPU of its own and uses device 0.
  JobFacts j = job_fixture::job(1, 4);
  for (RankFacts& f : j.ranks) {
    const int l = f.placement.local_rank;
    restrict_cuda(f, {l});
    set_env(f, {{"CUDA_VISIBLE_DEVICES", std::to_string(l)}, {"LOCAL_RANK", "0"}});
  }
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(LaunchGpuBinding, TwoRanksOnOneGpuFail) {
  // LOCAL_RANK=0 exported for every rank: all pick device 0.
  JobFacts j = job_fixture::job(2, 2);
  for (RankFacts& f : j.ranks) set_env(f, {{"LOCAL_RANK", "0"}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "ranks 0 (LOCAL_RANK=0), 1 (LOCAL_RANK=0) on gpu-a all use GPU " + gpu_fixture::uuid(0) +
                                 " (bus " + gpu_fixture::cuda_bus(0) + ")"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "ranks 2 (LOCAL_RANK=0), 3 (LOCAL_RANK=0) on gpu-b")) << v.summary;
  EXPECT_TRUE(has(v.summary, "Duplicate GPU detected")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--gpus-per-task")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "torch.cuda.set_device(local_rank)")) << v.remedy;
  const auto shared = findings(v, "launch.gpu_binding/shared-gpu");
  ASSERT_EQ(shared.size(), 2u) << v.summary;
  EXPECT_EQ(shared[0]->params["ranks"], "0 (LOCAL_RANK=0), 1 (LOCAL_RANK=0)");
  EXPECT_EQ(shared[0]->params["host"], "gpu-a");
  EXPECT_EQ(shared[0]->params["gpu"], gpu_fixture::uuid(0) + " (bus " + gpu_fixture::cuda_bus(0) + ")");
  EXPECT_EQ(shared[1]->params["host"], "gpu-b");
  EXPECT_EQ(v.findings[0].code, "launch.gpu_binding/shared-gpu");
}

TEST(LaunchGpuBinding, SameGpuOnDifferentHostsIsFine) {
  JobFacts j = job_fixture::job(2, 1, 1);
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(LaunchGpuBinding, PerRankWrapperWithoutLocalRankPasses) {
  // mpirun -np 4 with `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK`: rank l sees only
  // GPU l (as its ordinal 0) and the script uses its only GPU, whatever LOCAL_RANK says.
  for (const bool with_local_rank : {false, true}) {
    JobFacts j = job_fixture::job(1, 4);
    for (RankFacts& f : j.ranks) {
      const int l = f.placement.local_rank;
      restrict_cuda(f, {l});
      std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", std::to_string(l)}};
      if (with_local_rank) env["LOCAL_RANK"] = std::to_string(l);
      set_env(f, env);
    }
    const Verdict v = judge_job(spec(), j);
    EXPECT_EQ(v.status, Status::Pass) << v.summary;
    EXPECT_TRUE(has(v.summary, "4 ranks on 1 host(s), each with a GPU of its own")) << v.summary;
    EXPECT_EQ(v.evidence["ranks"][3]["gpu"], gpu_fixture::uuid(3) + " (bus " + gpu_fixture::cuda_bus(3) + ")");
    EXPECT_EQ(v.evidence["ranks"][3]["choice"], "the only GPU it sees");
  }
}

TEST(LaunchGpuBinding, PerRankUuidsAndReorderedListsPass) {
  // Any CUDA_VISIBLE_DEVICES that gives every rank a distinct GPU: UUIDs per rank, or one reordered
  // list for all with LOCAL_RANK indexing it.
  JobFacts j = job_fixture::job(1, 4);
  for (RankFacts& f : j.ranks) {
    const int l = f.placement.local_rank;
    restrict_cuda(f, {7 - l});
    set_env(f, {{"CUDA_VISIBLE_DEVICES", gpu_fixture::uuid(7 - l)}});
  }
  Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  JobFacts k = job_fixture::job(1, 4);
  for (RankFacts& f : k.ranks) {
    restrict_cuda(f, {6, 4, 2, 0});
    set_env(f, {{"CUDA_VISIBLE_DEVICES", "6,4,2,0"}, {"LOCAL_RANK", std::to_string(f.placement.local_rank)}});
  }
  v = judge_job(spec(), k);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["ranks"][1]["gpu"], gpu_fixture::uuid(4) + " (bus " + gpu_fixture::cuda_bus(4) + ")");
}

TEST(LaunchGpuBinding, SameGpuByUuidAndIndexFails) {
  // Rank 0 names GPU 0 by index, rank 1 by UUID: one GPU, caught by UUID.
  JobFacts j = job_fixture::job(1, 2, 8);
  restrict_cuda(j.ranks[0], {0});
  set_env(j.ranks[0], {{"CUDA_VISIBLE_DEVICES", "0"}});
  restrict_cuda(j.ranks[1], {0});
  set_env(j.ranks[1], {{"CUDA_VISIBLE_DEVICES", gpu_fixture::uuid(0)}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "ranks 0 (CUDA_VISIBLE_DEVICES=0), 1 (CUDA_VISIBLE_DEVICES=" + gpu_fixture::uuid(0) +
                                 ") on gpu-a all use GPU " + gpu_fixture::uuid(0)))
      << v.summary;
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].code, "launch.gpu_binding/shared-gpu");
  EXPECT_EQ(v.findings[0].params["ranks"],
            "0 (CUDA_VISIBLE_DEVICES=0), 1 (CUDA_VISIBLE_DEVICES=" + gpu_fixture::uuid(0) + ")");
  // Two ranks, one GPU between them: the host has too few GPUs for its ranks as well.
  EXPECT_EQ(findings(v, "launch.gpu_binding/too-many-ranks").size(), 1u) << v.summary;
}

TEST(LaunchGpuBinding, LocalRankBeyondVisibleGpusFails) {
  // Every rank sees GPUs 0 and 1 and indexes them with its local rank: ranks 2 and 3 have none.
  JobFacts j = job_fixture::job(1, 4);
  for (RankFacts& f : j.ranks) {
    restrict_cuda(f, {0, 1});
    set_env(f, {{"CUDA_VISIBLE_DEVICES", "0,1"}});
  }
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "rank 2 (gpu-a): local rank 2 but it sees 2 GPU(s) (CUDA_VISIBLE_DEVICES=0,1)"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 3 (gpu-a): local rank 3 but it sees 2 GPU(s)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "invalid device ordinal")) << v.summary;
  EXPECT_FALSE(has(v.summary, "rank 1 (gpu-a): local rank 1")) << v.summary;
  const auto beyond = findings(v, "launch.gpu_binding/invalid-ordinal");
  ASSERT_EQ(beyond.size(), 2u) << v.summary;
  EXPECT_EQ(beyond[0]->params["rank"], 2);
  EXPECT_EQ(beyond[0]->params["index"], "local rank 2");
  EXPECT_EQ(beyond[0]->params["visible"], 2);
  EXPECT_EQ(beyond[0]->params["ordinal"], 2);
  EXPECT_EQ(beyond[0]->params["cvd_value"], "0,1");
  EXPECT_EQ(beyond[1]->params["rank"], 3);
}

TEST(LaunchGpuBinding, NoneAndNoDevFilesHideEveryGpu) {
  for (const std::string value : {"none", "NoDevFiles", ""}) {
    JobFacts j = job_fixture::job(1, 2);
    for (RankFacts& f : j.ranks) {
      f.gpu.driver.cuda_devices =
          Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuInit");
      set_env(f, {{"CUDA_VISIBLE_DEVICES", value}});
    }
    const Verdict v = judge_job(spec(), j);
    EXPECT_EQ(v.status, Status::Fail) << value;
    EXPECT_TRUE(has(v.summary, "rank 1 (gpu-a): CUDA_VISIBLE_DEVICES='" + value + "' hides every GPU")) << v.summary;
    const auto hidden = findings(v, "launch.gpu_binding/visible-devices-hide-all");
    ASSERT_EQ(hidden.size(), 2u) << v.summary;
    EXPECT_EQ(hidden[1]->params["rank"], 1);
    EXPECT_EQ(hidden[1]->params["cvd"], value);
  }
}

TEST(LaunchGpuBinding, BadLocalRankValueFails) {
  JobFacts j = job_fixture::job(1, 1);
  set_env(j.ranks[0], {{"LOCAL_RANK", "zero"}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "LOCAL_RANK='zero' is not a device index")) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/bad-local-rank");
  EXPECT_EQ(v.finding.params["local_rank"], "zero");
  EXPECT_EQ(v.finding.params["rank"], 0);
  EXPECT_EQ(v.finding.params["host"], "gpu-a");
}

TEST(LaunchGpuBinding, InvalidVisibleDevicesEntryFails) {
  // 0,2,-1,1: the driver stops at -1, so ranks 2 and 3 have no GPU left.
  JobFacts j = job_fixture::job(1, 4);
  for (RankFacts& f : j.ranks) {
    restrict_cuda(f, {0, 2});
    set_env(f, {{"CUDA_VISIBLE_DEVICES", "0,2,-1,1"}});
  }
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(
      has(v.summary,
          "rank 0 (gpu-a): CUDA_VISIBLE_DEVICES=0,2,-1,1 has an invalid entry '-1' (not an index or a "
          "GPU-/MIG- UUID) at position 3: the driver stops reading the list there, so only 2 GPU(s) are visible"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 2 (gpu-a): local rank 2 but it sees 2 GPU(s)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "gpu-a: 4 local ranks but only 2 GPU(s) visible to them")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-smi -L")) << v.remedy;
  const auto invalid = findings(v, "launch.gpu_binding/visible-devices-invalid");
  ASSERT_EQ(invalid.size(), 4u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "launch.gpu_binding/visible-devices-invalid");
  EXPECT_EQ(invalid[0]->params["cvd"], "0,2,-1,1");
  EXPECT_EQ(invalid[0]->params["entry"], "'-1' (not an index or a GPU-/MIG- UUID)");
  EXPECT_EQ(invalid[0]->params["position"], 3);
  EXPECT_EQ(invalid[0]->params["visible"], 2);
  EXPECT_EQ(invalid[0]->params["last_index"], 7);
  EXPECT_TRUE(has(v.remedy, "list valid indices (0..7)")) << v.remedy;
}

TEST(LaunchGpuBinding, VisibleDevicesFromNvmlWhenCudaWasNotProbed) {
  // Without CUDA's list the NVML list is filtered like the driver does: out of range, unknown UUID,
  // ambiguous prefix, repeats.
  struct Case {
    std::string cvd;
    std::string invalid;
  };
  for (const Case& c : std::vector<Case>{{"1,8", "'8' (the node has 8 GPUs (0..7))"},
                                         {"GPU-ffff", "'GPU-ffff' (no GPU has that UUID)"},
                                         {"GPU-6a2b", "'GPU-6a2b' (the UUID prefix matches 8 GPUs)"},
                                         {"3, 3", "'3' (it repeats an earlier entry)"}}) {
    JobFacts j = job_fixture::job(1, 1);
    j.ranks[0].gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::NotProbed, "not probed");
    set_env(j.ranks[0], {{"CUDA_VISIBLE_DEVICES", c.cvd}});
    const Verdict v = judge_job(spec(), j);
    EXPECT_EQ(v.status, Status::Fail) << c.cvd;
    EXPECT_TRUE(has(v.summary, "has an invalid entry " + c.invalid)) << v.summary;
    ASSERT_FALSE(v.findings.empty()) << c.cvd;
    EXPECT_EQ(v.findings[0].code, "launch.gpu_binding/visible-devices-invalid") << c.cvd;
    EXPECT_EQ(v.findings[0].params["entry"], c.invalid);
  }
  // A valid UUID prefix selects that GPU.
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::NotProbed, "not probed");
  set_env(j.ranks[0], {{"CUDA_VISIBLE_DEVICES", gpu_fixture::uuid(5).substr(0, 13) + "," + gpu_fixture::uuid(6)}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // one rank, two GPUs visible
  EXPECT_TRUE(has(v.summary, "gpu-a: 1 local rank(s) for 2 visible GPUs: 1 GPU(s) stay idle")) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/idle-gpus");
  EXPECT_EQ(v.finding.params["idle"], 1);
  EXPECT_EQ(v.evidence["ranks"][0]["gpu"], gpu_fixture::uuid(5) + " (bus " + gpu_fixture::nvml_bus(5) + ")");
  EXPECT_EQ(v.evidence["ranks"][0]["source"], "NVML + CUDA_VISIBLE_DEVICES");
}

TEST(LaunchGpuBinding, EmptyVisibleDevicesLeavesNoGpu) {
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuInit");
  set_env(j.ranks[0], {{"CUDA_VISIBLE_DEVICES", ""}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "rank 0 (gpu-a): CUDA_VISIBLE_DEVICES='' hides every GPU: the rank will see no GPU"))
      << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/visible-devices-hide-all");
  EXPECT_EQ(v.finding.params["cvd"], "");
}

TEST(LaunchGpuBinding, ARankThatSeesNoGpuFails) {
  // No CUDA_VISIBLE_DEVICES, and CUDA finds no device.
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuInit");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.summary, "rank 0 (gpu-a): it sees no GPU; the job needs a GPU");
  EXPECT_TRUE(has(v.remedy, "See gpu.count on its host")) << v.remedy;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/sees-no-gpu");
  EXPECT_EQ(v.finding.params["rank"], 0);
  EXPECT_FALSE(v.finding.params.contains("cvd_value"));
}

TEST(LaunchGpuBinding, MoreLocalRanksThanGpusFails) {
  const Verdict v = judge_job(spec(), job_fixture::job(1, 4, 2));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "gpu-a: 4 local ranks but only 2 GPU(s) visible to them")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 2 (gpu-a): local rank 2 but it sees 2 GPU(s)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--map-by ppr:2:node")) << v.remedy;
  const auto crowded = findings(v, "launch.gpu_binding/too-many-ranks");
  ASSERT_EQ(crowded.size(), 1u) << v.summary;
  EXPECT_EQ(crowded[0]->params["host"], "gpu-a");
  EXPECT_EQ(crowded[0]->params["local"], 4);
  EXPECT_EQ(crowded[0]->params["gpus"], 2);
}

TEST(LaunchGpuBinding, FewerLocalRanksThanGpusWarns) {
  const Verdict v = judge_job(spec(), job_fixture::job(2, 4));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "gpu-a: 4 local rank(s) for 8 visible GPUs: 4 GPU(s) stay idle")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--map-by ppr:8:node")) << v.remedy;
  const auto idle = findings(v, "launch.gpu_binding/idle-gpus");
  ASSERT_EQ(idle.size(), 2u) << v.summary;
  EXPECT_EQ(idle[0]->params["host"], "gpu-a");
  EXPECT_EQ(idle[0]->params["local"], 4);
  EXPECT_EQ(idle[0]->params["gpus"], 8);
  EXPECT_EQ(idle[0]->params["idle"], 4);
  EXPECT_EQ(idle[1]->params["host"], "gpu-b");
}

TEST(LaunchGpuBinding, AloneOnANodePasses) {
  // One process, no launcher: it uses GPU 0 of 8; the other GPUs are not "idle ranks".
  RankFacts f = gpu_fixture::healthy();
  f.identity.hostname = "gpu-a";
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 0 (gpu-a) uses GPU " + gpu_fixture::uuid(0))) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/rank-uses-gpu");
  // --ranks-per-node 16 on an 8-GPU node, still alone.
  f.placement.local_ranks = 16;
  const Verdict crowded = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(crowded.status, Status::Fail);
  EXPECT_EQ(crowded.finding.code, "launch.gpu_binding/too-many-ranks");
  EXPECT_EQ(crowded.finding.params["local"], 16);
  EXPECT_EQ(crowded.finding.params["gpus"], 8);
  const Options o;
  EXPECT_EQ(run_check(spec(), CheckContext{gpu_fixture::healthy(), o, Profile::Job}).status, Status::Pass);
}

TEST(LaunchGpuBinding, NoDriverFails) {
  RankFacts f = gpu_fixture::no_driver();
  f.identity.hostname = "cpu-a";
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no NVIDIA driver on this node")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the job needs a GPU")) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/no-driver");
  EXPECT_FALSE(v.finding.params.contains("who_ranks"));  // alone, the rank needs no name
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(LaunchGpuBinding, UnprobedGpusAreUnknownAndNamed) {
  JobFacts j = job_fixture::job(2, 1);
  DriverFacts& d = j.ranks[1].gpu.driver;
  d.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::NotProbed, "the GPU helper did not run", "helper");
  d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::NotProbed, "the GPU helper did not run", "helper");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 1 (gpu-b): could not read the visible GPUs")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the GPU helper did not run")) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/not-read");
  EXPECT_EQ(v.finding.params["who_ranks"], "1");
  EXPECT_EQ(v.finding.params["who_hosts"], "gpu-b");
  EXPECT_TRUE(v.finding.message.starts_with("rank {who_ranks} ({who_hosts}): ")) << v.finding.message;
  EXPECT_EQ(v.finding.params["what"], "the visible GPUs");
  EXPECT_EQ(v.finding.params["detail"], "the GPU helper did not run");
}

TEST(LaunchGpuBinding, OneReasonIsNamedOnceForAllItsRanks) {
  JobFacts j = job_fixture::job(2, 2);
  for (RankFacts& f : j.ranks) {
    RankFacts none = gpu_fixture::no_driver();
    f.gpu = none.gpu;
  }
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "ranks 0–3 (gpu-a, gpu-b): no NVIDIA driver on this node")) << v.summary;
  EXPECT_EQ(v.summary.find("no NVIDIA driver", v.summary.find("no NVIDIA driver") + 1), std::string::npos) << v.summary;
  ASSERT_EQ(v.findings.size(), 1u) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/no-driver");
  EXPECT_EQ(v.finding.params["who_ranks"], "0–3");
  EXPECT_EQ(v.finding.params["who_hosts"], "gpu-a, gpu-b");
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(LaunchGpuBinding, CrashedHelperFails) {
  JobFacts j = job_fixture::job(1, 1);
  DriverFacts& d = j.ranks[0].gpu.driver;
  d.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::Crashed, "cuInit crashed with SIGSEGV", "helper");
  d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::Crashed, "cuInit crashed with SIGSEGV", "helper");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "SIGSEGV")) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.gpu_binding/helper-crashed");
  EXPECT_TRUE(has(v.remedy, "exit -11 or -6")) << v.remedy;
}

TEST(LaunchGpuBinding, SkippedInImageProfileAndExplained) {
  EXPECT_EQ(judge_job(spec(), job_fixture::job(1, 2), {}, Profile::Image).status, Status::Skip);
  const std::string explain(spec().explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN", "Duplicate GPU detected"}) {
    EXPECT_TRUE(has(explain, part)) << part;
  }
}

}  // namespace
}  // namespace checks_launch_gpu_binding_test
}  // namespace preflight
