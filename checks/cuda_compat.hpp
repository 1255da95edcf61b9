// SPDX-License-Identifier: MIT
// Shared by cuda.runtime, cuda.arch and nccl.library: the driver and the GPUs a check judges
// against (the node's facts, or --target-driver / --target-gpu in the image profile), and the one
// rule for "a CUDA version vs that driver" (judge_cuda_vs_driver below, after NVIDIA's CUDA
// compatibility guide, https://docs.nvidia.com/deploy/cuda-compatibility/). Pure: facts,
// options and the compatibility matrix in, findings out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "core/version.hpp"
#include "matrix/compat_matrix.hpp"

namespace preflight {

/// The driver a check judges against.
struct DriverView {
  std::optional<Version> version;  // the (kernel-mode) driver: NVML, /proc/driver/nvidia/version, or --target-driver
  std::optional<Version> cuda;     // the CUDA that kernel-mode driver supports (cuDriverGetVersion or the matrix)
  std::string cuda_source;         // "cuDriverGetVersion", "matrix: branch R535"
  std::string why;                 // why `cuda` is missing (empty when known)
  bool image = false;              // from --target-driver
  // The driver is newer than the matrix's newest branch (700 when R620 is the newest) and nothing
  // else says what it supports: `cuda` stays unknown, never extrapolated; `why` says so.
  bool newer_than_matrix = false;
  // No driver on the node at all (nothing answered): what cannot be judged follows from
  // driver.loaded, which says why; `why` is then short and the detail is in the evidence.
  bool missing = false;
  std::string missing_detail;
  // A cuda-compat libcuda the loader resolved (forward compatibility), and the CUDA it reports.
  std::string compat_lib;
  std::optional<Version> compat_cuda;

  /// "driver 535.104.05 (CUDA 12.2)", "the target driver 535.104.05 (CUDA 12.2)", "the driver (CUDA 12.2)".
  std::string label() const;
  nlohmann::json evidence() const;
  /// The fix when `cuda` is unknown: pass --target-driver, update the matrix, or make the driver
  /// visible.
  std::string missing_remedy() const;
};

/// "driver 700 is newer than this matrix (newest R620): update the matrix or pass --matrix".
std::string newer_than_matrix_text(const Version& driver, const CompatMatrix& m);

DriverView driver_view(const CheckContext& ctx, const CompatMatrix& m);

/// A GPU a check judges: a node's GPU or a --target-gpu compute capability.
struct GpuView {
  std::string label;  // "GPU 0 (Tesla V100-SXM2-16GB, CC 7.0)", "target GPU CC 9.0 (Hopper)"
  std::string name;   // empty for target GPUs
  std::optional<Version> cc;
};

struct GpusView {
  std::vector<GpuView> gpus;
  bool known = false;
  bool cpu_only = false;  // --target-gpu none: a CPU-only image, no GPU to judge (gpus empty, known)
  std::string why;        // why the GPU list is missing
};

GpusView gpu_view(const CheckContext& ctx, const CompatMatrix& m);

/// Forward compatibility (cuda-compat) runs on NVIDIA datacenter GPUs and selected NGC-Ready RTX
/// SKUs only; GeForce/TITAN get CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804).
enum class GpuClass { Datacenter, Consumer, Unsure };
GpuClass gpu_class(std::string_view name);

/// How a compiled-architecture list serves a compute capability.
enum class ArchMatch {
  Sass,     // SASS for it: sm_XY, a same-major sm_XW with W <= Y, sm_XYa, or a family sm_XWf
  PtxOnly,  // no SASS, but PTX compute_XY <= CC the driver can JIT
  None,     // neither
  Unreadable,  // no entry of the list could be read
};
ArchMatch match_arch(const std::vector<std::string>& arch_list, const Version& cc);

/// One finding about one CUDA version (a runtime, or the CUDA an NCCL was built for) vs the driver.
struct CudaJudgement {
  Status status = Status::Unknown;
  std::string rule;  // "backward", "minor-version", "forward", "too-new", "unknown"
  std::string summary;
  std::string remedy;
};

/// A CUDA version vs the driver: PASS when the driver's CUDA >= the runtime's; PASS (or WARN) through a
/// cuda-compat libcuda on datacenter GPUs; WARN through minor-version compatibility (same major,
/// driver >= the family minimum; no PTX JIT); FAIL otherwise, naming "driver >= X" and "a build
/// for CUDA <= Y". UNKNOWN for a version the matrix does not know or a driver that is unknown.
/// `what` names the thing judged: "CUDA 12.4 (torch 2.5.1+cu124 at /x/torch/version.py)".
/// `build_noun` is the second fix: "a framework build" ("… for CUDA ≤ 12.2"), "an NCCL build".
CudaJudgement judge_cuda_vs_driver(const Version& cuda, std::string_view what, const DriverView& driver,
                                   const GpusView& gpus, const CompatMatrix& m,
                                   std::string_view build_noun = "a framework build");

/// Whether the job will have GPUs: the node's (NVML, else CUDA, else NVIDIA functions on the PCI
/// bus), or in the image profile the --target-gpu list (--target-gpu none: a CPU-only image).
struct GpuPresence {
  std::optional<bool> has_gpus;  // nullopt: could not be told
  std::string text;              // "8 GPUs (NVML)", "--target-gpu none (a CPU-only image)"
};
GpuPresence gpu_presence(const CheckContext& ctx);

/// The one model of what the job loads (probes/cuda_runtime_probe.cpp resolves it): a runtime row
/// the job loads (its framework's, --cuda-runtime, or the loader path when no framework is found).
inline bool job_loads(const CudaRuntime& r) { return !r.loaded_by.empty(); }
/// The CUDA builds of the frameworks found ("torch 2.5.1+cu124"), and the CPU-only ones.
std::vector<const FrameworkBuild*> cuda_frameworks(const RuntimeFacts& rt);
std::vector<const FrameworkBuild*> cpu_frameworks(const RuntimeFacts& rt);

/// "5.0–12.1" for a compute-capability range row.
std::string cc_range_text(const CcRangeRow& row);

}  // namespace preflight
