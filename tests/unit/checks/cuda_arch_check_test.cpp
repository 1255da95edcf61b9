// SPDX-License-Identifier: MIT
// cuda.arch on hand-built facts: every status, the acceptance case of issue 3 (a CC 7.0 GPU with a
// CUDA 13 runtime), the framework's arch list, the driver branch, and the image profile.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "gpu_facts_fixture.hpp"
#include "checks/cuda_compat.hpp"

namespace preflight {
extern const CheckSpec kCudaArch;
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
  EXPECT_TRUE(has(v.summary, "target GPU CC 7.0 (Volta) is not supported by CUDA 13.0")) << v.summary;
  o.target_gpus = {"9.0"};
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  o.target_gpus = {"nine"};
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
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
      EXPECT_TRUE(has(v.summary, "target GPU CC " + std::string(cc) + " (Blackwell) is not supported by the target "
                                 "driver " + driver))
          << v.summary;
      EXPECT_TRUE(has(v.summary, "needs driver branch R570 (CUDA 12.8) or newer")) << v.summary;
      EXPECT_TRUE(has(v.remedy, "branch R570 or newer")) << v.remedy;
    }
  }
  // 10.3 and 12.1 came with CUDA 12.9: R570 is still too old, R575 is the first.
  for (const char* cc : {"10.3", "12.1"}) {
    const Verdict v = judge(f, image("570.124.06", {cc}), Profile::Image);
    EXPECT_EQ(v.status, Status::Fail) << cc << ": " << v.summary;
    EXPECT_TRUE(has(v.summary, "needs driver branch R575 (CUDA 12.9)")) << v.summary;
  }
  // Hopper needs R520: R515 predates it.
  Verdict v = judge(f, image("515.105.01", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
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
  EXPECT_TRUE(has(v.summary, "GPU 0 (NVIDIA B200, CC 10.0) is not supported by driver 550.54.15")) << v.summary;
  EXPECT_TRUE(has(v.summary, "R570")) << v.summary;
}

TEST(CudaArchCheck, TargetDriverNewerThanTheMatrixIsUnknown) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  Verdict v = judge(f, image("700", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "driver 700 is newer than this matrix (newest R620): update the matrix or pass --matrix"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--matrix")) << v.remedy;
  // The newest branch itself is known.
  v = judge(f, image("620.70.06", {"9.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  // A dropped architecture stays a FAIL whatever else is unknown.
  v = judge(f, image("700", {"7.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
}

TEST(CudaArchCheck, TargetGpuTheMatrixDoesNotListIsUnknown) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("13.0", "torch 2.9.0+cu130")};
  const Verdict v = judge(f, image("580.95.05", {"9.9"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "not in matrix/gpu_arch.tsv")) << v.summary;
}

TEST(CudaArchCheck, ImageWithoutTargetDriverIsUnknownNotPass) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("12.8", "torch 2.7.0+cu128")};
  const Verdict v = judge(f, image("", {"10.0"}), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
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
  EXPECT_TRUE(has(v.summary, "--target-gpu none")) << v.summary;
}

TEST(CudaArchCheck, MissingGpusAreUnknownNeverPass) {
  RankFacts f;
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  Options o;
  o.target_driver = "535.104.05";
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--target-gpu")) << v.remedy;
  f = node_facts({});
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  EXPECT_EQ(judge(f).status, Status::Unknown);
  f = node_facts({gpu(0, "NVIDIA H100", 0, 0)});
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  EXPECT_EQ(judge(f).status, Status::Unknown);
}

TEST(CudaArchCheck, FrameworkWithoutKernelsForTheGpuFails) {
  RankFacts f = node_facts({gpu(0, "Tesla V100-SXM2-16GB", 7, 0)}, "550.54.15", 12040);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  f.gpu.runtime.frameworks = {torch("12.4", {"sm_75", "sm_80", "sm_90"})};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "no sm_70 SASS")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "sm_70")) << v.remedy;
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
  EXPECT_TRUE(has(v.summary, "only PTX")) << v.summary;
}

TEST(CudaArchCheck, GpuNewerThanTheRuntimeKnowsWarns) {
  RankFacts f = node_facts({gpu(0, "NVIDIA B200", 10, 0)}, "570.124.06", 12080);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "CC 5.0–9.0")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "CUDA ≥ 12.8")) << v.remedy;
}

TEST(CudaArchCheck, DriverBranchThatDroppedTheArchitectureFails) {
  RankFacts f = node_facts({gpu(0, "Tesla V100-SXM2-16GB", 7, 0)}, "590.44.01", 13010);
  f.gpu.runtime.runtimes = {runtime("12.4", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "R580")) << v.summary;
  EXPECT_TRUE(has(v.summary, "590.44.01")) << v.summary;
}

TEST(CudaArchCheck, RuntimeOutsideTheTableIsUnknown) {
  RankFacts f = node_facts({gpu(0, "NVIDIA H100", 9, 0)});
  f.gpu.runtime.runtimes = {runtime("9.2", "old toolkit")};
  EXPECT_EQ(judge(f).status, Status::Unknown);
}

TEST(CudaArchCheck, NothingToJudgeAgainstSkips) {
  RankFacts f = node_facts({gpu(0, "NVIDIA H100", 9, 0)});
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
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
}  // namespace preflight
