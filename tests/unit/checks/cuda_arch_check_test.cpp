// SPDX-License-Identifier: MIT
// cuda.arch on hand-built facts: every status, the acceptance case of issue 3 (a CC 7.0 GPU with a
// CUDA 13 runtime), the framework's arch list, the driver branch, the image profile, and every finding
// of its table by code and parameters.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_cuda_arch_check_test {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CudaRuntime runtime(const std::string& version, const std::string& detail) {
  return gpu_fixture::cuda_runtime(version, "torch", detail);
}

constexpr auto& gpu = gpu_fixture::nvml_gpu;

FrameworkBuild torch(const std::string& cuda, std::vector<std::string> arch_list) {
  FrameworkBuild fw;
  fw.name = "torch";
  fw.version = "2.9.0+cu" + cuda.substr(0, 2) + cuda.substr(3);
  fw.cuda = cuda;
  fw.arch_list = std::move(arch_list);
  return fw;
}

RankFacts node_facts(std::vector<NvmlGpu> gpus, const std::string& driver = "580.95.05", int api = 13000) {
  RankFacts f;
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok(driver, "NVML");
  f.gpu.driver.cuda_driver_version = Probed<int>::ok(api, "cuDriverGetVersion");
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok(std::move(gpus), "NVML");
  return f;
}

Verdict judge(const RankFacts& f, Options o = {}, Profile p = Profile::Node) {
  return run_check(kCudaArch, CheckContext{f, o, p});
}

TEST(CudaArchCheck, VoltaWithCuda13Fails) {
  RankFacts f = node_facts({gpu(0, "Tesla V100-SXM2-16GB", 7, 0)});
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-too-old-for-cuda");
  EXPECT_EQ(v.finding.params["gpu"], "GPU 0 (Tesla V100-SXM2-16GB, CC 7.0)");
  EXPECT_EQ(v.finding.params["cuda"], "CUDA 13.0 (torch 2.9.0+cu130)");
  EXPECT_EQ(v.finding.params["range"], "7.5–12.1");
  EXPECT_EQ(v.finding.params["last_cuda"], "12.9");
  EXPECT_EQ(v.finding.params["min_cc"], "7.5");
  EXPECT_EQ(v.remedy,
            "Use a build for CUDA ≤ 12.9 (a CUDA 12.x build supports CC 5.0–12.1), or newer GPUs (CC ≥ 7.5).");
  EXPECT_TRUE(has(v.summary, "GPU 0 (Tesla V100-SXM2-16GB, CC 7.0) is not supported by CUDA 13.0")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CC 7.5–12.1")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "CUDA 12.x build")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "CC ≥ 7.5")) << v.remedy;
}

TEST(CudaArchCheck, GroupedGpusTakeThePlural) {
  std::vector<NvmlGpu> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(gpu(i, "Tesla V100-SXM2-16GB", 7, 0));
  RankFacts f = node_facts(std::move(gpus));
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-too-old-for-cuda");
  EXPECT_EQ(v.finding.params["gpu"], "GPUs 0–7 (Tesla V100-SXM2-16GB, CC 7.0)");
  EXPECT_EQ(v.finding.params["is"], "are");
  EXPECT_TRUE(has(v.summary, "GPUs 0–7 (Tesla V100-SXM2-16GB, CC 7.0) are not supported by CUDA 13.0")) << v.summary;
  EXPECT_FALSE(has(v.summary, ") is not supported")) << v.summary;
}

TEST(CudaArchCheck, SupportedGpuPasses) {
  RankFacts f = node_facts({gpu(0, "NVIDIA H100 80GB HBM3", 9, 0), gpu(1, "NVIDIA H100 80GB HBM3", 9, 0)});
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_50", "sm_80", "sm_86", "sm_90"})};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "CC 9.0")) << v.summary;
}

TEST(CudaArchCheck, ImageProfileUsesTargetGpus) {
  RankFacts f;  // no driver, no GPUs
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  Options o;
  o.target_driver = "580.95.05";
  o.target_gpus = {"7.0"};
  Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-too-old-for-cuda");
  EXPECT_EQ(v.finding.params["gpu"], "target GPU CC 7.0 (Volta)");
  EXPECT_TRUE(has(v.summary, "target GPU CC 7.0 (Volta) is not supported by CUDA 13.0")) << v.summary;
  o.target_gpus = {"9.0"};
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  o.target_gpus = {"nine"};
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/target-gpu-invalid");
  EXPECT_EQ(v.finding.params["gpu"], "target GPU 'nine' (not a compute capability such as 9.0)");
  EXPECT_EQ(v.summary,
            "target GPU 'nine' (not a compute capability such as 9.0): its compute capability could not be "
            "read");
  EXPECT_EQ(v.remedy, "Give --target-gpu as major.minor, e.g. 9.0.");
}

Options image(const std::string& driver, std::vector<std::string> gpus) {
  Options o;
  o.target_driver = driver;
  o.target_gpus = std::move(gpus);
  return o;
}

TEST(CudaArchCheck, BlackwellOnADriverBranchThatPredatesItFails) {
  RankFacts f;  // the image profile: no driver, no GPUs
  f.gpu.runtime.runtimes = {runtime("12.8", "torch 2.7.0+cu128")};
  for (const char* driver : {"550.54.15", "535.104.05", "560.35.03", "565"}) {
    for (const char* cc : {"10.0", "12.0"}) {
      const Verdict v = judge(f, image(driver, {cc}), Profile::Image);
      EXPECT_EQ(v.status, Status::Fail) << driver << " " << cc << ": " << v.summary;
      EXPECT_EQ(v.finding.code, "cuda.arch/driver-predates-gpu");
      EXPECT_EQ(v.finding.params["first_branch"], "R570");
      EXPECT_EQ(v.finding.params["cc"], cc);
      EXPECT_TRUE(has(v.summary, "target GPU CC " + std::string(cc) +
                                     " (Blackwell) is not supported by the target "
                                     "driver " +
                                     driver))
          << v.summary;
      EXPECT_TRUE(has(v.summary, "needs driver branch R570 (CUDA 12.8) or newer")) << v.summary;
      EXPECT_TRUE(has(v.remedy, "branch R570 or newer")) << v.remedy;
      EXPECT_TRUE(has(v.remedy,
                      "these GPUs (and judge the image with that --target-driver); Blackwell needs the open "
                      "GPU kernel modules."))
          << v.remedy;
    }
  }
  // 10.3 and 12.1 came with CUDA 12.9: R570 is still too old, R575 is the first.
  for (const char* cc : {"10.3", "12.1"}) {
    const Verdict v = judge(f, image("570.124.06", {cc}), Profile::Image);
    EXPECT_EQ(v.status, Status::Fail) << cc << ": " << v.summary;
    ASSERT_FALSE(v.findings.empty());
    EXPECT_EQ(v.findings[0].code, "cuda.arch/driver-predates-gpu");
    EXPECT_EQ(v.findings[0].params["first_cuda_version"], "12.9");
    EXPECT_TRUE(has(v.summary, "needs driver branch R575 (CUDA 12.9)")) << v.summary;
  }
  // Hopper needs R520: R515 predates it.
  Verdict v = judge(f, image("515.105.01", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/driver-predates-gpu");
  EXPECT_FALSE(has(v.summary + v.remedy, "Blackwell needs")) << v.remedy;
  EXPECT_TRUE(has(v.summary, "Hopper CC 9.0 needs driver branch R520 (CUDA 11.8)")) << v.summary;
  // From the first branch on, the driver side passes.
  v = judge(f, image("570.124.06", {"10.0", "12.0", "9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  f.gpu.runtime.runtimes = {runtime("12.9", "torch 2.8.0+cu129")};
  v = judge(f, image("575.57.08", {"10.3", "12.1"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(CudaArchCheck, NodeGpuNewerThanItsDriverBranchFails) {
  RankFacts f = node_facts({gpu(0, "NVIDIA B200", 10, 0)}, "550.54.15", 12040);
  f.gpu.runtime.runtimes = {runtime("12.8", "torch 2.7.0+cu128")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/driver-predates-gpu");
  EXPECT_EQ(v.finding.params["driver"], "driver 550.54.15 (CUDA 12.4)");
  EXPECT_FALSE(has(v.remedy, "--target-driver")) << v.remedy;
  EXPECT_TRUE(has(v.summary, "GPU 0 (NVIDIA B200, CC 10.0) is not supported by driver 550.54.15")) << v.summary;
  EXPECT_TRUE(has(v.summary, "R570")) << v.summary;
}

TEST(CudaArchCheck, TargetDriverNewerThanTheMatrixIsUnknown) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  Verdict v = judge(f, image("700", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/driver-newer-than-matrix");
  EXPECT_EQ(v.finding.params["driver"], "the target driver 700");
  EXPECT_TRUE(has(v.summary, "driver 700 is newer than this matrix (newest R620): update the matrix or pass --matrix"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--matrix")) << v.remedy;
  // The newest branch itself is known.
  v = judge(f, image("620.70.06", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  // A dropped architecture stays a FAIL whatever else is unknown.
  v = judge(f, image("700", {"7.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_EQ(v.findings.size(), 3u);
  EXPECT_EQ(v.findings[0].code, "cuda.arch/dropped-by-driver");
  EXPECT_EQ(v.findings[1].code, "cuda.arch/gpu-too-old-for-cuda");
  EXPECT_EQ(v.findings[2].code, "cuda.arch/driver-newer-than-matrix");
  // A target GPU's label names its architecture once: "target GPU CC 3.0 (Kepler) is not ...".
  v = judge(f, image("535.104.05", {"3.0"}), Profile::Image);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].code, "cuda.arch/dropped-by-driver");
  EXPECT_TRUE(has(v.summary, "target GPU CC 3.0 (Kepler) is not supported by the target driver")) << v.summary;
  EXPECT_FALSE(has(v.summary, "(Kepler) (Kepler)")) << v.summary;
}

TEST(CudaArchCheck, TargetGpuTheMatrixDoesNotListIsUnknown) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  const Verdict v = judge(f, image("580.95.05", {"9.9"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-not-in-matrix");
  EXPECT_EQ(v.finding.params["cc"], "9.9");
  EXPECT_TRUE(has(v.remedy, "a gpu_arch.tsv row for CC 9.9.")) << v.remedy;
  EXPECT_TRUE(has(v.summary, "not in matrix/gpu_arch.tsv")) << v.summary;
}

TEST(CudaArchCheck, ImageWithoutTargetDriverIsUnknownNotPass) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("12.8", "torch 2.7.0+cu128")};
  const Verdict v = judge(f, image("", {"10.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/no-target-driver");
  EXPECT_EQ(v.finding.params["why"], "no --target-driver given (the image profile judges against the fleet's driver)");
  EXPECT_TRUE(has(v.summary, "--target-driver")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--target-driver")) << v.remedy;
}

TEST(CudaArchCheck, CpuOnlyImageSkips) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  Options o = image("580.95.05", {});
  o.target_cpu_only = true;
  const Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/cpu-only-image");
  EXPECT_TRUE(has(v.summary, "--target-gpu none")) << v.summary;
}

TEST(CudaArchCheck, MissingGpusAreUnknownNeverPass) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/no-gpu-list");
  EXPECT_EQ(v.cause, "driver.loaded");  // no driver at all: driver.loaded says why
  EXPECT_EQ(v.summary, "no GPU compute capability to judge: no GPU list (NVML: not probed; CUDA: not probed)");
  Options o;
  o.target_driver = "535.104.05";
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/no-target-gpu");
  EXPECT_EQ(v.cause, "");
  EXPECT_TRUE(has(v.remedy, "--target-gpu")) << v.remedy;
  f = node_facts({});
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "cuda.arch/no-gpu");
  f = node_facts({gpu(0, "NVIDIA H100", 0, 0)});
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "cuda.arch/cc-unreadable");
  EXPECT_EQ(v.finding.params["gpu"], "GPU 0 (NVIDIA H100, CC unknown)");
  EXPECT_EQ(v.summary, "GPU 0 (NVIDIA H100, CC unknown): its compute capability could not be read");
  EXPECT_EQ(v.remedy, "Check the GPU with nvidia-smi; rerun.");
}

TEST(CudaArchCheck, FrameworkWithoutKernelsForTheGpuFails) {
  RankFacts f = node_facts({gpu(0, "Tesla V100-SXM2-16GB", 7, 0)}, "550.54.15", 12040);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_75", "sm_80", "sm_90"})};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-no-kernels");
  EXPECT_EQ(v.finding.params["framework"], "torch 2.9.0+cu124");
  EXPECT_EQ(v.finding.params["sm"], "sm_70");
  EXPECT_EQ(v.finding.params["compute"], "compute_70");
  EXPECT_EQ(v.summary,
            "torch 2.9.0+cu124 has no kernels for GPU 0 (Tesla V100-SXM2-16GB, CC 7.0): arch list sm_75 "
            "sm_80 sm_90 has no sm_70 SASS and no PTX ≤ compute_70 (cudaErrorNoKernelImageForDevice, 209)");
  EXPECT_EQ(v.remedy,
            "Use a build compiled for sm_70 (e.g. a CUDA 12.x wheel: CUDA 13 builds start at sm_75), or "
            "build from source with TORCH_CUDA_ARCH_LIST=\"7.0\".");
}

TEST(CudaArchCheck, SameMajorSassServesLaterMinorsAndPtxOnlyWarns) {
  RankFacts f = node_facts({gpu(0, "NVIDIA A10", 8, 6)}, "550.54.15", 12040);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_80", "sm_90"})};
  EXPECT_EQ(judge(f).status, Status::Pass);

  f = node_facts({gpu(0, "NVIDIA H100", 9, 0)}, "550.54.15", 12040);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_80", "compute_80"})};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-ptx-only");
  EXPECT_EQ(v.finding.params["sm"], "sm_90");
  EXPECT_EQ(v.finding.params["arch_list"], "sm_80 compute_80");
  EXPECT_EQ(v.remedy, "Use a build compiled for sm_90 (e.g. TORCH_CUDA_ARCH_LIST=\"9.0\" for a source build).");
  EXPECT_TRUE(has(v.summary, "only PTX")) << v.summary;
}

TEST(CudaArchCheck, GpuNewerThanTheRuntimeKnowsWarns) {
  RankFacts f = node_facts({gpu(0, "NVIDIA B200", 10, 0)}, "570.124.06", 12080);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-newer-than-cuda");
  EXPECT_EQ(v.finding.params["range"], "5.0–9.0");
  EXPECT_EQ(v.finding.params["needed"], "CUDA ≥ 12.8");
  EXPECT_EQ(v.remedy, "Use a build for CUDA ≥ 12.8 (the first CUDA for Blackwell).");
  EXPECT_TRUE(has(v.summary, "CC 5.0–9.0")) << v.summary;
}

// A cu124 torch on Blackwell: its own kernels decide, never the PTX assumption. The PyPI wheels ship
// SASS only (FAIL: no kernel image); a build with PTX runs it JIT-compiled (WARN); a library whose
// fatbins could not be read is UNKNOWN.
TEST(CudaArchCheck, AFrameworkOlderThanTheGpuIsJudgedByItsOwnKernels) {
  RankFacts f = node_facts({gpu(0, "NVIDIA B200", 10, 0)}, "570.124.06", 12080);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"})};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-no-kernels");
  EXPECT_FALSE(has(v.summary, "only kernels shipped as PTX")) << v.summary;

  f.gpu.runtime.frameworks = {torch("12.4", {"sm_80", "sm_90", "compute_90"})};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-ptx-only");

  f.gpu.runtime.frameworks = {torch("12.4", {})};
  f.gpu.runtime.frameworks[0].arch_source = "not read: libtorch_cuda.so: no .nv_fatbin or __nv_relfatbin section";
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-arch-unread");
  EXPECT_TRUE(has(v.summary, "could not be read (not read: libtorch_cuda.so: no .nv_fatbin")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "sm_100 SASS")) << v.remedy;
}

TEST(CudaArchCheck, DriverBranchThatDroppedTheArchitectureFails) {
  RankFacts f = node_facts({gpu(0, "Tesla V100-SXM2-16GB", 7, 0)}, "590.44.01", 13010);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/dropped-by-driver");
  EXPECT_EQ(v.finding.params["arch"], "Volta");
  EXPECT_EQ(v.finding.params["last_branch"], 580);
  EXPECT_EQ(v.remedy, "Use a driver of branch R580 or older with a CUDA 12.x build, or newer GPUs.");
  EXPECT_TRUE(has(v.summary, "R580")) << v.summary;
  EXPECT_TRUE(has(v.summary, "590.44.01")) << v.summary;
  EXPECT_TRUE(has(v.summary, "(Tesla V100-SXM2-16GB, CC 7.0) (Volta) is not supported"))
      << v.summary;  // a live GPU's label
}

TEST(CudaArchCheck, GpuBelowEveryCudaInTheMatrixFails) {
  RankFacts f = node_facts({gpu(0, "Tesla M2090", 2, 0)});
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/gpu-too-old-for-any-cuda");
  EXPECT_EQ(v.finding.params["cc"], "2.0");
  EXPECT_EQ(v.remedy, "Use newer GPUs (CC ≥ 7.5): no CUDA in the matrix supports CC 2.0.");
}

TEST(CudaArchCheck, RuntimeOutsideTheTableIsUnknown) {
  RankFacts f = node_facts({gpu(0, "NVIDIA H100", 9, 0)});
  f.gpu.runtime.runtimes = {runtime("9.2", "old toolkit")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "cuda.arch/cuda-not-in-table");
  EXPECT_EQ(v.finding.params["cuda"], "CUDA 9.2 (old toolkit)");
  EXPECT_EQ(v.summary,
            "CUDA 9.2 (old toolkit) is not in the compute-capability table: cannot judge GPU 0 (NVIDIA "
            "H100, CC 9.0)");
}

TEST(CudaArchCheck, NothingToJudgeAgainstSkips) {
  RankFacts f = node_facts({gpu(0, "NVIDIA H100", 9, 0)});
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/nothing-to-judge");
}

TEST(CudaArchCheck, ArchListMatching) {
  const Version cc86 = Version::of({8, 6});
  EXPECT_EQ(match_arch({"sm_80"}, cc86), ArchMatch::Sass);
  EXPECT_EQ(match_arch({"sm_90"}, cc86), ArchMatch::None);
  EXPECT_EQ(match_arch({"sm_86a"}, cc86), ArchMatch::Sass);
  EXPECT_EQ(match_arch({"sm_80a"}, cc86), ArchMatch::None);
  EXPECT_EQ(match_arch({"compute_75"}, cc86), ArchMatch::PtxOnly);
  EXPECT_EQ(match_arch({"8.0"}, cc86), ArchMatch::Sass);
  EXPECT_EQ(match_arch({"7.5+PTX"}, cc86), ArchMatch::PtxOnly);
  EXPECT_EQ(match_arch({"sm_100f"}, Version::of({10, 3})), ArchMatch::Sass);
  EXPECT_EQ(match_arch({"bogus"}, cc86), ArchMatch::Unreadable);
}

TEST(CudaArchCheck, ExplainNamesReadsFailuresAndFix) {
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN", "SKIP"}) {
    EXPECT_NE(kCudaArch.explain.find(part), std::string_view::npos) << part;
  }
}

}  // namespace
}  // namespace checks_cuda_arch_check_test
}  // namespace preflight
