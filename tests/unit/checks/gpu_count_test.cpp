// SPDX-License-Identifier: MIT
// gpu.count on hand-built facts: every status, the findings' codes and parameters asserted.
#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_gpu_count_test {
namespace {
using namespace gpu_fixture;

Verdict judge_count(const RankFacts& f, const Options& o = {}, Profile p = Profile::Node) {
  return judge(kGpuCount, f, o, p);
}

Options expect(int n) {
  Options o;
  o.expect_gpus = n;
  return o;
}

/// The finding of `v` with `code`, or nullptr.
const Finding* finding(const Verdict& v, std::string_view code) {
  for (const Finding& f : v.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

/// CUDA sees only the first `visible` of the node's GPUs.
RankFacts cuda_sees(int total, int visible) {
  RankFacts f = healthy(total);
  f.gpu.driver.cuda_devices.value()->resize(static_cast<std::size_t>(visible));
  return f;
}

TEST(GpuCount, PassesWhenCudaAndNvmlAgreeAndExpectationHolds) {
  RankFacts f = healthy(8);
  f.placement.local_ranks = 8;
  const Verdict v = judge_count(f, expect(8));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/visible");
  EXPECT_EQ(v.finding.params["models"], "8 × NVIDIA H100 80GB HBM3");
  EXPECT_EQ(v.summary,
            "8 GPUs visible to CUDA (8 × NVIDIA H100 80GB HBM3), as --expect-gpus says; NVML sees the same 8; "
            "8 local ranks");
}

TEST(GpuCount, MixedGpusInOneNodeWarnNamingThem) {
  RankFacts f = healthy(8);
  auto& devs = *f.gpu.driver.cuda_devices.value();
  for (std::size_t i = 4; i < 8; ++i) {
    devs[i].name = "Tesla V100-SXM2-32GB";
    devs[i].cc_major = 7;
    devs[i].cc_minor = 0;
    devs[i].memory_total = 32ULL << 30;
  }
  Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  const Finding* mixed = finding(v, "gpu.count/mixed-gpus");
  ASSERT_NE(mixed, nullptr) << v.summary;
  EXPECT_EQ(mixed->params["differ"], "model, memory size and compute capability");
  EXPECT_EQ(mixed->params["models"],
            "4 × NVIDIA H100 80GB HBM3 (CC 9.0, 80 GiB), 4 × Tesla V100-SXM2-32GB (CC 7.0, 32 GiB)");
  EXPECT_TRUE(has(v.summary, "slowest GPU's speed")) << v.summary;
  // One model whose memory differs by a few MiB (ECC on one GPU) is one kind of GPU.
  f = healthy(8);
  (*f.gpu.driver.cuda_devices.value())[3].memory_total -= 512ULL << 20;
  v = judge_count(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  // The same model with another memory size (an 80 GB and a 40 GB A100) is not.
  f = healthy(2);
  (*f.gpu.driver.cuda_devices.value())[1].memory_total = 40ULL << 30;
  v = judge_count(f);
  ASSERT_NE(finding(v, "gpu.count/mixed-gpus"), nullptr) << v.summary;
  EXPECT_EQ(finding(v, "gpu.count/mixed-gpus")->params["differ"], "memory size");
}

TEST(GpuCount, FewerThanExpectedFails) {
  const Verdict v = judge_count(healthy(4), expect(8));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.count/fewer-than-expected");
  EXPECT_EQ(v.finding.params["visible"], "4 GPUs");
  EXPECT_EQ(v.finding.params["expect"], 8);
  EXPECT_EQ(v.finding.params["nvml_count"], 4);
  EXPECT_TRUE(has(v.summary, " (NVML sees 4)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "4 GPUs visible to CUDA, --expect-gpus 8 (NVML sees 4)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Find the missing GPUs")) << v.remedy;
}

TEST(GpuCount, MoreThanExpectedFails) {
  const Verdict v = judge_count(healthy(8), expect(4));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.count/more-than-expected");
  EXPECT_EQ(v.finding.params["visible"], "8 GPUs");
  EXPECT_EQ(v.finding.params["expect"], 4);
  EXPECT_TRUE(has(v.summary, "8 GPUs visible to CUDA, --expect-gpus 4")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "More GPUs than expected")) << v.remedy;
}

TEST(GpuCount, MoreLocalRanksThanGpusFails) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  f.placement.local_ranks = 8;
  const Verdict v = judge_count(f, {}, Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.count/more-ranks-than-gpus");
  EXPECT_EQ(v.finding.params["local_ranks"], 8);
  EXPECT_EQ(v.finding.params["visible_count"], 4);
  EXPECT_EQ(v.finding.params["at_most"], "4 ranks");
  EXPECT_TRUE(has(v.summary, "8 local ranks but 4 GPUs visible (CUDA_VISIBLE_DEVICES=0,1,2,3)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "ppr:4:node")) << v.remedy;
  // The hidden GPUs are said too; --expect-gpus is no fix for more ranks than GPUs.
  const Finding* hidden = finding(v, "gpu.count/hidden-by-cvd");
  ASSERT_NE(hidden, nullptr) << v.summary;
  EXPECT_FALSE(hidden->params.contains("expect_hint"));  // spliced into the fix
  EXPECT_TRUE(hidden->fix.ends_with("ask for more GPUs).")) << hidden->fix;
}

TEST(GpuCount, MoreLocalRanksThanOneVisibleGpuSaysHowToFixIt) {
  // 4 local ranks, CUDA_VISIBLE_DEVICES=0: --expect-gpus 1 would not fix it, and "1 ranks" is not English.
  RankFacts f = cuda_sees(8, 1);
  f.env.set("CUDA_VISIBLE_DEVICES", "0");
  f.placement.local_ranks = 4;
  const Verdict v = judge_count(f, {}, Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.count/more-ranks-than-gpus");
  EXPECT_EQ(v.finding.params["at_most"], "1 rank");
  EXPECT_TRUE(has(v.summary, "4 local ranks but 1 GPU visible")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Start at most 1 rank per node (`mpirun --map-by ppr:1:node`, `srun --ntasks-per-node=1`)"))
      << v.remedy;
  EXPECT_FALSE(has(v.remedy, "1 ranks")) << v.remedy;
  EXPECT_FALSE(has(v.remedy, "--expect-gpus")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "unset CUDA_VISIBLE_DEVICES or list them in it")) << v.remedy;
}

TEST(GpuCount, GpusHiddenByCudaVisibleDevicesWarn) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.count/hidden-by-cvd");
  EXPECT_EQ(v.finding.params["nvml_gpus"], "8 GPUs");
  EXPECT_EQ(v.finding.params["visible_count"], 4);
  EXPECT_EQ(v.finding.params["hidden"],
            "GPU 4 (00000000:1C:00.0), GPU 5 (00000000:1D:00.0), GPU 6 (00000000:1E:00.0), GPU 7 (00000000:1F:00.0)");
  EXPECT_EQ(v.finding.params["hidden_by"], "CUDA_VISIBLE_DEVICES=0,1,2,3 hides them");
  EXPECT_TRUE(has(v.remedy, "; otherwise state --expect-gpus 4.")) << v.remedy;
  EXPECT_EQ(v.finding.params["visible_count"], 4);
  EXPECT_TRUE(has(v.summary, "NVML sees 8 GPUs, CUDA 4: GPU 4 (00000000:1C:00.0)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "ask for more GPUs); otherwise state --expect-gpus 4.")) << v.remedy;
  EXPECT_EQ(v.evidence["hidden_from_cuda"].size(), 4u);
}

TEST(GpuCount, HiddenAsExpectedPasses) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  const Verdict v = judge_count(f, expect(4));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/visible");
  EXPECT_TRUE(has(v.summary, "as --expect-gpus says")) << v.summary;
}

TEST(GpuCount, GpusHiddenWithoutCudaVisibleDevicesPointAtPermissions) {
  const Verdict v = judge_count(cuda_sees(2, 1));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.count/hidden-from-cuda");
  EXPECT_EQ(v.finding.params["hidden"], "GPU 1 (00000000:19:00.0)");
  EXPECT_EQ(v.finding.params["hidden_verb"], "is");
  EXPECT_TRUE(has(v.summary, "/dev/nvidia* permissions")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "ls -l /dev/nvidia*")) << v.remedy;
}

TEST(GpuCount, MatchesByUuidNotByIndex) {
  // CUDA enumerates in its own order with differently formatted bus ids: still the same GPUs.
  RankFacts f = healthy(2);
  auto& cuda = *f.gpu.driver.cuda_devices.value();
  std::swap(cuda[0], cuda[1]);
  cuda[0].uuid = "gpu-" + uuid(1).substr(4);  // lower-case prefix
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(GpuCount, MigModeWarns) {
  RankFacts f = healthy(2);
  (*f.gpu.driver.nvml_gpus.value())[1].mig_enabled = true;
  auto& cuda = *f.gpu.driver.cuda_devices.value();
  cuda[1].uuid = "MIG-11112222-3333-4444-5555-666677778888";
  cuda[1].pci_bus_id.clear();
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.count/mig-mode");
  EXPECT_EQ(v.finding.params["mig_gpus"], "GPU 1 (00000000:19:00.0)");
  EXPECT_TRUE(has(v.summary, "MIG mode is on for GPU 1 (00000000:19:00.0)")) << v.summary;
}

TEST(GpuCount, ZeroGpusFails) {
  RankFacts f = cuda_sees(2, 0);
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.count/no-gpu-visible");
  EXPECT_EQ(v.finding.params["nvml_gpus"], "2 GPUs");
  EXPECT_TRUE(has(v.summary, "no GPU visible to CUDA; NVML sees 2 GPUs; the job needs a GPU")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Give the job GPUs")) << v.remedy;
}

TEST(GpuCount, NoDeviceErrorIsZeroGpus) {
  RankFacts f = healthy(2);
  f.env.set("CUDA_VISIBLE_DEVICES", "7");
  f.gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail);
  const Finding* none = finding(v, "gpu.count/cvd-selects-no-gpu");
  ASSERT_NE(none, nullptr) << v.summary;
  EXPECT_EQ(none->params["cvd_value"], "7");
  EXPECT_EQ(none->params["value"], "7");
  EXPECT_TRUE(has(v.summary, "no GPU visible to CUDA (CUDA_VISIBLE_DEVICES=7)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "CUDA_VISIBLE_DEVICES=7 selects no usable GPU")) << v.remedy;
}

TEST(GpuCount, HelperCrashFails) {
  RankFacts f = healthy(2);
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::error(
      ProbeErrc::Crashed, "cuInit crashed with SIGSEGV after 0.2 s", "driver helper");
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "cuInit crashed with SIGSEGV")) << v.summary;
}

TEST(GpuCount, NoDriverFails) {
  const Verdict v = judge_count(no_driver(), expect(8), Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no NVIDIA driver on this node")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the job needs a GPU")) << v.summary;
}

TEST(GpuCount, NotProbedIsUnknown) {
  RankFacts f = healthy(2);
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>{};
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
}

TEST(GpuCount, SkipsInImageProfile) {
  const Verdict v = judge_count(no_driver(), {}, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
}

// ---- the node of a job, judged from every rank's view --------------------------------------------

/// `n` ranks of one host, rank l seeing only NVML GPU `gpu_of(l)` through CUDA_VISIBLE_DEVICES=l
/// (the per-rank wrapper `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK`).
std::vector<RankFacts> per_rank_node(int n, int gpus = 8) {
  std::vector<RankFacts> out;
  for (int l = 0; l < n; ++l) {
    RankFacts f = healthy(gpus);
    f.identity.hostname = "gpu-a";
    f.identity.boot_id = "boot-0";
    f.identity.pid = 1000 + l;
    f.placement.rank = l;
    f.placement.local_rank = l;
    f.placement.local_ranks = n;
    std::vector<CudaDevice>& cuda = *f.gpu.driver.cuda_devices.value();
    CudaDevice mine = cuda[static_cast<std::size_t>(l)];
    mine.ordinal = 0;
    cuda = {mine};
    f.env.set("CUDA_VISIBLE_DEVICES", std::to_string(l));
    out.push_back(std::move(f));
  }
  return out;
}

Verdict judge_node(const std::vector<RankFacts>& ranks, const Options& o = {}, Profile p = Profile::Job) {
  std::vector<const RankFacts*> host;
  for (const RankFacts& f : ranks) host.push_back(&f);
  CheckContext ctx{ranks.front(), o, p};
  ctx.host_ranks = &host;
  return run_check(kGpuCount, ctx);
}

TEST(GpuCount, JobNodeCountsTheUnionOfItsRanksGpus) {
  const std::vector<RankFacts> ranks = per_rank_node(4);
  // Local rank 0 alone sees one GPU for 4 local ranks; the node's ranks together use 4.
  EXPECT_EQ(judge_count(ranks.front(), {}, Profile::Job).status, Status::Fail);
  Verdict v = judge_node(ranks, expect(4));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/visible");
  EXPECT_EQ(v.finding.params["rank_count"], 4);
  EXPECT_TRUE(has(v.summary, "4 GPUs visible to CUDA to the node's 4 ranks (4 × NVIDIA H100 80GB HBM3)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "per-rank CUDA_VISIBLE_DEVICES: rank 0 '0', rank 1 '1'")) << v.summary;
  EXPECT_FALSE(has(v.summary, "local ranks but")) << v.summary;
  // Without --expect-gpus the other 4 GPUs of the node are hidden from the job: a warning, not a failure.
  v = judge_node(ranks);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/hidden-by-cvd");
  EXPECT_EQ(v.finding.params["hidden_by"], "the ranks' CUDA_VISIBLE_DEVICES hide them");
  EXPECT_TRUE(has(v.summary, "NVML sees 8 GPUs, CUDA 4")) << v.summary;
  // Two ranks on one GPU still leave fewer GPUs than ranks.
  std::vector<RankFacts> shared = per_rank_node(4);
  shared[3] = shared[2];
  shared[3].placement.rank = shared[3].placement.local_rank = 3;
  v = judge_node(shared);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/more-ranks-than-gpus");
  EXPECT_EQ(v.finding.params["local_ranks"], 4);
  EXPECT_EQ(v.finding.params["visible"], "3 GPUs");
}

TEST(GpuCount, JobNodeRankWithoutAGpuFails) {
  std::vector<RankFacts> ranks = per_rank_node(4);
  ranks[2].env.set("CUDA_VISIBLE_DEVICES", "");
  ranks[2].gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
  const Verdict v = judge_node(ranks, expect(3));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  const Finding* hides = finding(v, "gpu.count/cvd-hides-all");
  ASSERT_NE(hides, nullptr) << v.summary;
  EXPECT_EQ(hides->params["value_ranks"], "2");
  EXPECT_EQ(hides->params["value"], "");
  const Finding* blind = finding(v, "gpu.count/rank-sees-no-gpu");
  ASSERT_NE(blind, nullptr) << v.summary;
  EXPECT_EQ(blind->params["rank"], 2);
  EXPECT_EQ(blind->params["cvd_value"], "");
  EXPECT_TRUE(has(blind->message, " (CUDA_VISIBLE_DEVICES='')")) << blind->message;
  EXPECT_TRUE(has(v.summary, "rank 2: CUDA_VISIBLE_DEVICES='' hides every GPU")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 2 sees no GPU (CUDA_VISIBLE_DEVICES='')")) << v.summary;
}

TEST(GpuCount, InvalidEntryIsFoundInTheNodeProfile) {
  // 0,1,99: the driver stops at 99, so CUDA lists GPUs 0 and 1 only — the invalid entry is named.
  RankFacts f = cuda_sees(8, 2);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,99");
  Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.count/cvd-invalid-entry");
  EXPECT_EQ(v.finding.params["value"], "0,1,99");
  EXPECT_EQ(v.finding.params["entry"], "'99' (the node has 8 GPUs (0..7))");
  EXPECT_EQ(v.finding.params["position"], 3);
  EXPECT_EQ(v.finding.params["listed"], "2 GPUs");
  EXPECT_EQ(v.finding.params["last_index"], 7);
  EXPECT_TRUE(has(v.summary,
                  "CUDA_VISIBLE_DEVICES=0,1,99 has an invalid entry '99' (the node has 8 GPUs (0..7)) at "
                  "position 3: the driver stops reading the list there, so only 2 GPUs are visible"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "list valid indices (0..7)")) << v.remedy;
  // The same with --expect-gpus 2 (the hiding looks intended) and for a repeat or an unknown UUID.
  EXPECT_EQ(judge_count(f, expect(2)).status, Status::Fail);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,1");
  v = judge_count(f, expect(2));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "'1' (it repeats an earlier entry)")) << v.summary;
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,GPU-ffff");
  v = judge_count(f, expect(2));
  EXPECT_EQ(v.finding.code, "gpu.count/cvd-invalid-entry");
  EXPECT_EQ(v.finding.params["entry"], "'GPU-ffff' (no GPU has that UUID)");
  // Valid lists stay as they were.
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1");
  EXPECT_EQ(judge_count(f, expect(2)).status, Status::Pass);
}

TEST(GpuCount, EmptyOrNoneMeansTheJobSeesNoGpu) {
  for (const std::string value : {"", "none", "NoDevFiles"}) {
    RankFacts f = healthy(8);
    f.env.set("CUDA_VISIBLE_DEVICES", value);
    f.gpu.driver.cuda_devices =
        Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
    for (const Profile p : {Profile::Node, Profile::Job}) {
      const Verdict v = judge_count(f, {}, p);
      EXPECT_EQ(v.status, Status::Fail) << value;
      EXPECT_EQ(v.finding.code, "gpu.count/cvd-hides-all");
      EXPECT_EQ(v.finding.params["value"], value);
      EXPECT_FALSE(v.finding.params.contains("value_ranks"));
      EXPECT_EQ(v.finding.params["nvml_gpus"], "8 GPUs");
      EXPECT_TRUE(has(v.summary, "CUDA_VISIBLE_DEVICES='" + value +
                                     "' hides every GPU: the job will see no GPU (NVML "
                                     "sees 8 GPUs)"))
          << v.summary;
    }
  }
}

}  // namespace
}  // namespace checks_gpu_count_test
}  // namespace preflight
