// SPDX-License-Identifier: MIT
// gpu.busy on hand-built facts: every status, the findings' codes and parameters asserted.
#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_gpu_busy_test {
namespace {
using namespace gpu_fixture;

Verdict judge_busy(const RankFacts& f, Profile p = Profile::Node) { return judge(kGpuBusy, f, Options{}, p); }

NvmlGpu& nvml_gpu(RankFacts& f, std::size_t i) { return (*f.gpu.driver.nvml_gpus.value())[i]; }

TEST(GpuBusy, PassesOnIdleGpus) {
  const Verdict v = judge_busy(healthy(8));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.busy/free");
  EXPECT_EQ(v.finding.params["gpus"], "8 GPUs");
  EXPECT_EQ(v.summary, "no other process on the 8 GPUs this job will use (most memory in use on one: 1 MiB)");
}

TEST(GpuBusy, ForeignProcessHolding30000MiBFailsNamingPidAndMemory) {
  RankFacts f = healthy(8);
  nvml_gpu(f, 0).processes.push_back({4242, 30000 * kMiB});
  nvml_gpu(f, 0).memory_used = 30001 * kMiB;
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.busy/foreign-process");
  EXPECT_EQ(v.finding.params["processes"], "GPU 0 (00000000:18:00.0): pid 4242 holds 30000 MiB");
  EXPECT_EQ(v.finding.params["pid"], 4242);
  EXPECT_TRUE(has(v.summary, "GPU 0 (00000000:18:00.0): pid 4242 holds 30000 MiB")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-smi --query-compute-apps=pid,used_memory --format=csv")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "kill 4242")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "drain")) << v.remedy;
}

TEST(GpuBusy, OwnPidIsNotForeign) {
  RankFacts f = healthy(2);
  nvml_gpu(f, 0).processes.push_back({777, 500 * kMiB});
  nvml_gpu(f, 0).memory_used = 501 * kMiB;
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(GpuBusy, ProcessOnAGpuTheJobDoesNotUseIsIgnored) {
  RankFacts f = healthy(8);
  f.gpu.driver.cuda_devices.value()->resize(4);  // CUDA_VISIBLE_DEVICES=0,1,2,3
  nvml_gpu(f, 6).processes.push_back({5151, 20000 * kMiB});
  nvml_gpu(f, 6).memory_used = 20000 * kMiB;
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "the 4 GPUs this job will use")) << v.summary;
}

TEST(GpuBusy, WithoutCudaViewEveryGpuIsJudged) {
  RankFacts f = healthy(8);
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>{};
  nvml_gpu(f, 6).processes.push_back({5151, 20000 * kMiB});
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.busy/foreign-process");
  EXPECT_EQ(v.finding.params["processes"], "GPU 6 (00000000:1E:00.0): pid 5151 holds 20000 MiB");
}

TEST(GpuBusy, MemoryWithoutProcessWarns) {
  RankFacts f = healthy(2);
  nvml_gpu(f, 1).memory_used = 12000 * kMiB;
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.busy/unexplained-memory");
  EXPECT_EQ(v.finding.params["memory"], "GPU 1 (00000000:19:00.0): 12000 MiB of 81920 MiB in use, no process listed");
  EXPECT_TRUE(has(v.summary, "GPU 1 (00000000:19:00.0): 12000 MiB of 81920 MiB in use, no process listed"))
      << v.summary;
}

TEST(GpuBusy, SmallUnexplainedMemoryPasses) {
  RankFacts f = healthy(1);
  nvml_gpu(f, 0).memory_used = 600 * kMiB;  // below 1 GiB and below 5% of 80 GiB
  EXPECT_EQ(judge_busy(f).status, Status::Pass);
}

TEST(GpuBusy, FivePercentOfASmallGpuWarns) {
  RankFacts f = healthy(1);
  nvml_gpu(f, 0).memory_total = 16 * kGiB;
  nvml_gpu(f, 0).memory_used = 900 * kMiB;  // < 1 GiB but > 5% of 16 GiB
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.busy/unexplained-memory");
  EXPECT_EQ(v.finding.params["memory"], "GPU 0 (00000000:18:00.0): 900 MiB of 16384 MiB in use, no process listed");
}

TEST(GpuBusy, NvmlCrashFails) {
  RankFacts f = healthy(2);
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(
      ProbeErrc::Crashed, "nvmlInit_v2 crashed with SIGSEGV after 0.1 s", "driver helper");
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "crashed with SIGSEGV")) << v.summary;
}

TEST(GpuBusy, NoDriverFails) {
  const Verdict v = judge_busy(no_driver(), Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no NVIDIA driver on this node")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the job needs a GPU")) << v.summary;
}

TEST(GpuBusy, NotProbedIsUnknown) {
  RankFacts f = healthy(2);
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>{};
  EXPECT_EQ(judge_busy(f).status, Status::Unknown);
}

TEST(GpuBusy, SkipsInImageProfile) {
  const Verdict v = judge_busy(no_driver(), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
}

TEST(GpuBusy, AJobWhoseCudaListsNoDeviceIsNeverFree) {
  RankFacts f = healthy(8);
  f.gpu.driver.cuda_devices.value()->clear();
  const Verdict v = judge_busy(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.busy/job-sees-no-gpu");
  EXPECT_FALSE(v.finding.params.contains("cvd_value"));
  EXPECT_EQ(v.summary,
            "the job will see no GPU (CUDA lists no device): no GPU of the job to check for other processes "
            "(NVML sees 8 GPUs); the job needs a GPU");
}

TEST(GpuBusy, AJobThatSeesNoGpuIsNeverFree) {
  // CUDA_VISIBLE_DEVICES= / none / NoDevFiles: no GPU of the job to call free.
  for (const std::string value : {"", "none", "NoDevFiles"}) {
    RankFacts f = healthy(8);
    f.env.set("CUDA_VISIBLE_DEVICES", value);
    f.gpu.driver.cuda_devices =
        Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
    for (const Profile p : {Profile::Node, Profile::Job}) {
      const Verdict v = judge_busy(f, p);
      EXPECT_EQ(v.status, Status::Fail) << value;
      EXPECT_EQ(v.finding.code, "gpu.busy/job-sees-no-gpu");
      EXPECT_EQ(v.finding.params["cvd_value"], value);
      EXPECT_EQ(v.finding.params["nvml_gpus"], 8);
      EXPECT_TRUE(has(v.summary, "the job will see no GPU (CUDA_VISIBLE_DEVICES='" + value + "')")) << v.summary;
      EXPECT_FALSE(has(v.summary, "no other process")) << v.summary;
    }
  }
}

TEST(GpuBusy, JobNodeJudgesTheUnionOfItsRanksGpus) {
  // Four ranks, each seeing its own GPU (per-rank CUDA_VISIBLE_DEVICES): an orphan on GPU 2 is on
  // the job's GPUs although local rank 0 sees only GPU 0; the ranks' own processes are not foreign.
  std::vector<RankFacts> ranks;
  for (int l = 0; l < 4; ++l) {
    RankFacts f = healthy(8);
    f.identity.hostname = "gpu-a";
    f.identity.pid = 1000 + l;
    f.placement.rank = l;
    f.placement.local_rank = l;
    std::vector<CudaDevice>& cuda = *f.gpu.driver.cuda_devices.value();
    CudaDevice mine = cuda[static_cast<std::size_t>(l)];
    mine.ordinal = 0;
    cuda = {mine};
    f.env.set("CUDA_VISIBLE_DEVICES", std::to_string(l));
    nvml_gpu(f, 1).processes.push_back({1001, 500 * kMiB});  // rank 1's own process
    nvml_gpu(f, 2).processes.push_back({4242, 30000 * kMiB});
    nvml_gpu(f, 6).processes.push_back({5151, 20000 * kMiB});  // not a GPU of this job
    ranks.push_back(std::move(f));
  }
  std::vector<const RankFacts*> host;
  for (const RankFacts& f : ranks) host.push_back(&f);
  EXPECT_EQ(judge_busy(ranks.front(), Profile::Job).status, Status::Pass);  // local rank 0 alone: GPU 0 only
  const Options o;
  CheckContext ctx{ranks.front(), o, Profile::Job};
  ctx.host_ranks = &host;
  const Verdict v = run_check(kGpuBusy, ctx);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.busy/foreign-process");
  EXPECT_EQ(v.finding.params["pid"], 4242);
  EXPECT_TRUE(has(v.summary, "GPU 2 (00000000:1A:00.0): pid 4242 holds 30000 MiB")) << v.summary;
  EXPECT_FALSE(has(v.summary, "pid 1001")) << v.summary;
  EXPECT_FALSE(has(v.summary, "pid 5151")) << v.summary;
}

}  // namespace
}  // namespace checks_gpu_busy_test
}  // namespace preflight
