// SPDX-License-Identifier: MIT
// nccl.library on hand-built facts: every status, its CUDA build vs the driver (node and image
// profiles), and the known-issue table.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "matrix/compat_matrix.hpp"

namespace preflight {
namespace checks_nccl_library_check_test {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr const char* kPath = "/usr/local/cuda/lib64/libnccl.so.2.28.9";

Probed<NcclLibrary> nccl(const std::string& version, const std::string& cuda_build, int code = 0) {
  NcclLibrary l;
  l.path = kPath;
  l.source = "--nccl-lib";
  l.version = version;
  l.version_code = code;
  l.cuda_build = cuda_build;
  return Probed<NcclLibrary>::ok(l, "ncclGetVersion");
}

NvmlGpu gpu(const std::string& name, int cc_major, int cc_minor) {
  NvmlGpu g;
  g.name = name;
  g.cc_major = cc_major;
  g.cc_minor = cc_minor;
  return g;
}

RankFacts node_facts(const std::string& driver = "575.57.08", int api = 12090,
                     std::vector<NvmlGpu> gpus = {gpu("NVIDIA A100-SXM4-80GB", 8, 0)}) {
  RankFacts f;
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok(driver, "NVML");
  f.gpu.driver.cuda_driver_version = Probed<int>::ok(api, "cuDriverGetVersion");
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok(std::move(gpus), "NVML");
  return f;
}

Verdict judge(const RankFacts& f, Options o = {}, Profile p = Profile::Node) {
  return run_check(kNcclLibrary, CheckContext{f, o, p});
}

/// The finding of `v` with this code; nullptr when it has none.
const Finding* finding(const Verdict& v, const std::string& code) {
  for (const Finding& f : v.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

/// The built-in matrix with one known problem of NCCL 2.28.x under `condition` instead of its own.
CompatMatrix with_issue(const std::string& condition) {
  CompatMatrix m = builtin_compat_matrix();
  NcclIssueRow row;
  row.id = "nccl-2.28-test";
  row.from = Version::of({2, 28, 0});
  row.below = Version::of({2, 29, 0});
  row.condition = condition;
  row.problem = "a hang at init";
  row.fix = "upgrade to 2.29";
  row.source = "a test";
  row.mitigation = "-";
  m.nccl_issues = {row};
  return m;
}

Verdict judge_with(const RankFacts& f, const CompatMatrix& m) {
  const Options o;
  return run_check(kNcclLibrary, CheckContext{f, o, Profile::Node, &m});
}

/// A torch of the job's Python environment.
FrameworkBuild torch(const std::string& version, const std::string& cuda) {
  FrameworkBuild fw;
  fw.name = "torch";
  fw.version = version;
  fw.cuda = cuda;
  fw.build = cuda.empty() ? "cpu" : "cuda";
  fw.path = "/venv/torch/version.py";
  return fw;
}

TEST(NcclLibraryCheck, PassNamesVersionAndFile) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9")) << v.summary;
  EXPECT_TRUE(has(v.summary, kPath)) << v.summary;
  EXPECT_EQ(v.evidence["path"], kPath);
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-runs");
  EXPECT_EQ(v.finding.params["library"], "NCCL 2.28.9 from " + std::string(kPath) + " (--nccl-lib)");
}

TEST(NcclLibraryCheck, VersionFromCodeWhenTheStringIsMissing) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9")) << v.summary;
}

TEST(NcclLibraryCheck, LibraryMissingFailsNamingTheCandidates) {
  RankFacts f = node_facts();
  f.gpu.runtime.nccl_candidates = {
      {"/venv/site-packages/nvidia/nccl/lib/libnccl.so.2", "wheel nvidia-nccl-cu12 2.21.5", ""},
      {"/usr/lib/x86_64-linux-gnu/libnccl.so.2", "ld.so.cache", ""}};
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::LibraryMissing, "libnccl.so.2: cannot open shared object file");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "libnccl.so.2 not found where the job looks")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/venv/site-packages/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.21.5)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--nccl-lib")) << v.remedy;
  EXPECT_EQ(v.finding.code, "nccl.library/not-found");
  EXPECT_EQ(v.finding.params["why"], "libnccl.so.2: cannot open shared object file");
  EXPECT_EQ(v.finding.params["searched"],
            "/venv/site-packages/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.21.5), "
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2 (ld.so.cache)");
}

TEST(NcclLibraryCheck, AProbeStoppedByPreflightsOwnBudgetIsUnknown) {
  RankFacts f = node_facts();
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::OutOfBudget,
                                          "the NCCL library probe got only what was left of the probe phase, 0.2 s");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/out-of-budget");
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
}

TEST(NcclLibraryCheck, LoadFailureCrashOrHangFails) {
  RankFacts f = node_facts();
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Crashed, "ncclGetVersion crashed with SIGSEGV in 0.1 s");
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "SIGSEGV")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/load-failed");
  EXPECT_EQ(v.finding.params["error"], "crashed");
  EXPECT_EQ(v.summary, "libnccl.so.2 could not be loaded (crashed): ncclGetVersion crashed with SIGSEGV in 0.1 s");
  EXPECT_TRUE(
      v.remedy.starts_with("Fix or replace the library named (the job loads the same file and fails the same "
                           "way). Install NCCL where the job loads it"))
      << v.remedy;
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Timeout, "no answer within 5 s");
  EXPECT_EQ(judge(f).status, Status::Fail);
  EXPECT_EQ(judge(f).finding.code, "nccl.library/load-failed");
}

TEST(NcclLibraryCheck, NotProbedOrUnreadableIsUnknown) {
  RankFacts f = node_facts();
  Verdict v = judge(f);  // never probed
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "nccl.library/not-probed");
  EXPECT_EQ(v.finding.params["why"], "not probed");
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::ParseError, "version string 'NCCL x.y'");
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "nccl.library/version-not-read");
  EXPECT_EQ(v.finding.params["why"], "version string 'NCCL x.y'");
  f.gpu.nccl = nccl("garbage", "12.9", 0);
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "unreadable")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/version-unreadable");
  EXPECT_EQ(v.finding.params["version"], "garbage");
  EXPECT_EQ(v.finding.params["version_code"], 0);
  EXPECT_EQ(v.summary, "the NCCL version of " + std::string(kPath) +
                           " (--nccl-lib) is unreadable (ncclGetVersion gave 'garbage', code 0)");
  f.gpu.nccl = nccl("2.28.9", "", 22809);
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9") && has(v.summary, "built for")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-unreadable");
  EXPECT_EQ(v.finding.params["cuda_build"], "");
}

TEST(NcclLibraryCheck, UnderASysrootWithoutACaptureTheLibraryIsNotRead) {
  RankFacts f = node_facts();
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Unsupported, "the tree holds no report of the library");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/not-read");
  EXPECT_EQ(v.summary, "the NCCL library was not read: the tree holds no report of the library");
  EXPECT_TRUE(has(v.remedy, "preflight capture")) << v.remedy;
}

TEST(NcclLibraryCheck, NoDriverInNodeProfileIsUnknownButNamesTheLibrary) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9 from " + std::string(kPath))) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-unjudged");
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(NcclLibraryCheck, ACpuOnlyTorchHasNoNccl) {
  RankFacts f = node_facts();
  f.gpu.runtime.frameworks = {torch("2.5.1+cpu", "")};
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cpu-torch");
  EXPECT_EQ(v.finding.params["torch"], "2.5.1+cpu");
  EXPECT_EQ(v.finding.params["gpus"], "1 GPU (NVML)");
  EXPECT_EQ(v.summary,
            "torch 2.5.1+cpu (/venv/torch/version.py) is a CPU-only build: it has no NCCL (no libnccl.so.2 was found "
            "either); the job will have 1 GPU (NVML): init_process_group(\"nccl\") fails with \"Distributed package "
            "doesn't have NCCL built in\"");

  // A system libnccl that torch does not load is named as such.
  f.gpu.runtime.nccl_candidates = {{"/usr/lib/x86_64-linux-gnu/libnccl.so.2", "ld.so.cache", ""}};
  v = judge(f);
  EXPECT_EQ(v.finding.params["present"], "the /usr/lib/x86_64-linux-gnu/libnccl.so.2 on the node is not loaded by it");

  // Where the job has no GPU it needs no NCCL; where that cannot be told, UNKNOWN.
  Options cpu_image;
  cpu_image.target_cpu_only = true;
  v = judge(f, cpu_image, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cpu-torch-no-gpus");
  EXPECT_EQ(v.finding.params["gpus"], "--target-gpu none (a CPU-only image)");
  EXPECT_TRUE(v.remedy.empty()) << v.remedy;

  RankFacts bare;
  bare.gpu.runtime.frameworks = {torch("2.5.1+cpu", "")};
  v = judge(bare);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cpu-torch-gpus-unknown");
  EXPECT_TRUE(has(v.summary, "whether the job will have GPUs could not be told")) << v.summary;
}

TEST(NcclLibraryCheck, TorchWithNcclLinkedInIsUnknown) {
  RankFacts f = node_facts();
  FrameworkBuild fw = torch("2.5.1+cu124", "12.4");
  fw.library = "/venv/torch/lib/libtorch_cuda.so";
  fw.nccl_via = "linked in (libtorch_cuda.so needs no libnccl)";
  f.gpu.runtime.frameworks = {fw};
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/linked-in");
  EXPECT_EQ(v.finding.params["torch_library"], "/venv/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(v.summary,
            "torch 2.5.1+cu124 has NCCL linked into /venv/torch/lib/libtorch_cuda.so (it needs no libnccl.so.2): its "
            "version cannot be read from files, and no libnccl.so.2 was found either");
  EXPECT_EQ(v.evidence["framework_nccl"], "linked in (libtorch_cuda.so needs no libnccl)");
}

TEST(NcclLibraryCheck, TorchWhoseLibncclIsNowhereFails) {
  RankFacts f = node_facts();
  FrameworkBuild fw = torch("2.5.1+cu124", "12.4");
  fw.library = "/venv/torch/lib/libtorch_cuda.so";
  fw.nccl_via = "not found: the loader finds libnccl.so.2 nowhere";
  f.gpu.runtime.frameworks = {fw};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/torch-nccl-missing");
  EXPECT_EQ(v.finding.params["cuda_major"], 12);
  EXPECT_EQ(v.finding.params["nccl_via"], "not found: the loader finds libnccl.so.2 nowhere");
  EXPECT_TRUE(has(v.summary, "import torch fails with \"libnccl.so.2: cannot open shared object file\"")) << v.summary;
  EXPECT_EQ(v.remedy,
            "Reinstall torch with its NCCL wheel (pip install --force-reinstall torch, which pulls nvidia-nccl-cu12), "
            "or put the directory holding libnccl.so.2 on LD_LIBRARY_PATH.");
}

// The libnccl torch loads lacks functions torch's library needs (an older NCCL found first):
// import torch fails with "undefined symbol", whatever the NCCL's version says.
TEST(NcclLibraryCheck, LibncclWithoutTheFunctionsTorchNeedsFails) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.18.3", "12.2", 21803);
  FrameworkBuild fw = torch("2.5.1+cu124", "12.4");
  fw.library = "/venv/torch/lib/libtorch_cuda.so";
  fw.nccl_path = "/usr/lib/x86_64-linux-gnu/libnccl.so.2";
  fw.nccl_via = "LD_LIBRARY_PATH";
  fw.nccl_missing = {"ncclCommRegister", "ncclMemAlloc"};
  fw.nccl_symbols = "41 nccl* symbols needed, 2 not exported";
  f.gpu.runtime.frameworks = {fw};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/missing-symbols");
  EXPECT_EQ(v.summary,
            "torch 2.5.1+cu124 (/venv/torch/lib/libtorch_cuda.so) needs 2 NCCL functions that the libnccl.so.2 it "
            "loads (/usr/lib/x86_64-linux-gnu/libnccl.so.2) does not export: ncclCommRegister, ncclMemAlloc; import "
            "torch fails with \"undefined symbol: ncclCommRegister\" (41 nccl* symbols needed, 2 not exported)");
  EXPECT_TRUE(has(v.remedy, "nvidia-nccl-cu12")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "found through LD_LIBRARY_PATH")) << v.remedy;
  // Every function there: no finding of its own, the comparison in the evidence.
  f.gpu.runtime.frameworks[0].nccl_missing.clear();
  f.gpu.runtime.frameworks[0].nccl_symbols = "41 nccl* symbols needed, all exported";
  const Verdict ok = judge(f);
  EXPECT_NE(ok.finding.code, "nccl.library/missing-symbols");
  EXPECT_EQ(ok.evidence["framework_nccl_symbols"], "41 nccl* symbols needed, all exported");
}

TEST(NcclLibraryCheck, CudaBuildNewerThanTheDriverFails) {
  RankFacts f = node_facts("535.104.05", 12020);
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA 13.0") && has(v.summary, "580.65.06") && has(v.summary, "12.2")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "an NCCL build for CUDA ≤ 12.2")) << v.remedy;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-too-new");
  EXPECT_TRUE(has(v.finding.params["judgement"].get<std::string>(), "its CUDA 13.0 build needs driver ≥ 580.65.06"))
      << v.finding.params.dump();
}

TEST(NcclLibraryCheck, CudaBuildUnderMinorCompatWarns) {
  RankFacts f = node_facts("535.104.05", 12020);
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "minor-version compatibility")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-minor-compat");
}

TEST(NcclLibraryCheck, CudaBuildThroughForwardCompatOnAnUnsupportedBranchWarns) {
  RankFacts f = node_facts("545.23.08", 12040);
  f.gpu.driver.loaded_libraries = {"/usr/local/cuda-12.4/compat/libcuda.so.550.54.14"};
  f.gpu.nccl = nccl("2.28.9", "12.4", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-forward-compat");
  EXPECT_TRUE(has(v.summary, "forward compatibility") && has(v.summary, "R545")) << v.summary;
}

TEST(NcclLibraryCheck, ImageProfileJudgesAgainstTargetDriver) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  Options o;
  o.target_driver = "535.104.05";
  o.target_gpus = {"9.0"};
  Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "target driver 535.104.05")) << v.summary;
  o.target_driver = "580.95.05";
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  o.target_driver.clear();
  EXPECT_EQ(judge(f, o, Profile::Image).status, Status::Unknown);
}

TEST(NcclLibraryCheck, TargetDriverNewerThanTheMatrixIsUnknown) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  Options o;
  o.target_driver = "700";
  o.target_gpus = {"9.0"};
  const Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "driver 700 is newer than this matrix (newest R620): update the matrix or pass --matrix"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--matrix")) << v.remedy;
  EXPECT_EQ(v.finding.code, "nccl.library/cuda-build-unjudged");
}

TEST(NcclLibraryCheck, DriverBelowNcclMinimumFails) {
  RankFacts f = node_facts("460.106.00", 11020);
  f.gpu.nccl = nccl("2.10.3", "11.0", 21003);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "11.3")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/driver-too-old");
  EXPECT_EQ(v.finding.params["driver"], "driver 460.106.00 (CUDA 11.2)");
  EXPECT_TRUE(has(v.summary,
                  "NCCL needs a driver supporting CUDA ≥ 11.3 (CUDA_DRIVER_MIN_VERSION); driver 460.106.00 "
                  "(CUDA 11.2) is older"))
      << v.summary;
  EXPECT_EQ(v.remedy,
            "Install a driver ≥ " + v.finding.params["min_driver"].get<std::string>() + " (CUDA 11.3) or newer.");
}

TEST(NcclLibraryCheck, KnownIssuesWarnOrFailByCondition) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.19.3", "12.3", 21903);
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "deadlocks")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "NCCL_CUMEM_ENABLE=0")) << v.remedy;
  const Finding* always = finding(v, "nccl.library/known-issue");
  ASSERT_NE(always, nullptr) << v.summary;
  EXPECT_EQ(always->params["issue"], "nccl-2.19-cumem-deadlock");

  f.gpu.nccl = nccl("2.26.2", "12.8", 22602);
  EXPECT_EQ(judge(f).status, Status::Pass);
  f.env = EnvSnapshot({{"NCCL_CUMEM_ENABLE", "0"}});
  v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL_CUMEM_ENABLE=0")) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/known-issue-env");
  EXPECT_EQ(v.finding.params["variable"], "NCCL_CUMEM_ENABLE");
  EXPECT_EQ(v.finding.params["value"], "0");
  EXPECT_EQ(v.finding.params["issue"], "nccl-2.26.2-cumem-off-hang");

  f = node_facts("535.104.05", 12020, {gpu("NVIDIA H100 80GB HBM3", 9, 0)});
  f.gpu.nccl = nccl("2.18.1", "12.1", 21801);
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "H100")) << v.summary;
  const Finding* on_gpu = finding(v, "nccl.library/known-issue-gpu");
  ASSERT_NE(on_gpu, nullptr) << v.summary;
  EXPECT_EQ(on_gpu->params["issue"], "nccl-2.18.1-h100-ll128");
  EXPECT_TRUE(has(on_gpu->params["gpu"].get<std::string>(), "NVIDIA H100 80GB HBM3")) << on_gpu->params.dump();
}

TEST(NcclLibraryCheck, KnownIssuesByEveryKindOfCondition) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const std::string lib = "NCCL 2.28.9 from " + std::string(kPath) + " (--nccl-lib)";

  f.net.gpudirect_rdma = Probed<bool>::ok(true, "/proc/modules");
  Verdict v = judge_with(f, with_issue("gdr"));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/known-issue-gdr");
  EXPECT_EQ(v.finding.params["issue"], "nccl-2.28-test");
  EXPECT_EQ(v.summary, lib + " with GPUDirect RDMA: a hang at init");
  EXPECT_EQ(v.remedy, "Known problem nccl-2.28-test: upgrade to 2.29 (a test).");
  // Without GPUDirect RDMA the problem does not bite; where that is not known, a note says it may.
  f.net.gpudirect_rdma = Probed<bool>::ok(false, "/proc/modules");
  v = judge_with(f, with_issue("gdr"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_FALSE(has(v.summary, "GPUDirect")) << v.summary;
  f.net.gpudirect_rdma = Probed<bool>::error(ProbeErrc::NotFound, "a capture without /proc/modules");
  v = judge_with(f, with_issue("gdr"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "with GPUDirect RDMA, if the job's nodes use it: a hang at init")) << v.summary;

  // CUDA graphs: whether the job captures them is no fact here; a note where GPUs run it, never a WARN.
  v = judge_with(f, with_issue("cuda-graphs"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "if the job captures CUDA graphs: a hang at init")) << v.summary;
  RankFacts no_gpu = f;
  no_gpu.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({}, "NVML");
  v = judge_with(no_gpu, with_issue("cuda-graphs"));
  EXPECT_FALSE(has(v.summary, "CUDA graphs")) << v.summary;

  v = judge_with(f, with_issue("nvls"));
  EXPECT_EQ(v.finding.code, "nccl.library/known-issue-when");
  EXPECT_EQ(v.finding.params["condition"], "nvls");
  EXPECT_EQ(v.summary, lib + " (when nvls): a hang at init");

  v = judge_with(f, with_issue("-"));
  EXPECT_EQ(v.finding.code, "nccl.library/known-issue");
  EXPECT_EQ(v.finding.params["problem"], "a hang at init");
  EXPECT_EQ(v.summary, lib + " has a known problem: a hang at init");

  // On a node known to have no GPU, a problem of every use or of a GPU model is a note.
  RankFacts none = f;
  none.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok({}, "NVML");
  for (const char* cond : {"-", "gpu:H100", "gdr"}) {
    v = judge_with(none, with_issue(cond));
    EXPECT_EQ(finding(v, "nccl.library/known-issue"), nullptr) << cond;
    EXPECT_EQ(finding(v, "nccl.library/known-issue-gpu-unknown"), nullptr) << cond;
    EXPECT_TRUE(has(v.summary, "nccl-2.28-test where GPUs run it (a hang at init); the job has no GPU here"))
        << cond << ": " << v.summary;
  }

  // A GPU-specific problem where the GPU models are not known (an image judged by compute
  // capability): named, as a WARN.
  Options image;
  image.target_gpus = {"9.0"};
  image.target_driver = "575.57.08";
  const CompatMatrix h100 = with_issue("gpu:H100");
  v = run_check(kNcclLibrary, CheckContext{f, image, Profile::Image, &h100});
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "nccl.library/known-issue-gpu-unknown");
  EXPECT_EQ(v.finding.params["gpu_model"], "H100");
  EXPECT_EQ(v.summary, lib + " on H100 GPUs (the GPU models are not known here): a hang at init");
}

TEST(NcclLibraryCheck, ASetMitigationTurnsAKnownProblemIntoAPassNote) {
  RankFacts f = node_facts("535.104.05", 12020, {gpu("NVIDIA H100 80GB HBM3", 9, 0)});
  f.gpu.nccl = nccl("2.18.1", "12.1", 21801);
  f.env = EnvSnapshot({{"NCCL_PROTO", "^LL128"}});
  const auto mitigated = [](const Verdict& v, const std::string& id) {
    for (const auto& issue : v.evidence.at("known_issues")) {
      if (issue.at("id") == id && issue.contains("mitigated_by")) return issue.at("mitigated_by").get<std::string>();
    }
    return std::string();
  };
  Verdict v = judge(f);
  EXPECT_FALSE(has(v.summary, "H100 80GB")) << v.summary;  // the LL128 problem is not reported as one
  EXPECT_EQ(mitigated(v, "nccl-2.18.1-h100-ll128"), "NCCL_PROTO=^LL128");
  EXPECT_FALSE(has(v.remedy, "NCCL_PROTO")) << v.remedy;
  f.env = EnvSnapshot({{"NCCL_PROTO", "LL,Simple"}});  // an include list without LL128 leaves it out too
  EXPECT_EQ(mitigated(judge(f), "nccl-2.18.1-h100-ll128"), "NCCL_PROTO=^LL128");
  f.env = EnvSnapshot({{"NCCL_PROTO", "LL128"}});  // not a mitigation
  EXPECT_TRUE(has(judge(f).summary, "H100 80GB")) << judge(f).summary;

  f = node_facts();
  f.gpu.nccl = nccl("2.19.3", "12.3", 21903);
  EXPECT_TRUE(has(judge(f).summary, "deadlocks")) << judge(f).summary;  // the cuMem deadlocks of 2.19
  f.env = EnvSnapshot({{"NCCL_CUMEM_ENABLE", "0"}});
  v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;  // not a problem: a note that says it is mitigated
  EXPECT_TRUE(has(v.summary,
                  "(deadlocks/hangs (e.g. Alltoall) with cuMem, enabled by default since 2.19), mitigated "
                  "by NCCL_CUMEM_ENABLE=0"))
      << v.summary;
  EXPECT_FALSE(has(v.remedy, "NCCL_CUMEM_ENABLE=0")) << v.remedy;
  EXPECT_EQ(mitigated(v, "nccl-2.19-cumem-deadlock"), "NCCL_CUMEM_ENABLE=0");
}

TEST(NcclLibraryCheck, ExplainNamesReadsFailuresAndFix) {
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN"}) {
    EXPECT_NE(kNcclLibrary.explain.find(part), std::string_view::npos) << part;
  }
}

}  // namespace
}  // namespace checks_nccl_library_check_test
}  // namespace preflight
