// SPDX-License-Identifier: MIT
// driver.loaded on hand-built facts: every status and every finding of its table, by code and parameters.
#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_driver_loaded_test {
namespace {
using namespace gpu_fixture;

Verdict judge_driver(const RankFacts& f, Profile p = Profile::Node) { return judge(kDriverLoaded, f, Options{}, p); }

TEST(DriverLoaded, PassesNamingDriverCudaAndLoadedFiles) {
  const Verdict v = judge_driver(healthy());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(
      v.summary,
      "driver 550.54.15 (CUDA 12.4), kernel module matches; loaded /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  EXPECT_EQ(v.finding.code, "driver.loaded/loaded");
  EXPECT_EQ(v.finding.params["driver"], "550.54.15");
  EXPECT_EQ(v.finding.params["cuda_version"], "12.4");
  ASSERT_EQ(v.evidence["loaded_libraries"].size(), 2u);
  EXPECT_EQ(v.evidence["loaded_libraries"][0], "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15");
}

TEST(DriverLoaded, NoDriverAtAllFailsWithTheFix) {
  const Verdict v = judge_driver(no_driver());
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/no-driver");
  EXPECT_TRUE(v.finding.message.starts_with("no NVIDIA driver on this node")) << v.finding.message;
  EXPECT_TRUE(v.finding.params.contains("detail")) << v.finding.params.dump();
  EXPECT_FALSE(v.finding.params.contains("problem")) << "the sentence is the template's, not a parameter";
  EXPECT_EQ(v.cause, "");  // it is the cause the other GPU checks name
  EXPECT_EQ(v.evidence["loaded_libraries"].size(), 0u);
  EXPECT_TRUE(has(v.summary, "no NVIDIA driver on this node")) << v.summary;
  EXPECT_TRUE(has(v.summary, "libnvidia-ml.so.1")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--gpus all")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "--profile image")) << v.remedy;
}

TEST(DriverLoaded, ModuleWithoutLibrariesFailsNamingTheModule) {
  RankFacts f = no_driver();
  f.gpu.driver.kernel_module_version = Probed<std::string>::ok("550.54.15", "/sys/module/nvidia/version");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/module-without-libraries");
  EXPECT_TRUE(has(v.summary, "kernel module 550.54.15 is loaded")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--gpus all")) << v.remedy;
}

TEST(DriverLoaded, SkipsInImageProfile) {
  const Verdict v = judge_driver(no_driver(), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "--target-driver")) << v.summary;
  EXPECT_TRUE(has(v.summary, "profile image")) << v.summary;
}

TEST(DriverLoaded, KernelModuleAndLibraryMismatchFails) {
  RankFacts f = healthy();
  f.gpu.driver.kernel_module_version = Probed<std::string>::ok("535.104.05", "/proc/driver/nvidia/version");
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok("535.129.03", "nvmlSystemGetDriverVersion");
  f.gpu.driver.loaded_libraries = {"/usr/lib/x86_64-linux-gnu/libcuda.so.535.129.03"};
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/module-library-mismatch");
  EXPECT_EQ(v.finding.params["module"], "535.104.05");
  EXPECT_EQ(v.finding.params["nvml"], "535.129.03");
  EXPECT_TRUE(has(v.summary, "driver/library version mismatch: kernel module 535.104.05, libnvidia-ml 535.129.03"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "Reboot (or reload the nvidia module) after the driver upgrade")) << v.remedy;
}

TEST(DriverLoaded, NvmlMismatchErrorFailsWithReboot) {
  RankFacts f = healthy();
  f.gpu.driver.nvml_driver_version =
      Probed<std::string>::error(ProbeErrc::ApiError, "nvmlInit_v2: NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)", "nvml");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/library-version-mismatch");
  EXPECT_EQ(v.finding.params["library"], "libnvidia-ml.so.1 (NVML)");
  EXPECT_EQ(v.finding.params["error"], "nvmlInit_v2: NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)");
  EXPECT_EQ(v.summary,
            "driver/library version mismatch: libnvidia-ml.so.1 (NVML) returned nvmlInit_v2: "
            "NVML_ERROR_LIB_RM_VERSION_MISMATCH (18) (kernel module 550.54.15)");
  EXPECT_TRUE(has(v.remedy, "Reboot the node")) << v.remedy;
}

TEST(DriverLoaded, NvmlInitErrorIsNamed) {
  RankFacts f = healthy();
  f.gpu.driver.kernel_module_version =
      Probed<std::string>::error(ProbeErrc::NotFound, "no such file", "/proc/driver/nvidia/version");
  f.gpu.driver.nvml_driver_version =
      Probed<std::string>::error(ProbeErrc::ApiError, "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (9)", "nvml");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/module-not-loaded");
  EXPECT_EQ(v.finding.params["library"], "libnvidia-ml.so.1 (NVML)");
  EXPECT_EQ(v.finding.params["why"], "nvml: nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (9)");
  EXPECT_TRUE(has(v.summary, "NVML_ERROR_DRIVER_NOT_LOADED (9)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "modprobe nvidia")) << v.remedy;
}

TEST(DriverLoaded, EachInitErrorNamesItsFix) {
  struct Case {
    bool nvml;  // else libcuda
    const char* detail;
    const char* code;
    const char* remedy_has;
  };
  for (const Case& c : {
           Case{true, "nvmlInit_v2: NVML_ERROR_NO_PERMISSION (4)", "driver.loaded/no-permission", "ls -l /dev/nvidia*"},
           Case{false, "cuInit: CUDA_ERROR_SYSTEM_NOT_READY (802)", "driver.loaded/fabric-not-ready",
                "nvidia-fabricmanager"},
           Case{false, "cuInit: CUDA_ERROR_UNKNOWN (999)", "driver.loaded/init-failed", "reinstall the driver"},
       }) {
    RankFacts f = healthy();
    if (c.nvml) {
      f.gpu.driver.nvml_driver_version = Probed<std::string>::error(ProbeErrc::ApiError, c.detail, "nvml");
    } else {
      f.gpu.driver.cuda_driver_version = Probed<int>::error(ProbeErrc::ApiError, c.detail, "cuda");
    }
    const Verdict v = judge_driver(f);
    EXPECT_EQ(v.status, Status::Fail) << c.detail;
    EXPECT_EQ(v.finding.code, c.code) << c.detail;
    EXPECT_EQ(v.finding.params["library"], c.nvml ? "libnvidia-ml.so.1 (NVML)" : "libcuda.so.1");
    EXPECT_EQ(v.summary, std::string(c.nvml ? "libnvidia-ml.so.1 (NVML)" : "libcuda.so.1") +
                             " failed to initialise: " + (c.nvml ? "nvml: " : "cuda: ") + c.detail);
    EXPECT_TRUE(has(v.remedy, c.remedy_has)) << v.remedy;
  }
}

TEST(DriverLoaded, GarbageFromTheHelperFails) {
  RankFacts f = healthy();
  f.gpu.driver.nvml_driver_version = Probed<std::string>::error(ProbeErrc::ParseError, "line 1: not JSON", "helper");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/helper-garbage");
  EXPECT_EQ(v.finding.params["why"], "helper: line 1: not JSON");
  EXPECT_EQ(v.summary, "libnvidia-ml.so.1 (NVML): the GPU helper's answer was garbage (helper: line 1: not JSON)");
  EXPECT_TRUE(has(v.remedy, "preflight bug")) << v.remedy;
}

TEST(DriverLoaded, HelperCrashIsNamed) {
  RankFacts f = healthy();
  f.gpu.driver.cuda_driver_version =
      Probed<int>::error(ProbeErrc::Crashed, "cuInit crashed with SIGSEGV after 0.2 s", "driver helper");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/helper-crashed");
  EXPECT_EQ(v.finding.params["library"], "libcuda.so.1");
  EXPECT_TRUE(has(v.summary, "cuInit crashed with SIGSEGV")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "crashes like this")) << v.remedy;
}

TEST(DriverLoaded, HelperHangIsNamed) {
  RankFacts f = healthy();
  f.gpu.driver.nvml_driver_version =
      Probed<std::string>::error(ProbeErrc::Timeout, "driver helper did not finish within 10.0 s (killed)", "nvml");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/helper-timeout");
  EXPECT_EQ(v.finding.params["why"], "nvml: driver helper did not finish within 10.0 s (killed)");
  EXPECT_TRUE(has(v.summary, "did not finish within 10.0 s")) << v.summary;
  // A deadline is not a crash: the fix speaks of --timeout and persistence mode, not of a library
  // that "crashes like this".
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "persistence")) << v.remedy;
  EXPECT_FALSE(has(v.remedy, "crashes like this")) << v.remedy;
}

TEST(DriverLoaded, AHelperStoppedByPreflightsOwnBudgetIsUnknownNotAHang) {
  RankFacts f = healthy();
  const std::string why =
      "the GPU driver helper (NVML, cuInit, device query) got only what was left of the probe phase, 1.0 s (the phase "
      "is 50% of --timeout 60 s), less than its own deadline of 24.0 s (40% of --timeout), and was stopped after 1.0 "
      "s: "
      "preflight's own budget ran out, which says nothing about the GPU; --timeout 99 gives it its whole deadline";
  f.gpu.driver.nvml_driver_version = Probed<std::string>::error(ProbeErrc::OutOfBudget, why, "helper");
  f.gpu.driver.cuda_driver_version = Probed<int>::error(ProbeErrc::OutOfBudget, why, "helper");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "driver.loaded/out-of-budget");
  EXPECT_TRUE(has(v.summary, "--timeout 99 gives it its whole deadline")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "preflight's own budget ended it, not the driver")) << v.remedy;
}

TEST(DriverLoaded, OneExpiredHelperIsReportedOnceForBothLibraries) {
  RankFacts f = healthy();
  const std::string why =
      "the GPU driver helper (NVML, cuInit, device query) did not finish within its deadline of "
      "3.2 s (40% of --timeout 8 s) and was killed after 3.2 s";
  f.gpu.driver.nvml_driver_version = Probed<std::string>::error(ProbeErrc::Timeout, why, "helper");
  f.gpu.driver.cuda_driver_version = Probed<int>::error(ProbeErrc::Timeout, why, "helper");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/helper-timeout");
  EXPECT_EQ(v.finding.params["library"], "libnvidia-ml.so.1 (NVML) and libcuda.so.1");
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_TRUE(v.summary.starts_with("libnvidia-ml.so.1 (NVML) and libcuda.so.1: ")) << v.summary;
  EXPECT_EQ(v.summary.find("40% of --timeout 8 s"), v.summary.rfind("40% of --timeout 8 s")) << v.summary;
}

TEST(DriverLoaded, SlowInitWithinTheDeadlinePassesWithTheTimeNoted) {
  RankFacts f = healthy();
  f.gpu.driver.cuda_init_seconds = 12.34;
  f.gpu.driver.nvml_init_seconds = 3.2;
  Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "driver.loaded/loaded");
  EXPECT_EQ(v.finding.params["init_time"], "12 s");
  EXPECT_TRUE(has(v.summary, "; cuInit took 12 s (slow, but within the helper's deadline)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "cuInit took 12 s (slow, but within the helper's deadline)")) << v.summary;
  EXPECT_DOUBLE_EQ(v.evidence["cuda_init_seconds"].get<double>(), 12.34);
  EXPECT_DOUBLE_EQ(v.evidence["nvml_init_seconds"].get<double>(), 3.2);
  f.gpu.driver.cuda_init_seconds = 0.05;  // fast: not worth a word
  v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_FALSE(has(v.summary, "cuInit")) << v.summary;
}

TEST(DriverLoaded, SlowInitWithPersistenceModeOffWarnsWithTheTime) {
  RankFacts f = healthy(2);
  (*f.gpu.driver.nvml_gpus.value())[0].persistence_mode = false;
  f.gpu.driver.cuda_init_seconds = 9.0;
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "driver.loaded/persistence-off-slow-init");
  EXPECT_EQ(v.finding.params["gpus"], "0");
  EXPECT_EQ(v.finding.params["init"], "9 s");
  EXPECT_TRUE(has(v.summary, "persistence mode is off on GPU 0")) << v.summary;
  EXPECT_TRUE(has(v.summary, "cuInit took 9 s")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-persistenced")) << v.remedy;
}

TEST(DriverLoaded, OnlyLibcudaMissingFails) {
  RankFacts f = healthy();
  f.gpu.driver.cuda_driver_version =
      Probed<int>::error(ProbeErrc::LibraryMissing, "libcuda.so.1: cannot open shared object file", "dlopen");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/library-missing");
  EXPECT_EQ(v.finding.params["library"], "libcuda.so.1");
  EXPECT_EQ(v.finding.params["kernel_module"], "550.54.15");
  EXPECT_TRUE(has(v.summary, "; the nvidia kernel module 550.54.15 is loaded")) << v.summary;
  EXPECT_TRUE(has(v.summary, "libcuda.so.1 cannot be loaded")) << v.summary;
  EXPECT_TRUE(has(v.summary, "kernel module 550.54.15 is loaded")) << v.summary;
}

TEST(DriverLoaded, StaleLibcudaReleaseFails) {
  RankFacts f = healthy();
  f.gpu.driver.loaded_libraries = {"/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"};
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "driver.loaded/stale-libcuda");
  EXPECT_EQ(v.finding.params["path"], "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05");
  EXPECT_EQ(v.finding.params["release"], "535.104.05");
  EXPECT_EQ(v.finding.params["driver"], "550.54.15");
  EXPECT_TRUE(has(v.summary, "libcuda.so.535.104.05 is release 535.104.05 but the driver is 550.54.15")) << v.summary;
}

TEST(DriverLoaded, TwoLibcudaFilesWarn) {
  RankFacts f = healthy();
  f.gpu.driver.loaded_libraries.push_back("/opt/other/libcuda.so.1");
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "driver.loaded/several-libcuda");
  EXPECT_EQ(v.finding.params["count"], 2);
  EXPECT_TRUE(has(v.summary, "2 different libcuda files were loaded")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/opt/other/libcuda.so.1")) << v.summary;
}

TEST(DriverLoaded, ForwardCompatLibcudaPassesWithEvidence) {
  RankFacts f = healthy();
  f.gpu.driver.loaded_libraries = {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
                                   "/usr/local/cuda-12.8/compat/libcuda.so.570.124.06"};
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "driver.loaded/loaded");
  EXPECT_TRUE(has(v.summary, "; forward-compatibility libcuda in use")) << v.summary;
  EXPECT_TRUE(has(v.summary, "forward-compatibility libcuda")) << v.summary;
  EXPECT_EQ(v.evidence["forward_compat_libcuda"][0], "/usr/local/cuda-12.8/compat/libcuda.so.570.124.06");
}

TEST(DriverLoaded, PersistenceModeOffWarns) {
  RankFacts f = healthy(2);
  (*f.gpu.driver.nvml_gpus.value())[1].persistence_mode = false;
  const Verdict v = judge_driver(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "driver.loaded/persistence-off");
  EXPECT_EQ(v.finding.params["gpus"], "1");
  EXPECT_TRUE(has(v.summary, "persistence mode is off on GPU 1")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-persistenced")) << v.remedy;
}

TEST(DriverLoaded, NotProbedIsUnknown) {
  const Verdict v = judge_driver(RankFacts{});
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "driver.loaded/not-read");
  EXPECT_EQ(v.finding.params["library"], "libnvidia-ml.so.1 (NVML) and libcuda.so.1");
  EXPECT_EQ(v.summary, "libnvidia-ml.so.1 (NVML) and libcuda.so.1 was not read: not probed");
}

TEST(DriverLoaded, ExplainHasTheThreeParts) {
  EXPECT_TRUE(has(std::string(kDriverLoaded.explain), "What it reads"));
  EXPECT_TRUE(has(std::string(kDriverLoaded.explain), "Failures"));
  EXPECT_TRUE(has(std::string(kDriverLoaded.explain), "Fix"));
}

}  // namespace
}  // namespace checks_driver_loaded_test
}  // namespace preflight
