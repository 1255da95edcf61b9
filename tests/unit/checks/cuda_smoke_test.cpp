// SPDX-License-Identifier: MIT
// cuda.smoke on hand-built facts: every status and every finding of its table, by code and parameters.
#include <gtest/gtest.h>

#include "checks/gpu_common.hpp"
#include "core/deadlines.hpp"

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_cuda_smoke_test {
namespace {
using namespace gpu_fixture;

Verdict judge_smoke(const RankFacts& f, Profile p = Profile::Node) { return judge(kCudaSmoke, f, Options{}, p); }

TEST(CudaSmoke, PassesWithBytesTimeAndDevice) {
  const Verdict v = judge_smoke(healthy());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary, "wrote and read back 64 MiB on GPU 0 (NVIDIA H100 80GB HBM3, 0000:18:00.0) in 50 ms");
  EXPECT_EQ(v.finding.code, "cuda.smoke/passed");
  EXPECT_EQ(v.finding.params["device"], "GPU 0 (NVIDIA H100 80GB HBM3, 0000:18:00.0)");
  EXPECT_EQ(v.finding.params["bytes"], "64 MiB");
  EXPECT_EQ(v.evidence["bytes"], 64 * kMiB);
}

// A failed step of the test on the healthy node's GPU 0.
RankFacts failed_step(const std::string& step, const std::string& error) {
  RankFacts f = healthy();
  SmokeResult s = *f.gpu.driver.smoke.value();
  s.ok = false;
  s.failed_step = step;
  s.error = error;
  f.gpu.driver.smoke = Probed<SmokeResult>::ok(s, "driver helper");
  return f;
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
  EXPECT_EQ(v.finding.code, "cuda.smoke/wrong-data");
  EXPECT_EQ(v.finding.params["step"], "verify");
  EXPECT_EQ(v.finding.params["error"], "cuMemcpyDtoH returned wrong data: word 17 is 0x00000000, wrote 0x5AA5F00D");
  EXPECT_TRUE(has(v.summary, "failed at verify")) << v.summary;
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
  EXPECT_EQ(v.finding.code, "cuda.smoke/out-of-memory");
  EXPECT_EQ(v.finding.params["step"], "cuMemAlloc");
  EXPECT_EQ(v.finding.params["error"], "CUDA_ERROR_OUT_OF_MEMORY (2)");
  EXPECT_TRUE(has(v.summary, "failed at cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "gpu.busy")) << v.remedy;
}

TEST(CudaSmoke, EachStepErrorNamesItsFix) {
  struct Case {
    const char* step;
    const char* error;
    const char* code;
    const char* remedy_has;
  };
  for (const Case& c : {
           Case{"cuInit", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", "cuda.smoke/driver-mismatch", "see driver.loaded"},
           Case{"cuDeviceGet", "CUDA_ERROR_INVALID_DEVICE (101)", "cuda.smoke/no-usable-gpu", "CUDA_VISIBLE_DEVICES"},
           Case{"cuInit", "CUDA_ERROR_SYSTEM_NOT_READY (802)", "cuda.smoke/fabric-not-ready", "nvidia-fabricmanager"},
           Case{"cuCtxCreate", "CUDA_ERROR_DEVICES_UNAVAILABLE (46)", "cuda.smoke/gpu-exclusive",
                "nvidia-smi -c DEFAULT"},
       }) {
    const Verdict v = judge_smoke(failed_step(c.step, c.error));
    EXPECT_EQ(v.status, Status::Fail) << c.error;
    EXPECT_EQ(v.finding.code, c.code) << c.error;
    EXPECT_EQ(v.finding.params["step"], c.step);
    EXPECT_EQ(v.finding.params["error"], c.error);
    EXPECT_EQ(v.summary, "CUDA smoke test on GPU 0 (NVIDIA H100 80GB HBM3, 0000:18:00.0) failed at " +
                             std::string(c.step) + ": " + c.error);
    EXPECT_TRUE(has(v.remedy, c.remedy_has)) << v.remedy;
  }
}

TEST(CudaSmoke, AnyOtherStepErrorNamesTheStep) {
  Verdict v = judge_smoke(failed_step("cuMemsetD32", "CUDA_ERROR_LAUNCH_FAILED (719)"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/step-failed");
  EXPECT_EQ(v.finding.params["failed_step"], "cuMemsetD32");
  EXPECT_TRUE(v.remedy.starts_with("The job's first GPU calls will fail the same way at cuMemsetD32. ")) << v.remedy;
  // A step the helper did not name.
  v = judge_smoke(failed_step("", "CUDA_ERROR_LAUNCH_FAILED (719)"));
  EXPECT_EQ(v.finding.code, "cuda.smoke/step-failed");
  EXPECT_EQ(v.finding.params["step"], "an unnamed step");
  EXPECT_TRUE(has(v.summary, "failed at an unnamed step: CUDA_ERROR_LAUNCH_FAILED (719)")) << v.summary;
}

TEST(CudaSmoke, CrashFailsNamingTheSignal) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::Crashed, "cuInit crashed with SIGSEGV after 0.2 s", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/crashed");
  EXPECT_EQ(v.finding.params["why"], "driver helper: cuInit crashed with SIGSEGV after 0.2 s");
  EXPECT_EQ(v.summary, "the CUDA smoke test died: driver helper: cuInit crashed with SIGSEGV after 0.2 s");
  EXPECT_TRUE(has(v.remedy, "-11")) << v.remedy;
  EXPECT_EQ(v.cause, "");
}

TEST(CudaSmoke, HangFailsNamingTheDeadline) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::Timeout, "did not finish within 10.0 s (killed)", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/hang");
  EXPECT_EQ(v.finding.params["hang"], "the CUDA smoke test did not finish within 10.0 s (killed)");
  EXPECT_EQ(v.finding.params["source"], "driver helper");
  EXPECT_TRUE(v.summary.ends_with(" [driver helper]")) << v.summary;
  EXPECT_EQ(v.summary, "the CUDA smoke test did not finish within 10.0 s (killed) [driver helper]");
}

TEST(CudaSmoke, ExpiredShareOfTimeoutIsNamedWithTheOption) {
  RankFacts f = healthy();
  const std::string expired = helper_deadline(Helper::GpuSmoke, 6, std::chrono::milliseconds::max()).expired(0.9);
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::Timeout, expired, "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/hang");
  EXPECT_EQ(v.finding.params["hang"].get<std::string>(), expired);  // the probe's message stands on its own
  EXPECT_TRUE(v.summary.starts_with("the GPU smoke test helper")) << v.summary;
  EXPECT_TRUE(has(v.summary, "its deadline of 0.9 s (15% of --timeout 6 s)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
}

TEST(CudaSmoke, HangWithoutDeadlineInDetailStillSaysDidNotFinish) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::Timeout, "killed", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/hang");
  EXPECT_EQ(v.finding.params["hang"], "the CUDA smoke test did not finish within its deadline (killed)");
  EXPECT_TRUE(has(v.summary, "did not finish within its deadline (killed)")) << v.summary;
}

TEST(CudaSmoke, AProbeThatHungBeforeItIsUnknown) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(
      ProbeErrc::Timeout, "probe 'gpu_driver' hung: no answer within its deadline of 30 s", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.smoke/not-gathered");
  EXPECT_EQ(v.summary,
            "the CUDA smoke test result was not gathered: probe 'gpu_driver' hung: no answer within its "
            "deadline of 30 s");
  // The shared finding's template, its parts as parameters (never the sentence itself).
  EXPECT_EQ(v.finding.message, "{what} was not gathered: {detail}");
  EXPECT_EQ(v.finding.params["what"], "the CUDA smoke test result");
  EXPECT_EQ(v.finding.params["detail"], "probe 'gpu_driver' hung: no answer within its deadline of 30 s");
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
  EXPECT_EQ(v.evidence["local_rank"], 0);
}

TEST(CudaSmoke, NoDeviceFails) {
  RankFacts f = healthy();
  f.env.set("CUDA_VISIBLE_DEVICES", "");
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::ok({}, "cuDeviceGetCount");
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::ApiError, "cuInit: CUDA_ERROR_NO_DEVICE (100)", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/no-device");
  EXPECT_EQ(v.finding.params["why"], "driver helper: cuInit: CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(v.summary,
            "no CUDA device visible to this rank (driver helper: cuInit: CUDA_ERROR_NO_DEVICE (100)); the "
            "job needs a GPU");
  EXPECT_EQ(v.evidence["CUDA_VISIBLE_DEVICES"], "");
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
  EXPECT_EQ(v.finding.code, "cuda.smoke/not-run");
  EXPECT_EQ(v.finding.params["reason"], "no CUDA device (cuda: cuInit: CUDA_ERROR_NO_DEVICE (100))");
  EXPECT_EQ(v.summary,
            "the CUDA smoke test was not run: no CUDA device (cuda: cuInit: CUDA_ERROR_NO_DEVICE (100)); the job needs "
            "a GPU");
  EXPECT_FALSE(v.remedy.empty());
  EXPECT_EQ(v.cause, "driver.loaded");  // a driver error: driver.loaded says why
}

TEST(CudaSmoke, ATestThatDidNotRunForAnotherReasonIsUnknown) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::NotProbed, "not run: the driver helper was skipped");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.smoke/not-run-unknown");
  EXPECT_EQ(v.finding.params["reason"], "the driver helper was skipped");
  EXPECT_EQ(v.summary, "the CUDA smoke test was not run: the driver helper was skipped");
  EXPECT_TRUE(has(v.remedy, "Run preflight on the node itself")) << v.remedy;
}

TEST(CudaSmoke, NoDriverFailsInNodeAndJob) {
  for (Profile p : {Profile::Node, Profile::Job}) {
    const Verdict v = judge_smoke(no_driver(), p);
    EXPECT_EQ(v.status, Status::Fail);
    EXPECT_EQ(v.finding.code, "cuda.smoke/no-driver");
    EXPECT_EQ(v.finding.params["consequence"], "the job needs a GPU");
    EXPECT_EQ(v.summary, "no NVIDIA driver on this node; the job needs a GPU");
    EXPECT_TRUE(has(v.remedy, "--gpus all")) << v.remedy;
    EXPECT_EQ(v.cause, "driver.loaded");
  }
}

TEST(CudaSmoke, MissingLibcudaFollowsFromTheDriver) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::LibraryMissing, "libcuda.so.1: cannot open shared object file", "dlopen");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/library-missing");
  EXPECT_EQ(v.summary,
            "the CUDA smoke test result could not be read: dlopen: libcuda.so.1: cannot open shared object "
            "file; the job needs a GPU");
  EXPECT_EQ(v.finding.params["source"], "dlopen");
  EXPECT_EQ(v.finding.params["detail"], "libcuda.so.1: cannot open shared object file");
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(CudaSmoke, DriverErrorFollowsFromTheDriver) {
  RankFacts f = healthy();
  f.gpu.driver.smoke =
      Probed<SmokeResult>::error(ProbeErrc::ApiError, "cuCtxCreate: CUDA_ERROR_UNKNOWN (999)", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/driver-error");
  EXPECT_EQ(v.summary,
            "the CUDA smoke test result could not be read: driver helper: cuCtxCreate: CUDA_ERROR_UNKNOWN "
            "(999); the job needs a GPU");
  EXPECT_EQ(v.finding.fix, kDriverErrorFix);
  EXPECT_EQ(v.remedy, kDriverErrorFix);
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(CudaSmoke, GarbageFromHelperFails) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>::error(ProbeErrc::ParseError, "line 1: not JSON", "driver helper");
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "cuda.smoke/helper-garbage");
  EXPECT_TRUE(has(v.summary, "garbage")) << v.summary;
}

TEST(CudaSmoke, NotProbedIsUnknown) {
  RankFacts f = healthy();
  f.gpu.driver.smoke = Probed<SmokeResult>{};
  const Verdict v = judge_smoke(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.smoke/not-read");
  EXPECT_EQ(v.summary, "could not read the CUDA smoke test result: not probed");
  EXPECT_FALSE(v.finding.params.contains("consequence")) << v.finding.params.dump();
}

TEST(CudaSmoke, SkipsInImageProfile) {
  const Verdict v = judge_smoke(no_driver(), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "no GPU")) << v.summary;
}

}  // namespace
}  // namespace checks_cuda_smoke_test
}  // namespace preflight
