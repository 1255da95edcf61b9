// SPDX-License-Identifier: MIT
// cuda.runtime on hand-built facts: every status, the acceptance cases of issue 3 (driver
// 535.104.05 vs CUDA 12.4 and 13.0 builds) in the node and image profiles, forward compatibility, and
// every finding of its table by code and parameters.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_cuda_runtime_check_test {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using gpu_fixture::cuda_runtime;

constexpr auto& gpu = gpu_fixture::nvml_gpu;

RankFacts node_facts(const std::string& driver = "535.104.05", int cuda_api = 12020,
                     std::vector<NvmlGpu> gpus = {gpu(0, "NVIDIA H100 80GB HBM3", 9, 0)}) {
  RankFacts f;
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok(driver, "nvmlSystemGetDriverVersion");
  f.gpu.driver.kernel_module_version = Probed<std::string>::ok(driver, "/proc/driver/nvidia/version");
  f.gpu.driver.cuda_driver_version = Probed<int>::ok(cuda_api, "cuDriverGetVersion");
  f.gpu.driver.loaded_libraries = {"/usr/lib/x86_64-linux-gnu/libcuda.so." + driver};
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok(std::move(gpus), "NVML");
  f.gpu.runtime.searched = {"/venv/lib/python3.11/site-packages", "/usr/local/cuda"};
  return f;
}

Verdict judge(const RankFacts& f, Options o = {}, Profile p = Profile::Node) {
  return run_check(kCudaRuntime, CheckContext{f, o, p});
}

Options image_options(const std::string& driver = "535.104.05") {
  Options o;
  o.target_driver = driver;
  o.target_gpus = {"9.0"};
  return o;
}

TEST(CudaRuntimeCheck, RuntimeAtOrBelowTheDriversCudaPasses) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121"),
                            cuda_runtime("12.2.140", "toolkit", "", "/usr/local/cuda/version.json")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "12.1")) << v.summary;
  EXPECT_TRUE(has(v.summary, "driver 535.104.05 (CUDA 12.2)")) << v.summary;
  EXPECT_EQ(v.evidence["runtimes"].size(), 2u);
}

TEST(CudaRuntimeCheck, Cuda124OnDriver535WarnsMinorVersionCompatibility) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat");
  EXPECT_EQ(v.finding.params["what"],
            "CUDA 12.4 (torch 2.5.1+cu124 at /venv/lib/python3.11/site-packages/torch/version.py)");
  EXPECT_EQ(v.finding.params["driver"], "driver 535.104.05 (CUDA 12.2)");
  EXPECT_EQ(v.finding.params["minor_min"], "525.60.13");
  EXPECT_EQ(v.finding.params["min_driver"], "550.54.14");
  EXPECT_TRUE(has(v.summary, "CUDA 12.4")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA 12.2")) << v.summary;
  EXPECT_TRUE(has(v.summary, "minor-version compatibility")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "PTX JIT")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "525.60.13")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "driver ≥ 550.54.14")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "CUDA ≤ 12.2")) << v.remedy;
  EXPECT_EQ(v.evidence["runtimes"][0]["rule"], "minor-version");
}

TEST(CudaRuntimeCheck, Cuda130OnDriver535FailsNamingBothFixes) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "torch", "torch 2.9.0+cu130")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/too-new");
  EXPECT_EQ(v.finding.params["min_driver"], "580.65.06");
  EXPECT_EQ(v.finding.params["driver_cuda"], "12.2");
  EXPECT_EQ(v.finding.params["cuda"], "13.0");
  EXPECT_TRUE(has(v.summary, "CUDA 13.0")) << v.summary;
  EXPECT_TRUE(has(v.summary, "needs driver ≥ 580.65.06")) << v.summary;
  EXPECT_TRUE(has(v.summary, "supports CUDA ≤ 12.2")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "driver ≥ 580.65.06")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "a framework build for CUDA ≤ 12.2")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "CUDA 12.x build")) << v.remedy;
  EXPECT_EQ(v.evidence["runtimes"][0]["min_driver"], "580.65.06");
}

TEST(CudaRuntimeCheck, ImageProfileJudgesAgainstTargetDriverWithoutDriverFacts) {
  RankFacts f;  // no driver facts at all
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  Verdict v = judge(f, image_options(), Profile::Image);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat");
  EXPECT_EQ(v.finding.params["driver"], "the target driver 535.104.05 (CUDA 12.2)");
  EXPECT_TRUE(has(v.summary, "12.4") && has(v.summary, "12.2")) << v.summary;
  EXPECT_TRUE(has(v.summary, "target driver 535.104.05")) << v.summary;

  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "torch", "torch 2.9.0+cu130")};
  v = judge(f, image_options(), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/too-new");
  EXPECT_TRUE(has(v.summary, "580.65.06")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "driver ≥ 580.65.06")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "CUDA ≤ 12.2")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "CUDA 12.x build")) << v.remedy;

  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121")};
  EXPECT_EQ(judge(f, image_options(), Profile::Image).status, Status::Pass);
}

TEST(CudaRuntimeCheck, ImageProfileWithoutOrWithBadTargetDriverIsUnknown) {
  RankFacts f;
  f.gpu.runtime.runtimes = {cuda_runtime("12.4")};
  Verdict v = judge(f, image_options(""), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/target-driver-unknown");
  EXPECT_EQ(v.finding.params["why"], "no --target-driver given (the image profile judges against the fleet's driver)");
  EXPECT_TRUE(has(v.summary, "--target-driver")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--target-driver")) << v.remedy;
  v = judge(f, image_options("five-three-five"), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/target-driver-unknown");
  EXPECT_TRUE(has(v.summary, "five-three-five")) << v.summary;
}

TEST(CudaRuntimeCheck, TargetDriverNewerThanTheMatrixIsUnknownNeverExtrapolated) {
  RankFacts f;
  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "torch", "torch 2.9.0+cu130")};
  for (const char* driver : {"700", "621", "621.10.01", "999.1"}) {
    const Verdict v = judge(f, image_options(driver), Profile::Image);
    EXPECT_EQ(v.status, Status::Unknown) << driver << ": " << v.summary;
    EXPECT_EQ(v.finding.code, "cuda.runtime/driver-newer-than-matrix");
    EXPECT_EQ(v.finding.params["what"],
              "CUDA 13.0 (torch 2.9.0+cu130 at /venv/lib/python3.11/site-packages/torch/version.py)");
    EXPECT_TRUE(has(v.summary, "driver " + std::string(driver) +
                                   " is newer than this matrix (newest R620): update the "
                                   "matrix or pass --matrix"))
        << v.summary;
    EXPECT_FALSE(has(v.summary, "13.5")) << v.summary;  // the newest branch's CUDA is not carried over
    EXPECT_TRUE(has(v.remedy, "--matrix")) << v.remedy;
  }
  // A driver of the newest branch itself is known.
  const Verdict v = judge(f, image_options("620.70.06"), Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "the target driver 620.70.06 (CUDA 13.5)")) << v.summary;
}

TEST(CudaRuntimeCheck, NodeDriverNewerThanTheMatrixWithoutCudaApiIsUnknown) {
  RankFacts f = node_facts("700.10.01", 13090);
  f.gpu.driver.cuda_driver_version = Probed<int>::error(ProbeErrc::Timeout, "did not finish");
  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "torch", "torch 2.9.0+cu130")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/driver-newer-than-matrix");
  EXPECT_TRUE(has(v.summary, "newer than this matrix (newest R620)")) << v.summary;
  // The driver's own cuDriverGetVersion is the truth: no matrix needed.
  f = node_facts("700.10.01", 13090);
  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "torch", "torch 2.9.0+cu130")};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(CudaRuntimeCheck, NoDriverInNodeProfileIsUnknownNeverPass) {
  RankFacts f;  // nothing probed
  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/driver-unknown");
  EXPECT_EQ(v.finding.params["why"], "no driver to judge against (see driver.loaded)");
  EXPECT_TRUE(has(v.summary, "driver.loaded")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA 12.1")) << v.summary;

  f.gpu.driver.nvml_driver_version =
      Probed<std::string>::error(ProbeErrc::LibraryMissing, "libnvidia-ml.so.1: cannot open shared object file");
  f.gpu.driver.cuda_driver_version =
      Probed<int>::error(ProbeErrc::LibraryMissing, "libcuda.so.1: cannot open shared object file");
  v = judge(f, {}, Profile::Job);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  // It follows from driver.loaded, which says why; the loader's error is in the evidence.
  EXPECT_EQ(v.cause, "driver.loaded");
  EXPECT_TRUE(has(v.evidence.dump(), "libcuda.so.1")) << v.evidence.dump();
}

TEST(CudaRuntimeCheck, NoRuntimeFoundWarnsNamingWhereItLooked) {
  RankFacts f = node_facts();
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/no-runtime");
  EXPECT_EQ(v.finding.params["searched"], "/venv/lib/python3.11/site-packages, /usr/local/cuda");
  EXPECT_TRUE(has(v.summary, "no CUDA runtime found where the job will look")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/venv/lib/python3.11/site-packages")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--site-packages")) << v.remedy;
}

// A --sysroot tree that holds none of the places searched (an hwloc topology capture: /sys and /proc
// only) cannot tell whether the job has a runtime: UNKNOWN, never the WARN of a node without one.
TEST(CudaRuntimeCheck, NoPlaceSearchedExistsIsUnknownNotNoRuntime) {
  RankFacts f = node_facts();
  f.gpu.runtime.absent = f.gpu.runtime.searched;
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/nowhere-to-search");
  EXPECT_EQ(v.finding.params["searched"], "/venv/lib/python3.11/site-packages, /usr/local/cuda");
  EXPECT_EQ(v.evidence["absent"], nlohmann::json(f.gpu.runtime.searched));

  // One place that exists and holds no runtime: the node has none where the job looks.
  f.gpu.runtime.absent.pop_back();
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/no-runtime");
}

TEST(CudaRuntimeCheck, NoRuntimeFoundWithUnreadableFilesIsUnknown) {
  RankFacts f = node_facts();
  f.gpu.runtime.problems = {"/venv/lib/python3.11/site-packages/torch/version.py: permission denied"};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/search-incomplete");
  EXPECT_EQ(v.finding.params["problems"], "/venv/lib/python3.11/site-packages/torch/version.py: permission denied");
  EXPECT_TRUE(has(v.summary, "permission denied")) << v.summary;
}

TEST(CudaRuntimeCheck, RuntimeVersionNotInMatrixOrNotAVersionIsUnknown) {
  RankFacts f = node_facts("580.95.05", 13000);
  f.gpu.runtime.runtimes = {cuda_runtime("14.1", "wheel", "nvidia-cuda-runtime 14.1.2")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/not-in-matrix");
  EXPECT_EQ(v.finding.params["what"],
            "CUDA 14.1 (nvidia-cuda-runtime 14.1.2 at /venv/lib/python3.11/site-packages/torch/version.py)");
  EXPECT_TRUE(has(v.summary, "14.1") && has(v.summary, "not in the compatibility matrix")) << v.summary;

  f.gpu.runtime.runtimes = {cuda_runtime("12.x", "container", "CUDA_VERSION", "")};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/version-unreadable");
  EXPECT_EQ(v.finding.params["version"], "12.x");
  EXPECT_EQ(v.finding.params["kind"], "container");
  EXPECT_EQ(v.summary, "the CUDA runtime version '12.x' read from  (container) is not a version");
  EXPECT_TRUE(has(v.summary, "'12.x'")) << v.summary;

  // One the job does not load is noted, not judged.
  f.gpu.runtime.runtimes[0].loaded_by.clear();
  f.gpu.runtime.runtimes.push_back(cuda_runtime("12.1", "torch", "torch 2.5.1+cu121"));
  v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "the CUDA runtime version '12.x' read from  (container) is not a version")) << v.summary;
}

TEST(CudaRuntimeCheck, SameMajorBelowTheFamilyMinimumFails) {
  RankFacts f = node_facts("450.51.06", 11000);
  f.gpu.runtime.runtimes = {cuda_runtime("11.2", "toolkit", "", "/usr/local/cuda/version.json")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/too-new");
  EXPECT_FALSE(has(v.remedy, "minor-version compatibility")) << v.remedy;  // 450.51.06 is below 11.x's 450.80.02
  EXPECT_TRUE(has(v.summary, "450.51.06")) << v.summary;
}

TEST(CudaRuntimeCheck, UnreadableDriverVersionWhereMinorCompatDecidesIsUnknown) {
  RankFacts f = node_facts();
  f.gpu.driver.nvml_driver_version = Probed<std::string>::error(ProbeErrc::ApiError, "NVML_ERROR_UNKNOWN");
  f.gpu.driver.kernel_module_version = Probed<std::string>::error(ProbeErrc::NotFound, "/proc/driver/nvidia/version");
  f.gpu.runtime.runtimes = {cuda_runtime("12.4")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat-driver-unknown");
  EXPECT_EQ(v.finding.params["minor_min"], "525.60.13");
  EXPECT_EQ(v.finding.params["major"], 12);
  EXPECT_TRUE(has(v.summary, "525.60.13")) << v.summary;
}

TEST(CudaRuntimeCheck, MinorCompatWithoutSassForTheGpuFails) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  FrameworkBuild fw;
  fw.name = "torch";
  fw.version = "2.5.1+cu124";
  fw.cuda = "12.4";
  fw.arch_list = {"sm_80", "compute_80"};
  f.gpu.runtime.frameworks = {fw};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat-no-sass");
  EXPECT_EQ(v.finding.params["sm"], "sm_90");
  EXPECT_EQ(v.finding.params["gpu"], "GPU 0 (NVIDIA H100 80GB HBM3, CC 9.0)");
  EXPECT_EQ(v.finding.params["arch_list"], "sm_80 compute_80");
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[1].code, "cuda.runtime/minor-compat");
  EXPECT_TRUE(has(v.summary, "sm_90") && has(v.summary, "PTX JIT")) << v.summary;

  f.gpu.runtime.frameworks[0].arch_list = {"sm_80", "sm_90"};
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat");
}

TEST(CudaRuntimeCheck, ForwardCompatOnDatacenterGpuPasses) {
  RankFacts f = node_facts("535.104.05", 12040);
  f.gpu.driver.loaded_libraries = {"/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"};
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "forward compatibility")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/usr/local/cuda-12.4/compat/libcuda.so.550.54.14")) << v.summary;
  EXPECT_EQ(v.evidence["driver"]["driver_cuda"], "12.2");
}

TEST(CudaRuntimeCheck, ForwardCompatOnGeForceDoesNotApply) {
  RankFacts f = node_facts("535.104.05", 12040, {gpu(0, "NVIDIA GeForce RTX 4090", 8, 9)});
  f.gpu.driver.loaded_libraries = {"/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"};
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // minor-version compatibility, not forward
  EXPECT_EQ(v.finding.code, "cuda.runtime/minor-compat");
  EXPECT_EQ(v.finding.params["consumer_gpu"], "GPU 0 (NVIDIA GeForce RTX 4090, CC 8.9)");
  EXPECT_TRUE(has(v.summary, "GPU 0 (NVIDIA GeForce RTX 4090, CC 8.9) is not a datacenter GPU")) << v.summary;
  EXPECT_TRUE(has(v.summary, "804")) << v.summary;

  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({gpu(0, "NVIDIA RTX A6000", 8, 6)}, "NVML");
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // only selected NGC-Ready RTX SKUs
  EXPECT_EQ(v.finding.code, "cuda.runtime/forward-compat-rtx");
  EXPECT_EQ(v.finding.params["gpu"], "GPU 0 (NVIDIA RTX A6000, CC 8.6)");
  EXPECT_EQ(v.finding.params["compat_lib"], "/usr/local/cuda-12.4/compat/libcuda.so.550.54.14");
  EXPECT_EQ(v.finding.params["compat_cuda"], "12.4");
  EXPECT_TRUE(has(v.summary, "NGC-Ready")) << v.summary;
}

TEST(CudaRuntimeCheck, ForwardCompatOnUnsupportedKernelBranchWarns) {
  RankFacts f = node_facts("545.23.08", 12040);
  f.gpu.driver.loaded_libraries = {"/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"};
  f.gpu.runtime.runtimes = {cuda_runtime("12.4")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/forward-compat-branch");
  EXPECT_EQ(v.finding.params["branch"], 545);
  EXPECT_TRUE(has(v.summary, "R545")) << v.summary;
}

TEST(CudaRuntimeCheck, ForwardCompatWithoutTheGpuListWarns) {
  RankFacts f = node_facts("535.104.05", 12040);
  f.gpu.driver.loaded_libraries = {"/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"};
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::ApiError, "NVML_ERROR_UNKNOWN", "NVML");
  f.gpu.runtime.runtimes = {cuda_runtime("12.4", "torch", "torch 2.5.1+cu124")};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/forward-compat-gpus-unknown");
  EXPECT_EQ(v.finding.params["gpus_why"], "no GPU list (NVML: NVML: NVML_ERROR_UNKNOWN; CUDA: not probed)");
  EXPECT_TRUE(has(v.summary, "which works on datacenter GPUs only; the GPUs could not be read")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "drop the compat directory")) << v.remedy;
}

TEST(CudaRuntimeCheck, InterpreterThatCouldNotBeAskedIsUnknown) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121")};
  PythonInterpreter py;
  py.exe = "/opt/env/bin/python3";
  py.error = "killed after its deadline of 5.0 s";
  f.gpu.runtime.python = py;
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/python-unreadable");
  EXPECT_EQ(v.finding.params["python"], "/opt/env/bin/python3");
  EXPECT_EQ(v.summary,
            "the job's interpreter could not be asked where it imports from: killed after its deadline of 5.0 s");
  EXPECT_EQ(v.remedy,
            "Check that /opt/env/bin/python3 runs (/opt/env/bin/python3 -c 'import sys; print(sys.path)'), "
            "or name the environment with --site-packages DIR.");
}

FrameworkBuild cpu_torch() {
  FrameworkBuild fw;
  fw.name = "torch";
  fw.version = "2.5.1+cpu";
  fw.path = "/venv/lib/python3.11/site-packages/torch/version.py";
  fw.build = "cpu";
  return fw;
}

TEST(CudaRuntimeCheck, CpuOnlyTorchWhereTheJobHasGpusFails) {
  RankFacts f = node_facts();
  f.gpu.runtime.frameworks = {cpu_torch()};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/cpu-torch");
  EXPECT_EQ(v.finding.params["torch"], "2.5.1+cpu");
  EXPECT_EQ(v.finding.params["gpus"], "1 GPU (NVML)");
  EXPECT_FALSE(has(v.remedy, "--target-gpu none")) << v.remedy;
  EXPECT_EQ(v.remedy,
            "Install a CUDA build of torch for driver 535.104.05 (CUDA 12.2) in the job's environment: pip "
            "install torch --index-url https://download.pytorch.org/whl/cu121 (CUDA 12.1 ≤ the driver's "
            "12.2); a distribution's torch package may be a CPU build (Debian's python3-torch is).");

  // An image for GPU nodes: the fix says how to declare a CPU-only image.
  RankFacts image;
  image.gpu.runtime.frameworks = {cpu_torch()};
  v = judge(image, image_options(), Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/cpu-torch");
  EXPECT_EQ(v.finding.params["gpus"], "--target-gpu 9.0");
  EXPECT_TRUE(v.remedy.ends_with(" If the image is meant to run without GPUs, say so with --target-gpu none."))
      << v.remedy;
}

TEST(CudaRuntimeCheck, CpuOnlyTorchWhereGpusAreUnknownIsUnknown) {
  RankFacts f;  // no GPU list, no PCI bus read
  f.gpu.runtime.frameworks = {cpu_torch()};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/cpu-torch-gpus-unknown");
  EXPECT_EQ(v.finding.params["path"], "/venv/lib/python3.11/site-packages/torch/version.py");
  EXPECT_EQ(v.summary,
            "torch 2.5.1+cpu (/venv/lib/python3.11/site-packages/torch/version.py) is a CPU-only build "
            "(torch.version.cuda = None); whether the job will have GPUs could not be told");
  EXPECT_TRUE(v.remedy.starts_with("Install a CUDA build of torch matching the driver")) << v.remedy;
}

TEST(CudaRuntimeCheck, TorchWhoseCudartTheLoaderCannotFindFails) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121")};
  FrameworkBuild fw;
  fw.name = "torch";
  fw.version = "2.5.1+cu121";
  fw.cuda = "12.1";
  fw.build = "cuda";
  fw.library = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so";
  fw.cudart_soname = "libcudart.so.12";
  fw.searched = {"/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib", "/usr/lib/x86_64-linux-gnu"};
  f.gpu.runtime.frameworks = {fw};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/cudart-missing");
  EXPECT_EQ(v.finding.params["soname"], "libcudart.so.12");
  EXPECT_EQ(v.finding.params["cuda_major"], 12);
  EXPECT_TRUE(has(v.summary, "import torch fails with \"libcudart.so.12: cannot open shared object file\""))
      << v.summary;
  EXPECT_TRUE(has(v.remedy,
                  "nvidia-cuda-runtime-cu12), or put the directory holding libcudart.so.12 on "
                  "LD_LIBRARY_PATH."))
      << v.remedy;
}

TEST(CudaRuntimeCheck, NothingLoadedAndNoDriverSkips) {
  RankFacts f;  // no driver
  f.gpu.runtime.runtimes = {cuda_runtime("13.0", "toolkit", "", "/usr/local/cuda/version.json")};
  f.gpu.runtime.runtimes[0].loaded_by.clear();
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/nothing-loaded-no-driver");
  EXPECT_EQ(v.finding.params["uses"], "nothing of the job loads it");
  EXPECT_EQ(v.summary,
            "the job loads no CUDA runtime (nothing of the job loads it) and there is no driver to judge "
            "the others against: no driver to judge against (see driver.loaded)");
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(CudaRuntimeCheck, ARuntimeTheJobDoesNotLoadWarnsAtMost) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1", "torch", "torch 2.5.1+cu121"),
                            cuda_runtime("13.0", "toolkit", "", "/usr/local/cuda/version.json")};
  f.gpu.runtime.runtimes[1].loaded_by.clear();
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/unloaded-too-new");
  EXPECT_EQ(v.finding.params["what"], "the CUDA 13.0 toolkit (/usr/local/cuda/version.json)");
  EXPECT_EQ(v.finding.params["min_driver"], "580.65.06");
  EXPECT_EQ(v.finding.params["uses"], "torch 2.5.1+cu121 uses its own CUDA 12.1");
  EXPECT_EQ(v.remedy,
            "Build extensions with a toolkit for CUDA ≤ 12.2 (or install driver ≥ 580.65.06); nothing needs "
            "to change for the framework itself.");
  EXPECT_EQ(v.evidence["runtimes"][1]["status"], "WARN");
}

TEST(CudaRuntimeCheck, NvidiaRequireCudaIsEvaluated) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1")};
  f.gpu.runtime.nvidia_require_cuda = "cuda>=12.4";
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/require-not-met");
  EXPECT_EQ(v.finding.params["require"], "cuda>=12.4");
  EXPECT_EQ(v.finding.params["cc"], "9.0");
  EXPECT_TRUE(has(v.summary, "NVIDIA_REQUIRE_CUDA")) << v.summary;

  f.gpu.runtime.nvidia_require_cuda = "cuda>=12.1";
  v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;

  f.gpu.runtime.nvidia_require_cuda = "cuda>=12.4";
  f.env = EnvSnapshot({{"NVIDIA_DISABLE_REQUIRE", "1"}});
  EXPECT_EQ(judge(f).status, Status::Pass);
}

TEST(CudaRuntimeCheck, NvidiaRequireCudaUnknownOrMalformed) {
  RankFacts f = node_facts();
  f.gpu.runtime.runtimes = {cuda_runtime("12.1")};
  f.gpu.runtime.nvidia_require_cuda = "cuda>=12.0,brand=tesla";  // NVML's brand is not read here
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/require-unknown");
  EXPECT_EQ(v.finding.params["detail"], "cannot tell whether \"brand=tesla\" holds: the host's brand is not known");
  EXPECT_TRUE(has(v.remedy, "driver.loaded")) << v.remedy;

  RankFacts image;
  image.gpu.runtime.runtimes = {cuda_runtime("12.1")};
  image.gpu.runtime.nvidia_require_cuda = "cuda>=12.0,brand=tesla";
  v = judge(image, image_options(), Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/require-unknown-target");
  EXPECT_EQ(v.finding.params["driver"], "the target driver 535.104.05 (CUDA 12.2)");
  EXPECT_EQ(v.summary,
            "NVIDIA_REQUIRE_CUDA=\"cuda>=12.0,brand=tesla\" could not be evaluated against the target "
            "driver 535.104.05 (CUDA 12.2) on CC 9.0: cannot tell whether \"brand=tesla\" holds: the "
            "host's brand is not known");
  EXPECT_TRUE(has(v.remedy, "--target-driver and --target-gpu")) << v.remedy;

  f.gpu.runtime.nvidia_require_cuda = "cuda>=12.0 foo";
  v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.runtime/require-malformed");
  EXPECT_EQ(v.finding.params["token"], "foo");
  EXPECT_TRUE(has(v.summary, "is malformed at 'foo'")) << v.summary;
}

TEST(CudaRuntimeCheck, ExplainNamesReadsFailuresAndFix) {
  EXPECT_EQ(kCudaRuntime.id, "cuda.runtime");
  EXPECT_EQ(kCudaRuntime.profiles, static_cast<unsigned>(kInAll));
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN", "PTX JIT"}) {
    EXPECT_NE(kCudaRuntime.explain.find(part), std::string_view::npos) << part;
  }
}

}  // namespace
}  // namespace checks_cuda_runtime_check_test
}  // namespace preflight
