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
  Sass,        // SASS for it: sm_XY, a same-major sm_XW with W <= Y, sm_XYa, or a family sm_XWf
  PtxOnly,     // no SASS, but PTX compute_XY <= CC the driver can JIT
  None,        // neither
  Unreadable,  // no entry of the list could be read
};
ArchMatch match_arch(const std::vector<std::string>& arch_list, const Version& cc);

/// One conclusion judge_cuda_vs_driver can reach, with its message and fix as templates over the
/// judgement's parameters (CudaJudgement::params): a check declares a finding of each it reports with
/// these texts (cuda_finding) and reports the judgement's parameters.
struct CudaOutcome {
  Status status;
  std::string_view message;
  std::string_view fix;
};

/// The finding `code` of a check for one outcome of judge_cuda_vs_driver.
constexpr FindingSpec cuda_finding(std::string_view code, const CudaOutcome& o) {
  return {code, o.status, o.message, o.fix};
}

// Parameters: {what} the thing judged, {driver} the driver's label ("driver 535.104.05 (CUDA 12.2)"),
// {driver_cuda} the CUDA it supports, {cuda} the judged CUDA (major.minor), {min_driver} the driver
// that CUDA needs, {build} the second fix's noun ("a framework build"), {minor_note} how a build of
// the driver's CUDA major runs through minor-version compatibility (or ""), {compat_note} why a
// cuda-compat libcuda does not help (or "").
#define PREFLIGHT_COMPAT_VIA "cuda-compat libcuda {compat_lib} (CUDA {compat_cuda}) over kernel {driver}"
/// How a cuda-compat libcuda carries a newer CUDA ({compat_lib}, {compat_cuda}) over the kernel-mode driver.
inline constexpr std::string_view kCudaCompatVia = PREFLIGHT_COMPAT_VIA;
#define PREFLIGHT_COMPAT_FIX                                                                                  \
  "Install driver ≥ {min_driver} (CUDA {cuda}) and drop the compat directory, or use {build} for CUDA ≤ " \
  "{driver_cuda}{minor_note}."

/// The CUDA version is not in the matrix ({newest}: the newest CUDA it knows).
inline constexpr CudaOutcome kCudaNotInMatrix = {
    Status::Unknown,
    "{what} is not in the compatibility matrix (it knows CUDA 10.0–{newest}): cannot tell which driver it needs",
    "Check the version read (see the evidence), or run with --matrix DIR holding a newer cuda_toolkit_driver.tsv."};
/// The driver's CUDA is unknown ({why}, {fix}: DriverView::why and missing_remedy()).
inline constexpr CudaOutcome kCudaDriverUnknown = {Status::Unknown, "cannot judge {what}: {why}", "{fix}"};
/// The driver's CUDA is at least the judged one.
inline constexpr CudaOutcome kCudaBackward = {Status::Pass, "{what} runs on {driver}", ""};
/// Forward compatibility where the GPUs could not be read ({gpus_why}).
inline constexpr CudaOutcome kCudaForwardGpusUnknown = {Status::Warn,
                                                        "{what} relies on forward compatibility (" PREFLIGHT_COMPAT_VIA
                                                        "), which works on datacenter GPUs only; the GPUs "
                                                        "could not be read to confirm it ({gpus_why})",
                                                        PREFLIGHT_COMPAT_FIX};
/// Forward compatibility on an RTX or Quadro GPU ({gpu}).
inline constexpr CudaOutcome kCudaForwardRtx = {
    Status::Warn,
    "{what} relies on forward compatibility (" PREFLIGHT_COMPAT_VIA
    "), which works on {gpu} only if it is an "
    "NGC-Ready RTX SKU (else CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)",
    PREFLIGHT_COMPAT_FIX};
/// Forward compatibility over a kernel branch ({branch}) cuda-compat does not support.
inline constexpr CudaOutcome kCudaForwardBranch = {
    Status::Warn,
    "{what} relies on forward compatibility (" PREFLIGHT_COMPAT_VIA
    "), but kernel branch R{branch} is not a supported "
    "cuda-compat target (R535, R570, R580 and later production branches)",
    PREFLIGHT_COMPAT_FIX};
/// Forward compatibility on datacenter GPUs.
inline constexpr CudaOutcome kCudaForward = {
    Status::Pass, "{what} runs through forward compatibility: " PREFLIGHT_COMPAT_VIA " on datacenter GPUs", ""};
/// Same major, newer minor, and the driver version that decides minor-version compatibility is
/// unreadable ({major}.x needs {minor_min}).
inline constexpr CudaOutcome kCudaMinorCompatUnknown = {
    Status::Unknown,
    "{what} is newer than {driver} and the driver version is unreadable, so whether it meets the {major}.x "
    "minor-version-compatibility minimum {minor_min} is unknown{compat_note}",
    "Make the driver version readable (NVML or /proc/driver/nvidia/version), or install driver ≥ {min_driver}."};
/// Minor-version compatibility: it runs, without PTX JIT.
inline constexpr CudaOutcome kCudaMinorCompat = {
    Status::Warn,
    "{what} is newer than {driver}: it runs through minor-version compatibility, without PTX JIT{compat_note}",
    "It works because {driver} ≥ {minor_min}, the {major}.x minimum, with caveats: no PTX JIT (kernels without SASS "
    "for this GPU fail with cudaErrorUnsupportedPtxVersion, 222) and APIs newer than CUDA {driver_cuda} return "
    "cudaErrorCallRequiresNewerDriver (36). To lift them: driver ≥ {min_driver} (CUDA {cuda}), or {build} for CUDA ≤ "
    "{driver_cuda}."};
/// Newer than the driver supports: the job fails.
inline constexpr CudaOutcome kCudaTooNew = {
    Status::Fail,
    "{what} needs driver ≥ {min_driver}; {driver} supports CUDA ≤ {driver_cuda} (the job fails with "
    "cudaErrorInsufficientDriver, 35: \"driver too old\"){compat_note}",
    "Install driver ≥ {min_driver} (CUDA {cuda}), or use {build} for CUDA ≤ {driver_cuda}{minor_note}."};
#undef PREFLIGHT_COMPAT_FIX
#undef PREFLIGHT_COMPAT_VIA

/// One finding about one CUDA version (a runtime, or the CUDA an NCCL was built for) vs the driver.
struct CudaJudgement {
  Status status = Status::Unknown;
  std::string rule;  // "backward", "minor-version", "forward", "too-new", "unknown"
  std::string summary;
  std::string remedy;
  const CudaOutcome* outcome = nullptr;              // which conclusion (one of the kCuda* above)
  nlohmann::json params = nlohmann::json::object();  // its parameters: summary and remedy are its templates rendered
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
