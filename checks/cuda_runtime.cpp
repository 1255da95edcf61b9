// SPDX-License-Identifier: MIT
// cuda.runtime: every CUDA runtime the job will load vs the driver (version-matrix.md §9.2), and
// NVIDIA_REQUIRE_CUDA as the NVIDIA container runtime evaluates it.
#include <algorithm>
#include <set>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "core/nvidia_require.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

std::string trim_copy(std::string_view s) { return std::string(trim(s)); }

std::string join_list(const std::vector<std::string>& items, std::string_view sep = ", ") { return join(items, sep); }

std::string runtime_label(const CudaRuntime& r) {
  std::string s = "CUDA " + r.version + " (" + (r.detail.empty() ? r.kind : r.detail);
  if (!r.path.empty()) s += " at " + r.path;
  return s + ")";
}

// Minor-version compatibility has no PTX JIT: a framework of this CUDA must carry SASS for every GPU.
void check_sass_under_minor_compat(const Version& cuda, const DriverView& driver, const GpusView& gpus,
                                   const RuntimeFacts& rt, const CompatMatrix& m, std::set<std::string>& done,
                                   VerdictBuilder& b) {
  for (const FrameworkBuild& fw : rt.frameworks) {
    const std::optional<Version> fw_cuda = Version::parse(trim_copy(fw.cuda));
    if (!fw_cuda || fw_cuda->truncated(2) != cuda.truncated(2) || fw.arch_list.empty()) continue;
    if (!done.insert(fw.path + "|" + fw.version).second) continue;
    for (const GpuView& g : gpus.gpus) {
      if (!g.cc) continue;
      const ArchMatch match = match_arch(fw.arch_list, *g.cc);
      if (match == ArchMatch::Sass || match == ArchMatch::Unreadable) continue;
      const std::string sm = "sm_" + std::to_string(g.cc->major()) + std::to_string(g.cc->minor());
      b.add(Status::Fail,
            fw.name + " " + fw.version + " (CUDA " + fw_cuda->str() + ") has no " + sm + " SASS for " + g.label +
                " (arch list: " + join_list(fw.arch_list, " ") + "): its kernels need PTX JIT, which minor-version "
                "compatibility with " + driver.label() + " does not provide (cudaErrorUnsupportedPtxVersion, 222)",
            "Install driver ≥ " + m.min_driver_for(cuda)->str() + " (CUDA " + cuda.truncated(2).str() +
                "), or use a framework build for CUDA ≤ " + driver.cuda->str() + ", or one compiled for " + sm + ".");
    }
  }
}

void check_nvidia_require(const CheckContext& ctx, const DriverView& driver, const GpusView& gpus, VerdictBuilder& b) {
  const std::string& text = ctx.facts.gpu.runtime.nvidia_require_cuda;
  if (trim_copy(text).empty()) return;
  b.evidence()["nvidia_require_cuda"] = text;
  if (const std::optional<std::string> off = ctx.facts.env.get("NVIDIA_DISABLE_REQUIRE")) {
    const std::string v = trim_copy(*off);
    if (!v.empty() && v != "0" && v != "false") {
      b.evidence()["nvidia_disable_require"] = v;
      return;
    }
  }
  // One evaluation per distinct compute capability (the container runtime checks every GPU given
  // to the container); without GPUs, arch constraints stay unknown.
  std::vector<std::optional<Version>> archs;
  for (const GpuView& g : gpus.gpus) {
    if (g.cc && std::find(archs.begin(), archs.end(), g.cc) == archs.end()) archs.push_back(g.cc);
  }
  if (archs.empty()) archs.push_back(std::nullopt);
  std::string brand;
  if (!gpus.gpus.empty() && !driver.image) {
    const GpuClass c = gpu_class(gpus.gpus.front().name);
    if (c == GpuClass::Consumer) brand = "geforce";
  }
  const std::string what = "NVIDIA_REQUIRE_CUDA=\"" + text + "\"";
  for (const std::optional<Version>& arch : archs) {
    const RequireResult r = evaluate_nvidia_require(text, driver.version, driver.cuda, brand, arch);
    const std::string on = arch ? " on CC " + arch->str() : std::string();
    switch (r.status) {
      case RequireStatus::Satisfied:
        b.note(what + " holds for " + driver.label() + on + (r.group.empty() ? "" : " (" + r.group + ")"));
        break;
      case RequireStatus::NotSatisfied:
        b.add(Status::Fail,
              what + " is not met by " + driver.label() + on + ": the NVIDIA container runtime refuses to start the "
                  "container (" + r.detail + ")",
              "Run the image on a driver that meets it, or build the image from a base for an older CUDA (its "
              "NVIDIA_REQUIRE_CUDA follows the base image's CUDA).");
        break;
      case RequireStatus::Unknown:
        b.add(Status::Unknown, what + " could not be evaluated against " + driver.label() + on + ": " + r.detail,
              driver.image ? "Pass --target-driver and --target-gpu so every constraint can be evaluated."
                           : "Make the driver version and GPUs readable (driver.loaded), then rerun.");
        break;
      case RequireStatus::Malformed:
        b.add(Status::Fail,
              what + " is malformed at '" + r.token + "': the NVIDIA container runtime rejects it (" + r.detail + ")",
              "Fix NVIDIA_REQUIRE_CUDA in the image (e.g. \"cuda>=12.4 brand=tesla,driver>=535,driver<536\").");
        break;
    }
    if (r.status != RequireStatus::Satisfied) break;
  }
}

Verdict run(const CheckContext& ctx) {
  const CompatMatrix& m = compat_matrix(ctx);
  const RuntimeFacts& rt = ctx.facts.gpu.runtime;
  const DriverView driver = driver_view(ctx, m);
  const GpusView gpus = gpu_view(ctx, m);

  VerdictBuilder b;
  b.evidence()["driver"] = driver.evidence();
  b.evidence()["searched"] = rt.searched;
  if (!rt.problems.empty()) b.evidence()["problems"] = rt.problems;

  if (rt.runtimes.empty()) {
    const std::string searched = rt.searched.empty() ? std::string("nothing") : join_list(rt.searched);
    if (!rt.problems.empty()) {
      b.add(Status::Unknown,
            "no CUDA runtime found, but some files could not be read (" + join_list(rt.problems, "; ") + "); searched: " +
                searched,
            "Make the named files readable to this user, or name the runtime with --cuda-runtime LIB.");
    } else {
      b.add(Status::Warn, "no CUDA runtime found where the job will look (searched: " + searched + ")",
            "Install the framework's CUDA build (e.g. a torch cuXXX wheel) or a CUDA toolkit where the job runs, or "
            "point preflight at it: --site-packages DIR, --python EXE or --cuda-runtime LIB.");
    }
  } else if (!driver.cuda) {
    std::vector<std::string> names;
    for (const CudaRuntime& r : rt.runtimes) names.push_back(runtime_label(r));
    b.evidence()["runtimes"] = rt.runtimes;
    return Verdict::unknown(
        "cannot judge " + join_list(names, ", ") + ": " + driver.why +
            (driver.image || driver.newer_than_matrix ? std::string()
                                                      : std::string("; driver.loaded reports the driver itself")),
        driver.missing_remedy(), b.evidence());
  }

  nlohmann::json judged = nlohmann::json::array();
  std::set<std::string> sass_checked;
  for (const CudaRuntime& r : rt.runtimes) {
    nlohmann::json row = r;
    const std::optional<Version> v = Version::parse(trim_copy(r.version));
    if (!v) {
      b.add(Status::Unknown,
            "the CUDA runtime version '" + r.version + "' read from " + r.path + " (" + r.kind + ") is not a version",
            "Check that file (a broken install?), or name the runtime with --cuda-runtime LIB.");
      row["status"] = "UNKNOWN";
      judged.push_back(std::move(row));
      continue;
    }
    const CudaJudgement j = judge_cuda_vs_driver(*v, runtime_label(r), driver, gpus, m);
    b.add(j.status, j.summary, j.remedy);
    if (j.rule == "minor-version") check_sass_under_minor_compat(*v, driver, gpus, rt, m, sass_checked, b);
    row["status"] = to_string(j.status);
    row["rule"] = j.rule;
    if (const std::optional<Version> need = m.min_driver_for(*v)) row["min_driver"] = need->str();
    judged.push_back(std::move(row));
  }
  b.evidence()["runtimes"] = std::move(judged);

  check_nvidia_require(ctx, driver, gpus, b);
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  Every CUDA runtime the job will load, found without running Python: the CUDA toolkit
  (version.json), libcudart.so.* on the loader path, the framework's CUDA (torch/version.py), the
  nvidia-cuda-runtime wheels, the container's CUDA_VERSION, and --cuda-runtime LIB. Against it:
  the driver's CUDA (cuDriverGetVersion: 12020 = 12.2) and the driver version (NVML, else
  /proc/driver/nvidia/version); in the image profile, --target-driver and the CUDA its branch
  reports (matrix/driver_branch_cuda.tsv). Minimum drivers come from matrix/cuda_toolkit_driver.tsv
  and matrix/cuda_minor_compat.tsv. Also NVIDIA_REQUIRE_CUDA, evaluated as the NVIDIA container
  runtime does (unless NVIDIA_DISABLE_REQUIRE is set).

Rules (runtime R, driver's CUDA D)
  PASS     R <= D (backward compatibility).
  PASS     R > D but a cuda-compat libcuda (a .../compat/libcuda.so.* the driver probe loaded)
           reports >= R, the GPUs are datacenter GPUs and the kernel branch is a supported
           cuda-compat target (R535, R570, R580 and later production branches).
  WARN     the same, where the GPU class or the branch cannot be confirmed.
  WARN     R > D, same major, driver >= the family's minor-version minimum (11.x 450.80.02, 12.x
           525.60.13, 13.x 580): minor-version compatibility. It runs, but without PTX JIT
           (kernels without SASS for the GPU fail with cudaErrorUnsupportedPtxVersion, 222), and
           newer APIs return cudaErrorCallRequiresNewerDriver (36).

Failures
  FAIL     R > D beyond minor-version compatibility ("CUDA 13.0 (torch 2.9.0+cu130) needs driver
           >= 580.65.06; driver 535.104.05 (CUDA 12.2) supports CUDA <= 12.2"). The job dies with
           cudaErrorInsufficientDriver (35) / "The NVIDIA driver on your system is too old".
  FAIL     under minor-version compatibility, a framework whose arch list has no SASS for a GPU
           (it would need PTX JIT).
  FAIL     NVIDIA_REQUIRE_CUDA is not met by the driver, or is malformed: the container will not
           start.
  WARN     no CUDA runtime found where the job will look (the searched places are named). A job
           with no runtime cannot use the GPU; a CPU-only image is the one case where this is fine.
  UNKNOWN  no driver to judge against in the node/job profiles (driver.loaded reports the driver
           itself), or no --target-driver in the image profile.
  UNKNOWN  a --target-driver (or a node's driver whose cuDriverGetVersion is unreadable) newer
           than the matrix's newest branch: "driver 700 is newer than this matrix (newest R620):
           update the matrix or pass --matrix". A driver of the newest branch itself (620.x) is
           judged; a newer one is never extrapolated to PASS.
  UNKNOWN  a runtime version that is not a version, or one the matrix does not know (newer than
           the table, or no such release): never PASS.
  UNKNOWN  no runtime found while some files on the way could not be read.
  UNKNOWN  the driver version is unreadable where minor-version compatibility decides.

Fix
  Either side can move: install a driver >= the runtime's minimum (named), or use a framework build
  for CUDA <= the driver's CUDA (e.g. pip install torch --index-url
  https://download.pytorch.org/whl/cu121 on a CUDA 12.2 driver). Forward compatibility
  (cuda-compat-X-Y on LD_LIBRARY_PATH) is an option on datacenter GPUs only.)EXPLAIN";

}  // namespace

extern const CheckSpec kCudaRuntime = {
    "cuda.runtime", Scope::Node, "every CUDA runtime the job loads is supported by the driver (or --target-driver)",
    kExplain, kInAll, "", &run, "cuda_runtime,gpu_driver"};

}  // namespace preflight
