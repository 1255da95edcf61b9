// SPDX-License-Identifier: MIT
// cuda.arch: each GPU's compute capability vs each CUDA runtime's supported range, the driver
// branch's supported architectures, and the framework's compiled architectures.
#include <algorithm>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

/// The verb for a GPU label: "GPU 0 (…) is", "GPUs 0–7 (…) are" (the same model grouped).
std::string is_are(const std::string& label) { return label.starts_with("GPUs ") ? " are" : " is"; }

struct CudaInUse {
  Version cuda;       // major.minor
  std::string label;  // "CUDA 13.0 (torch 2.9.0+cu130)"
};

std::vector<CudaInUse> cudas_in_use(const RuntimeFacts& rt) {
  std::vector<CudaInUse> out;
  auto add = [&out](const std::string& version, const std::string& from) {
    const std::optional<Version> v = Version::parse(trim(version));
    if (!v) return;
    const Version mm = v->truncated(2);
    for (const CudaInUse& c : out) {
      if (c.cuda == mm) return;
    }
    out.push_back({mm, "CUDA " + mm.str() + " (" + from + ")"});
  };
  for (const CudaRuntime& r : rt.runtimes) {
    if (job_loads(r)) add(r.version, r.detail.empty() ? r.kind : r.detail);  // what the job loads, not all on disk
  }
  for (const FrameworkBuild& fw : rt.frameworks) {
    if (!fw.cuda.empty()) add(fw.cuda, fw.name + " " + fw.version);
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

  if (gpus.cpu_only) {
    return Verdict::skip("a CPU-only image (--target-gpu none): no GPU architecture to judge", b.evidence());
  }
  if (!gpus.known) {
    return Verdict::unknown("no GPU compute capability to judge: " + gpus.why,
                            driver.image ? "Pass --target-gpu CC[,CC] (the fleet's GPUs, e.g. --target-gpu 9.0)."
                                         : "Make the GPUs visible to the job (see driver.loaded and gpu.count), then rerun.",
                            b.evidence())
        .because(driver.missing ? "driver.loaded" : "");
  }
  if (gpus.gpus.empty()) {
    return Verdict::unknown("the driver reports no GPU: no compute capability to judge (gpu.count reports it)",
                            "Make the GPUs visible to the job (CUDA_VISIBLE_DEVICES, container --gpus), then rerun.",
                            b.evidence());
  }

  bool judged_something = false;
  // A driver newer than the matrix: which architectures it supports is not known (never guessed).
  if (driver.newer_than_matrix) {
    judged_something = true;
    b.add(Status::Unknown, "cannot tell which GPU architectures " + driver.label() + " supports: " + driver.why,
          driver.missing_remedy());
  } else if (driver.image && !driver.version) {
    judged_something = true;
    b.add(Status::Unknown,
          "whether the fleet's driver supports the target GPUs' architectures is not judged: " + driver.why,
          driver.missing_remedy());
  }
  for (const GpuView& g : gpus.gpus) {
    if (!g.cc) {
      b.add(Status::Unknown, g.label + (g.label.starts_with("GPUs ") ? ": their" : ": its") + " compute capability could not be read",
            driver.image ? "Give --target-gpu as major.minor, e.g. 9.0." : "Check the GPU with nvidia-smi; rerun.");
      continue;
    }
    const Version& cc = *g.cc;
    const GpuArchRow* arch = m.arch_for_cc(cc);

    // The driver branch dropped the architecture (Volta/Pascal/Maxwell after R580, Kepler after R470).
    if (arch != nullptr && arch->last_driver_branch && driver.version && driver.version->major() > *arch->last_driver_branch) {
      judged_something = true;
      b.add(Status::Fail,
            g.label + " (" + arch->arch + ")" + is_are(g.label) + " not supported by " + driver.label() + ": R" +
                std::to_string(*arch->last_driver_branch) + " is the last driver branch for " + arch->arch,
            "Use a driver of branch R" + std::to_string(*arch->last_driver_branch) + " or older" +
                (arch->last_cuda_major ? " with a CUDA " + std::to_string(*arch->last_cuda_major) + ".x build" : std::string()) +
                ", or newer GPUs.");
    }

    // The driver branch predates the architecture (Blackwell on R535/R550): the driver does not
    // initialise the GPU at all (no CUDA device), whatever the runtime.
    if (arch != nullptr && arch->first_driver_branch && driver.version &&
        driver.version->major() < *arch->first_driver_branch) {
      judged_something = true;
      const std::string first = "R" + std::to_string(*arch->first_driver_branch);
      const std::string first_cuda = arch->first_cuda ? " (CUDA " + arch->first_cuda->str() + ")" : std::string();
      b.add(Status::Fail,
            g.label + is_are(g.label) + " not supported by " + driver.label() + ": " + arch->arch + " CC " + cc.str() +
                " needs driver branch " + first + first_cuda + " or newer, the first that supports it; the driver "
                "does not initialise the GPU (no CUDA device)",
            "Install a driver of branch " + first + " or newer on the nodes with these GPUs" +
                (driver.image ? " (and judge the image with that --target-driver)" : std::string()) +
                (arch->arch == "Blackwell" ? "; Blackwell needs the open GPU kernel modules" : std::string()) + ".");
    } else if (arch == nullptr && driver.image && driver.version) {
      judged_something = true;
      b.add(Status::Unknown,
            g.label + is_are(g.label) + " not in matrix/gpu_arch.tsv: which driver branch supports it is unknown",
            "Check the compute capability given to --target-gpu, or pass --matrix DIR with a gpu_arch.tsv row for CC " +
                cc.str() + ".");
    }

    for (const CudaInUse& c : cudas) {
      judged_something = true;
      const CcRangeRow* range = m.cc_range_for(c.cuda);
      if (range == nullptr) {
        b.add(Status::Unknown, c.label + " is not in the compute-capability table: cannot judge " + g.label,
              "Check the version read, or run with --matrix DIR holding a newer cuda_compute_capability.tsv.");
        continue;
      }
      if (cc < range->min_cc) {
        const CcRangeRow* ok = newest_range_with(m, cc);
        std::string fix;
        if (ok != nullptr) {
          const Version last = ok->cuda_to ? *ok->cuda_to : ok->cuda_from;
          fix = "Use a build for CUDA ≤ " + last.str() + " (a CUDA " + std::to_string(last.major()) + ".x build supports CC " +
                cc_range_text(*ok) + "), or newer GPUs (CC ≥ " + range->min_cc.str() + ").";
        } else {
          fix = "Use newer GPUs (CC ≥ " + range->min_cc.str() + "): no CUDA in the matrix supports CC " + cc.str() + ".";
        }
        b.add(Status::Fail,
              g.label + is_are(g.label) + " not supported by " + c.label + " (CC " + cc_range_text(*range) +
                  "): no kernels can run on it (cudaErrorNoKernelImageForDevice, 209)",
              fix);
      } else if (range->max_cc < cc) {
        const std::string first =
            arch != nullptr && arch->first_cuda ? "CUDA ≥ " + arch->first_cuda->str() : "a newer CUDA";
        b.add(Status::Warn,
              g.label + is_are(g.label) + " newer than " + c.label + " knows (CC " + cc_range_text(*range) +
                  "): only kernels shipped as PTX run, JIT-compiled at start-up",
              "Use a build for " + first + (arch != nullptr ? " (the first CUDA for " + arch->arch + ")" : std::string()) + ".");
      } else {
        b.note(c.label + " supports " + g.label + " (CC " + cc_range_text(*range) + ")");
      }
    }

    for (const FrameworkBuild& fw : rt.frameworks) {
      if (fw.arch_list.empty()) continue;
      judged_something = true;
      const std::string fw_label = fw.name + " " + fw.version;
      const std::string list = join(fw.arch_list, " ");
      switch (match_arch(fw.arch_list, cc)) {
        case ArchMatch::Sass:
          b.note(fw_label + " has SASS for " + g.label);
          break;
        case ArchMatch::PtxOnly:
          b.add(Status::Warn,
                fw_label + " has no " + sm_of(cc) + " SASS for " + g.label + ", only PTX (arch list: " + list +
                    "): every kernel is JIT-compiled at first start (minutes), and it fails under minor-version "
                    "compatibility (no PTX JIT)",
                "Use a build compiled for " + sm_of(cc) + " (e.g. TORCH_CUDA_ARCH_LIST=\"" + cc.str() + "\" for a source build).");
          break;
        case ArchMatch::None:
          b.add(Status::Fail,
                fw_label + " has no kernels for " + g.label + ": arch list " + list + " has no " + sm_of(cc) +
                    " SASS and no PTX ≤ compute_" + std::to_string(cc.major()) + std::to_string(cc.minor()) +
                    " (cudaErrorNoKernelImageForDevice, 209)",
                "Use a build compiled for " + sm_of(cc) +
                    (cc.major() < 8 ? " (e.g. a CUDA 12.x wheel: CUDA 13 builds start at sm_75)" : std::string()) +
                    ", or build from source with TORCH_CUDA_ARCH_LIST=\"" + cc.str() + "\".");
          break;
        case ArchMatch::Unreadable:
          b.evidence()["unreadable_arch_lists"].push_back(fw_label + ": " + list);
          break;
      }
    }
  }

  if (!judged_something && b.status() == Status::Pass) {
    return Verdict::skip("no CUDA runtime or framework found to judge the GPUs' compute capabilities against "
                         "(cuda.runtime reports it)",
                         b.evidence());
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  Each GPU's compute capability (NVML, else the CUDA driver API; in the image profile each
  --target-gpu such as 9.0), the CUDA of every runtime the job loads (cuda.runtime's model: the
  framework's own libcudart, --cuda-runtime, else the loader path; a toolkit nothing of the job
  loads is not judged here) and of each CUDA framework build, the
  framework's compiled architectures where discoverable (torch's arch list: sm_80, sm_90,
  compute_90), and the driver version (or --target-driver). Ranges come from
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
  WARN     a GPU newer than a runtime knows (above its range): only PTX kernels run.
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
    "cuda.arch", Scope::Node, "each GPU's compute capability is supported by the CUDA runtimes and the framework's build",
    kExplain, kInAll, "", &run, "cuda_runtime,gpu_driver,pcie", false, "driver.loaded"};

}  // namespace preflight
