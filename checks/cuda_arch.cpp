// SPDX-License-Identifier: MIT
// cuda.arch: each GPU's compute capability vs each CUDA runtime's supported range, the driver
// branch's supported architectures, and the framework's compiled architectures.
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "checks/finding_parts.hpp"
#include "core/text.hpp"

namespace preflight {
namespace cuda_arch_check {
namespace {

/// The verb for a GPU label: "GPU 0 (…) is", "GPUs 0–7 (…) are" (the same model grouped).
std::string is_are(const std::string& label) { return label.starts_with("GPUs ") ? "are" : "is"; }

// {gpu} is a GPU's label ("GPU 0 (Tesla V100-SXM2-16GB, CC 7.0)", "GPUs 0–7 (…)", "target GPU CC 9.0
// (Hopper)") and {is} its verb ("is", "are"); {cuda} a CUDA in use ("CUDA 13.0 (torch 2.9.0+cu130)"),
// {range} the compute capabilities it supports; {driver} the driver's label.
constexpr FindingSpec kCpuOnlyImage = {"cuda.arch/cpu-only-image", Status::Skip,
                                       "a CPU-only image (--target-gpu none): no GPU architecture to judge", ""};
constexpr FindingSpec kNoTargetGpu = {"cuda.arch/no-target-gpu", Status::Unknown,
                                      "no GPU compute capability to judge: {why}",
                                      "Pass --target-gpu CC[,CC] (the fleet's GPUs, e.g. --target-gpu 9.0)."};
constexpr FindingSpec kNoGpuList = {"cuda.arch/no-gpu-list", Status::Unknown,
                                    "no GPU compute capability to judge: {why}",
                                    "Make the GPUs visible to the job (see driver.loaded and gpu.count), then rerun."};
constexpr FindingSpec kNoGpu = {
    "cuda.arch/no-gpu", Status::Unknown,
    "the driver reports no GPU: no compute capability to judge (gpu.count reports it)",
    "Make the GPUs visible to the job (CUDA_VISIBLE_DEVICES, container --gpus), then rerun."};
// {fix}: DriverView::missing_remedy().
constexpr FindingSpec kDriverNewerThanMatrix = {"cuda.arch/driver-newer-than-matrix", Status::Unknown,
                                                "cannot tell which GPU architectures {driver} supports: {why}",
                                                "{fix}"};
constexpr FindingSpec kNoTargetDriver = {
    "cuda.arch/no-target-driver", Status::Unknown,
    "whether the fleet's driver supports the target GPUs' architectures is not judged: {why}", "{fix}"};
constexpr FindingSpec kTargetGpuInvalid = {"cuda.arch/target-gpu-invalid", Status::Unknown,
                                           "{gpu}: {its} compute capability could not be read",
                                           "Give --target-gpu as major.minor, e.g. 9.0."};
constexpr FindingSpec kCcUnreadable = {"cuda.arch/cc-unreadable", Status::Unknown,
                                       "{gpu}: {its} compute capability could not be read",
                                       "Check the GPU with nvidia-smi; rerun."};
constexpr FindingSpec kDroppedByDriver = {
    "cuda.arch/dropped-by-driver", Status::Fail,
    "{gpu}{named_arch} {is} not supported by {driver}: R{last_branch} is the last driver branch for {arch}",
    "Use a driver of branch R{last_branch} or older{last_build}, or newer GPUs."};
constexpr FindingSpec kDriverPredatesGpu = {
    "cuda.arch/driver-predates-gpu", Status::Fail,
    "{gpu} {is} not supported by {driver}: {arch} CC {cc} needs driver branch {first_branch}{first_cuda} or newer, the "
    "first that supports it; the driver does not initialise the GPU (no CUDA device)",
    "Install a driver of branch {first_branch} or newer on the nodes with these GPUs{image_note}{blackwell_note}."};
constexpr FindingSpec kGpuNotInMatrix = {
    "cuda.arch/gpu-not-in-matrix", Status::Unknown,
    "{gpu} {is} not in matrix/gpu_arch.tsv: which driver branch supports it is unknown",
    "Check the compute capability given to --target-gpu, or pass --matrix DIR with a gpu_arch.tsv row for CC {cc}."};
constexpr FindingSpec kCudaNotInTable = {
    "cuda.arch/cuda-not-in-table", Status::Unknown, "{cuda} is not in the compute-capability table: cannot judge {gpu}",
    "Check the version read, or run with --matrix DIR holding a newer cuda_compute_capability.tsv."};
#define PREFLIGHT_TOO_OLD \
  "{gpu} {is} not supported by {cuda} (CC {range}): no kernels can run on it (cudaErrorNoKernelImageForDevice, 209)"
constexpr FindingSpec kGpuTooOldForCuda = {
    "cuda.arch/gpu-too-old-for-cuda", Status::Fail, PREFLIGHT_TOO_OLD,
    "Use a build for CUDA ≤ {last_cuda} (a CUDA {last_major}.x build supports CC {last_range}), or newer GPUs (CC ≥ "
    "{min_cc})."};
constexpr FindingSpec kGpuTooOldForAnyCuda = {
    "cuda.arch/gpu-too-old-for-any-cuda", Status::Fail, PREFLIGHT_TOO_OLD,
    "Use newer GPUs (CC ≥ {min_cc}): no CUDA in the matrix supports CC {cc}."};
#undef PREFLIGHT_TOO_OLD
constexpr FindingSpec kGpuNewerThanCuda = {
    "cuda.arch/gpu-newer-than-cuda", Status::Warn,
    "{gpu} {is} newer than {cuda} knows (CC {range}): only kernels shipped as PTX run, JIT-compiled at start-up",
    "Use a build for {needed}{arch_note}."};
// {framework}: "torch 2.9.0+cu130"; {sm}: "sm_90"; {arch_list}: its compiled architectures.
constexpr FindingSpec kFrameworkPtxOnly = {
    "cuda.arch/framework-ptx-only", Status::Warn,
    "{framework} has no {sm} SASS for {gpu}, only PTX (arch list: {arch_list}): every kernel is JIT-compiled at first "
    "start (minutes), and it fails under minor-version compatibility (no PTX JIT)",
    "Use a build compiled for {sm} (e.g. TORCH_CUDA_ARCH_LIST=\"{cc}\" for a source build)."};
constexpr FindingSpec kFrameworkNoKernels = {
    "cuda.arch/framework-no-kernels", Status::Fail,
    "{framework} has no kernels for {gpu}: arch list {arch_list} has no {sm} SASS and no PTX ≤ {compute} "
    "(cudaErrorNoKernelImageForDevice, 209)",
    "Use a build compiled for {sm}{wheel_note}, or build from source with TORCH_CUDA_ARCH_LIST=\"{cc}\"."};
constexpr FindingSpec kFrameworkArchUnread = {
    "cuda.arch/framework-arch-unread", Status::Unknown,
    "{gpu} {is} newer than {cuda} knows (CC {range}), and the architectures {framework} was compiled for could not be "
    "read ({why}): whether it has kernels for it (SASS of its family, or PTX) is not known",
    "Run `python -c \"import torch; print(torch.cuda.get_arch_list())\"` on the node: it needs {sm} SASS (or "
    "an earlier minor of that family) or PTX no newer than the GPU; a build for a newer CUDA has them."};
constexpr FindingSpec kNothingToJudge = {
    "cuda.arch/nothing-to-judge", Status::Skip,
    "no CUDA runtime or framework found to judge the GPUs' compute capabilities against (cuda.runtime reports it)", ""};

constexpr std::array kFindings = {kCpuOnlyImage,          kNoTargetGpu,         kNoGpuList,        kNoGpu,
                                  kDriverNewerThanMatrix, kNoTargetDriver,      kTargetGpuInvalid, kCcUnreadable,
                                  kDroppedByDriver,       kDriverPredatesGpu,   kGpuNotInMatrix,   kCudaNotInTable,
                                  kGpuTooOldForCuda,      kGpuTooOldForAnyCuda, kGpuNewerThanCuda, kFrameworkPtxOnly,
                                  kFrameworkNoKernels,    kFrameworkArchUnread, kNothingToJudge};

struct CudaInUse {
  Version cuda;       // major.minor
  std::string label;  // "CUDA 13.0 (torch 2.9.0+cu130)"
  const FrameworkBuild* framework = nullptr;  // the framework built for it: its own kernels decide
};

std::vector<CudaInUse> cudas_in_use(const RuntimeFacts& rt) {
  std::vector<CudaInUse> out;
  auto add = [&out](const std::string& version, const std::string& from, const FrameworkBuild* fw = nullptr) {
    const std::optional<Version> v = Version::parse(trim(version));
    if (!v) return;
    const Version mm = v->truncated(2);
    for (CudaInUse& c : out) {
      if (c.cuda != mm) continue;
      if (c.framework == nullptr) c.framework = fw;
      return;
    }
    out.push_back({mm, "CUDA " + mm.str() + " (" + from + ")", fw});
  };
  for (const CudaRuntime& r : rt.runtimes) {
    if (job_loads(r)) add(r.version, r.detail.empty() ? r.kind : r.detail);  // what the job loads, not all on disk
  }
  for (const FrameworkBuild& fw : rt.frameworks) {
    if (!fw.cuda.empty()) add(fw.cuda, fw.name + " " + fw.version, &fw);
  }
  return out;
}

// The newest CUDA whose range includes cc: "CUDA 12.9", or empty.
const CcRangeRow* newest_range_with(const CompatMatrix& m, const Version& cc) {
  const CcRangeRow* best = nullptr;
  for (const CcRangeRow& r : m.cc_ranges) {
    if (r.min_cc <= cc && cc <= r.max_cc) best = &r;
  }
  return best;
}

std::string sm_of(const Version& cc) { return "sm_" + std::to_string(cc.major()) + std::to_string(cc.minor()); }

Verdict run(const CheckContext& ctx) {
  const CompatMatrix& m = compat_matrix(ctx);
  const RuntimeFacts& rt = ctx.facts.gpu.runtime;
  const DriverView driver = driver_view(ctx, m);
  const GpusView gpus = gpu_view(ctx, m);
  const std::vector<CudaInUse> cudas = cudas_in_use(rt);

  VerdictBuilder b;
  b.evidence()["driver"] = driver.evidence();
  nlohmann::json gpu_list = nlohmann::json::array();
  for (const GpuView& g : gpus.gpus) gpu_list.push_back({{"gpu", g.label}, {"cc", g.cc ? g.cc->str() : std::string()}});
  b.evidence()["gpus"] = std::move(gpu_list);
  nlohmann::json cuda_list = nlohmann::json::array();
  for (const CudaInUse& c : cudas) cuda_list.push_back(c.label);
  b.evidence()["cuda"] = std::move(cuda_list);

  if (gpus.cpu_only) return Verdict::of(kCpuOnlyImage, nlohmann::json::object(), b.evidence());
  if (!gpus.known) {
    return Verdict::of(driver.image ? kNoTargetGpu : kNoGpuList, {{"why", gpus.why}}, b.evidence())
        .because(driver.missing ? "driver.loaded" : "");
  }
  if (gpus.gpus.empty()) return Verdict::of(kNoGpu, nlohmann::json::object(), b.evidence());

  bool judged_something = false;
  // A driver newer than the matrix: which architectures it supports is not known (never guessed).
  if (driver.newer_than_matrix) {
    judged_something = true;
    b.add(kDriverNewerThanMatrix, {{"driver", driver.label()}, {"why", driver.why}, {"fix", driver.missing_remedy()}});
  } else if (driver.image && !driver.version) {
    judged_something = true;
    b.add(kNoTargetDriver, {{"why", driver.why}, {"fix", driver.missing_remedy()}});
  }
  for (const GpuView& g : gpus.gpus) {
    const nlohmann::json gpu = {{"gpu", g.label}, {"is", is_are(g.label)}};
    const auto with = [&gpu](nlohmann::json more) {
      nlohmann::json p = gpu;
      p.update(more);
      return p;
    };
    if (!g.cc) {
      b.add(driver.image ? kTargetGpuInvalid : kCcUnreadable,
            {{"gpu", g.label}, {"its", g.label.starts_with("GPUs ") ? "their" : "its"}});
      continue;
    }
    const Version& cc = *g.cc;
    const GpuArchRow* arch = m.arch_for_cc(cc);

    // The driver branch dropped the architecture (Volta/Pascal/Maxwell after R580, Kepler after R470).
    if (arch != nullptr && arch->last_driver_branch && driver.version &&
        driver.version->major() > *arch->last_driver_branch) {
      judged_something = true;
      b.add(kDroppedByDriver,
            with({{"arch", arch->arch},
                  // a target GPU's label names its architecture already ("target GPU CC 3.0 (Kepler)")
                  {"named_arch", part_if(g.label.find("(" + arch->arch + ")") == std::string::npos, " ({arch})")},
                  {"driver", driver.label()},
                  {"last_branch", *arch->last_driver_branch},
                  {"last_build", part_if(arch->last_cuda_major.has_value(), " with a CUDA {last_cuda_major}.x build")},
                  {"last_cuda_major",
                   arch->last_cuda_major ? nlohmann::json(*arch->last_cuda_major) : nlohmann::json()}}));
    }

    // The driver branch predates the architecture (Blackwell on R535/R550): the driver does not
    // initialise the GPU at all (no CUDA device), whatever the runtime.
    if (arch != nullptr && arch->first_driver_branch && driver.version &&
        driver.version->major() < *arch->first_driver_branch) {
      judged_something = true;
      b.add(kDriverPredatesGpu,
            with({{"driver", driver.label()},
                  {"arch", arch->arch},
                  {"cc", cc.str()},
                  {"first_branch", "R" + std::to_string(*arch->first_driver_branch)},
                  {"first_cuda", part_if(arch->first_cuda.has_value(), " (CUDA {first_cuda_version})")},
                  {"first_cuda_version", arch->first_cuda ? nlohmann::json(arch->first_cuda->str()) : nlohmann::json()},
                  {"image_note", part_if(driver.image, " (and judge the image with that --target-driver)")},
                  {"blackwell_note",
                   part_if(arch->arch == "Blackwell", "; Blackwell needs the open GPU kernel modules")}}));
    } else if (arch == nullptr && driver.image && driver.version) {
      judged_something = true;
      b.add(kGpuNotInMatrix, with({{"cc", cc.str()}}));
    }

    for (const CudaInUse& c : cudas) {
      judged_something = true;
      const CcRangeRow* range = m.cc_range_for(c.cuda);
      if (range == nullptr) {
        b.add(kCudaNotInTable, with({{"cuda", c.label}}));
        continue;
      }
      const nlohmann::json judged = with({{"cuda", c.label}, {"range", cc_range_text(*range)}});
      const auto and_with = [&judged](nlohmann::json more) {
        nlohmann::json p = judged;
        p.update(more);
        return p;
      };
      if (cc < range->min_cc) {
        if (const CcRangeRow* ok = newest_range_with(m, cc)) {
          const Version last = ok->cuda_to ? *ok->cuda_to : ok->cuda_from;
          b.add(kGpuTooOldForCuda, and_with({{"last_cuda", last.str()},
                                             {"last_major", last.major()},
                                             {"last_range", cc_range_text(*ok)},
                                             {"min_cc", range->min_cc.str()}}));
        } else {
          b.add(kGpuTooOldForAnyCuda, and_with({{"min_cc", range->min_cc.str()}, {"cc", cc.str()}}));
        }
      } else if (range->max_cc < cc && c.framework != nullptr && !c.framework->arch_list.empty()) {
        // The framework's own kernels decide (below): SASS of the GPU's family, PTX, or neither.
      } else if (range->max_cc < cc && c.framework != nullptr) {
        // Newer than the framework's CUDA, and what it ships could not be read: never assume PTX.
        b.add(kFrameworkArchUnread,
              and_with({{"framework", c.framework->name + " " + c.framework->version},
                        {"sm", sm_of(cc)},
                        {"why", c.framework->arch_source.empty() ? std::string("no library of it was read")
                                                                 : c.framework->arch_source}}));
      } else if (range->max_cc < cc) {
        b.add(kGpuNewerThanCuda,
              and_with({{"needed", arch != nullptr && arch->first_cuda ? "CUDA ≥ " + arch->first_cuda->str()
                                                                       : std::string("a newer CUDA")},
                        {"arch_note", part_if(arch != nullptr, " (the first CUDA for {arch})")},
                        {"arch", arch != nullptr ? nlohmann::json(arch->arch) : nlohmann::json()}}));
      } else {
        b.note(c.label + " supports " + g.label + " (CC " + cc_range_text(*range) + ")");
      }
    }

    for (const FrameworkBuild& fw : rt.frameworks) {
      if (fw.arch_list.empty()) continue;
      judged_something = true;
      const std::string fw_label = fw.name + " " + fw.version;
      const std::string list = join(fw.arch_list, " ");
      const nlohmann::json built =
          with({{"framework", fw_label}, {"sm", sm_of(cc)}, {"arch_list", list}, {"cc", cc.str()}});
      switch (match_arch(fw.arch_list, cc)) {
        case ArchMatch::Sass: b.note(fw_label + " has SASS for " + g.label); break;
        case ArchMatch::PtxOnly: b.add(kFrameworkPtxOnly, built); break;
        case ArchMatch::None: {
          nlohmann::json p = built;
          p["compute"] = "compute_" + std::to_string(cc.major()) + std::to_string(cc.minor());
          p["wheel_note"] = part_if(cc.major() < 8, " (e.g. a CUDA 12.x wheel: CUDA 13 builds start at sm_75)");
          b.add(kFrameworkNoKernels, p);
          break;
        }
        case ArchMatch::Unreadable: b.evidence()["unreadable_arch_lists"].push_back(fw_label + ": " + list); break;
      }
    }
  }

  if (!judged_something && b.status() == Status::Pass) {
    return Verdict::of(kNothingToJudge, nlohmann::json::object(), b.evidence());
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  Each GPU's compute capability (NVML, else the CUDA driver API; in the image profile each
  --target-gpu such as 9.0), the CUDA of every runtime the job loads (cuda.runtime's model: the
  framework's own libcudart, --cuda-runtime, else the loader path; a toolkit nothing of the job
  loads is not judged here) and of each CUDA framework build, the
  framework's compiled architectures, read from the fat binaries of its CUDA library
  (libtorch_cuda.so's .nv_fatbin, else __nv_relfatbin: each entry's header names its SM and
  whether it is SASS or PTX; headers only, payloads skipped, at most a million entries), spelled
  as torch.cuda.get_arch_list() does (sm_80, sm_90, compute_90), and the driver version (or --target-driver). Ranges come from
  matrix/cuda_compute_capability.tsv, architectures and the first and last driver branch of each
  from matrix/gpu_arch.tsv, the newest known branch from matrix/driver_branch_cuda.tsv.

Failures
  FAIL     a GPU below a runtime's range: "GPU 0 (Tesla V100-SXM2-16GB, CC 7.0) is not supported by
           CUDA 13.0 (CC 7.5–12.1)". CUDA 13 dropped Maxwell, Pascal and Volta (< 7.5), 12.0 dropped
           Kepler (< 5.0). No kernel runs: cudaErrorNoKernelImageForDevice (209).
  FAIL     the driver branch dropped the GPU's architecture (Volta/Pascal/Maxwell after R580,
           Kepler after R470).
  FAIL     the driver branch predates the GPU's architecture (matrix/gpu_arch.tsv's
           first_driver_branch: Hopper and Ada R520, Blackwell 10.0/12.0 R570, 10.3/12.1 R575):
           "target GPU CC 10.0 (Blackwell) is not supported by the target driver 550.54.15 (CUDA
           12.4): Blackwell CC 10.0 needs driver branch R570 (CUDA 12.8) or newer". The driver does
           not initialise the GPU at all.
  FAIL     the framework's arch list has neither SASS for the GPU (sm_XY, or sm_XW of the same
           major with W <= Y) nor PTX it can JIT (compute_XY <= the GPU's CC).
  WARN     the framework has only PTX for the GPU: JIT at first start, and no PTX JIT under
           minor-version compatibility.
  WARN     a GPU newer than a runtime knows (above its range): only PTX kernels run. For a
           framework built for that CUDA its own kernels decide instead (the FAIL and WARN above):
           PyPI's CUDA wheels ship SASS only, so a cu124 torch on Blackwell FAILs.
  UNKNOWN  a GPU newer than a framework's CUDA knows, and the framework's architectures could not
           be read (no fatbin section, a library that is not what the format says): never assumed
           to have PTX.
  UNKNOWN  no GPU list (no driver; the image profile without --target-gpu), a GPU whose compute
           capability cannot be read, or a CUDA version the table does not know.
  UNKNOWN  a driver newer than the matrix's newest branch whose CUDA is not reported by the
           driver itself (--target-driver 700 with R620 the newest): "driver 700 is newer than this
           matrix (newest R620): update the matrix or pass --matrix". Never extrapolated.
  UNKNOWN  in the image profile, a --target-gpu compute capability gpu_arch.tsv does not list
           (the driver branch that supports it is unknown), or no usable --target-driver (the
           driver side is not judged).
  SKIP     no CUDA runtime or framework found to judge against (cuda.runtime reports that), or a
           CPU-only image (--target-gpu none).

Fix
  A build for a CUDA that supports the GPU (a CUDA 12.x build for CC < 7.5), a build compiled
  for the GPU's sm_XY (TORCH_CUDA_ARCH_LIST for source builds), a driver branch that supports
  the architecture (still, or already), or newer GPUs; for a driver newer than the matrix, a
  newer preflight or --matrix DIR.)EXPLAIN";

}  // namespace

extern const CheckSpec kCudaArch = {
    "cuda.arch",
    Scope::Node,
    "each GPU's compute capability is supported by the CUDA runtimes and the framework's build",
    kExplain,
    kInAll,
    "",
    &run,
    "cuda_runtime,gpu_driver,pcie",
    false,
    "driver.loaded",
    {},
    nullptr,
    kFindings};

}  // namespace cuda_arch_check
}  // namespace preflight
