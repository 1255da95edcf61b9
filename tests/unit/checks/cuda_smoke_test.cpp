// SPDX-License-Identifier: MIT
// cuda.smoke on hand-built facts: every status, the numbers and words asserted.
#include <gtest/gtest.h>

#include "core/deadlines.hpp"

#include "gpu_facts_fixture.hpp"

namespace preflight {
extern const CheckSpec kCudaSmoke;
namespace {
using namespace gpu_fixture;

Verdict judge_smoke(const RankFacts& f, Profile p = Profile::Node) { return judge(kCudaSmoke, f, Options{}, p); }

TEST(CudaSmoke, PassesWithBytesTimeAndDevice) {
  const Verdict v = judge_smoke(healthy());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary, "wrote and read back 64 MiB on GPU 0 (NVIDIA H100 80GB HBM3, 0000:18:00.0) in 50 ms");
  EXPECT_EQ(v.evidence["bytes"], 64 * kMiB);
}

TEST(CudaSmoke, WrongDataFailsNamingStepAndWord) {
  RankFacts f = healthy();
  SmokeResult s = *f.gpu.driver.smoke.value();
  s.ok = false;
  s.failed_step = "verify";
  s.error = "cuMemcpyDtoH returned wrong data: word 17 is 0x00000000, wrote 0x5AA5F00D";
  f.gpu.driver.smoke = Probed<SmokeResult>::ok(s, "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "failed at verify")) << v.summary;
  EXPECT_TRUE(has(v.summary, "word 17 is 0x00000000, wrote 0x5AA5F00D")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Drain the node")) << v.remedy;
  EXPECT_EQ(v.evidence["failed_step"], "verify");
}

TEST(CudaSmoke, StepErrorFailsWithMatchingRemedy) {
  RankFacts f = healthy();
  SmokeResult s;
  s.ok = false;
  s.failed_step = "cuMemAlloc";
  s.error = "CUDA_ERROR_OUT_OF_MEMORY (2)";
  f.gpu.driver.smoke = Probed<SmokeResult>::ok(s, "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "failed at cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "gpu.busy")) << v.remedy;
}

TEST(CudaSmoke, CrashFailsNamingTheSignal) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::Crashed, "cuInit crashed with SIGSEGV after 0.2 s", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "cuInit crashed with SIGSEGV after 0.2 s")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "-11")) << v.remedy;
}

TEST(CudaSmoke, HangFailsNamingTheDeadline) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::Timeout, "did not finish within 10.0 s (killed)", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "the CUDA smoke test did not finish within 10.0 s")) << v.summary;
}

TEST(CudaSmoke, ExpiredShareOfTimeoutIsNamedWithTheOption) {
  RankFacts f = healthy();
  const std::string expired = helper_deadline(Helper::GpuSmoke, 6, std::chrono::milliseconds::max()).expired(0.9);
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::Timeout, expired, "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(v.summary.starts_with("the GPU smoke test helper")) << v.summary;
  EXPECT_TRUE(has(v.summary, "its deadline of 0.9 s (15% of --timeout 6 s)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
}

TEST(CudaSmoke, HangWithoutDeadlineInDetailStillSaysDidNotFinish) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::Timeout, "killed", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "did not finish within its deadline (killed)")) << v.summary;
}

TEST(CudaSmoke, NoDeviceFails) {
  RankFacts f = healthy();
  f.env.set("CUDA_VISIBLE_DEVICES", "");
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::ok({}, "cuDeviceGetCount");
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no CUDA device visible to this rank")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA_ERROR_NO_DEVICE (100)")) << v.summary;
}

TEST(CudaSmoke, ATestThatDidNotRunSaysSo) {
  // The driver helper saw no device, so the smoke test was never started: no "result could not be read".
  RankFacts f = healthy();
  f.gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "cuda");
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::ApiError,
                                                  "not run: no CUDA device (cuda: cuInit: CUDA_ERROR_NO_DEVICE (100))");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.summary,
            "the CUDA smoke test was not run: no CUDA device (cuda: cuInit: CUDA_ERROR_NO_DEVICE (100)); the job needs a GPU");
  EXPECT_FALSE(v.remedy.empty());
}

TEST(CudaSmoke, NoDriverFailsInNodeAndJob) {
  for (Profile p : {Profile::Node, Profile::Job}) {
    const Verdict v = judge_smoke(no_driver(), p);
    EXPECT_EQ(v.status, Status::Fail);
    EXPECT_TRUE(has(v.summary, "no NVIDIA driver on this node")) << v.summary;
    EXPECT_TRUE(has(v.summary, "the job needs a GPU")) << v.summary;
  }
}

TEST(CudaSmoke, GarbageFromHelperFails) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::ParseError, "line 1: not JSON", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "garbage")) << v.summary;
}

TEST(CudaSmoke, NotProbedIsUnknown) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>{};
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
}

TEST(CudaSmoke, SkipsInImageProfile) {
  const Verdict v = judge_smoke(no_driver(), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "no GPU")) << v.summary;
}

}  // namespace
}  // namespace preflight
