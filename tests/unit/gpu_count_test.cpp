// SPDX-License-Identifier: MIT
// gpu.count on hand-built facts: every status, the numbers and words asserted.
#include <gtest/gtest.h>

#include "gpu_facts_fixture.hpp"

namespace preflight {
extern const CheckSpec kGpuCount;
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
  EXPECT_TRUE(has(v.summary, "8 GPUs visible to CUDA (8 × NVIDIA H100 80GB HBM3)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "NVML sees the same 8")) << v.summary;
}

TEST(GpuCount, FewerThanExpectedFails) {
  const Verdict v = judge_count(healthy(4), expect(8));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "4 GPUs visible to CUDA, --expect-gpus 8")) << v.summary;
}

TEST(GpuCount, MoreThanExpectedFails) {
  const Verdict v = judge_count(healthy(8), expect(4));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "8 GPUs visible to CUDA, --expect-gpus 4")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "More GPUs than expected")) << v.remedy;
}

TEST(GpuCount, MoreLocalRanksThanGpusFails) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  f.placement.local_ranks = 8;
  const Verdict v = judge_count(f, {}, Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "8 local ranks but 4 GPUs visible")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "ppr:4:node")) << v.remedy;
}

TEST(GpuCount, GpusHiddenByCudaVisibleDevicesWarn) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "NVML sees 8 GPUs, CUDA 4")) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 4 (00000000:1C:00.0)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA_VISIBLE_DEVICES=0,1,2,3 hides them")) << v.summary;
  EXPECT_EQ(v.evidence["hidden_from_cuda"].size(), 4u);
}

TEST(GpuCount, HiddenAsExpectedPasses) {
  RankFacts f = cuda_sees(8, 4);
  f.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  const Verdict v = judge_count(f, expect(4));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "as --expect-gpus says")) << v.summary;
}

TEST(GpuCount, GpusHiddenWithoutCudaVisibleDevicesPointAtPermissions) {
  const Verdict v = judge_count(cuda_sees(2, 1));
  EXPECT_EQ(v.status, Status::Warn);
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
  EXPECT_TRUE(has(v.summary, "MIG mode is on for GPU 1 (00000000:19:00.0)")) << v.summary;
}

TEST(GpuCount, ZeroGpusFails) {
  RankFacts f = cuda_sees(2, 0);
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no GPU visible to CUDA; NVML sees 2 GPUs; the job needs a GPU")) << v.summary;
}

TEST(GpuCount, NoDeviceErrorIsZeroGpus) {
  RankFacts f = healthy(2);
  f.env.set("CUDA_VISIBLE_DEVICES", "7");
  f.gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
  const Verdict v = judge_count(f);
  EXPECT_EQ(v.status, Status::Fail);
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

}  // namespace
}  // namespace preflight
