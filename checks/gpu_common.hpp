// SPDX-License-Identifier: MIT
// What the GPU checks (driver.loaded, cuda.smoke, gpu.count, gpu.busy) share: one verdict for "no
// driver on this node" in the same words everywhere (without a driver every GPU check FAILs in the
// node and job profiles, since the job needs a GPU, and SKIPs in the image profile), one mapping of
// a contained helper's failure (crash, hang, API error) to a verdict, and the keys that join NVML's
// view of a GPU to CUDA's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.hpp"
#include "core/facts/gpu.hpp"
#include "core/verdict.hpp"

namespace preflight {

/// The fix for a node without a usable driver, in every GPU check.
inline constexpr std::string_view kNoDriverRemedy =
    "Install the NVIDIA driver on the node (then reboot, or `modprobe nvidia`); in a container, start it with "
    "the NVIDIA container runtime (`docker run --gpus all …`, `--runtime=nvidia`; Kubernetes: request "
    "nvidia.com/gpu with the NVIDIA device plugin) so the driver's libraries and /dev/nvidia* are mounted in; "
    "when building an image without a GPU, run `preflight --profile image --target-driver VERSION` instead.";

/// The fixes of a GPU fact the contained helper could not deliver, by why (GpuShared::Kind).
inline constexpr std::string_view kHelperCrashedFix =
    "The job's first GPU call will die the same way (exit -11 or -6). Look for the cause in driver.loaded and "
    "cuda.runtime (a CUDA runtime newer than the driver, a mismatched or forward-compatibility libcuda on "
    "LD_LIBRARY_PATH), and in `dmesg | grep -i -e NVRM -e Xid`; if the driver install is broken, reinstall it and "
    "reboot.";
inline constexpr std::string_view kHelperHungFix =
    "The driver did not answer within the helper's deadline (a share of --timeout, named above). GPUs that are only "
    "slow to initialise (persistence mode off: every process sets them up again) need a larger --timeout, and "
    "nvidia-persistenced removes the delay. One that never answers means the job would hang on its first GPU call: "
    "check `nvidia-smi` (a hang there too means a wedged GPU or driver), `dmesg | grep -i -e NVRM -e Xid` (Xid 79: "
    "fell off the bus), and that nvidia-persistenced / nvidia-fabricmanager run; drain the node and reset the GPU "
    "(`nvidia-smi -r`) or reboot it.";
inline constexpr std::string_view kDriverErrorFix =
    "The job's CUDA calls will fail with the same error; see driver.loaded for the driver's state and fix that first "
    "(a reboot after a driver upgrade, `modprobe nvidia`, or the NVIDIA container runtime).";
inline constexpr std::string_view kHelperGarbageFix =
    "The helper talks to the driver in a child process; garbage usually means the driver library printed to stdout "
    "or crashed half-way. Run `nvidia-smi` and check `dmesg | grep -i NVRM`; report it as a preflight bug with "
    "--json output if the driver is healthy.";
inline constexpr std::string_view kGpuNotReadFix =
    "Run preflight on the node itself, as the job's user, so its GPU helper can reach the driver (see the detail).";

/// Neither libnvidia-ml.so.1 nor libcuda.so.1 could be loaded (whether or not a kernel module is
/// there): what is known of it. nullopt when some driver is present.
struct NoDriver {
  std::optional<std::string> module;  // the nvidia kernel module's version, when one is loaded
  std::string detail;                 // why NVML could not be loaded
  nlohmann::json evidence;            // {"nvml", "cuda", "kernel_module"}
};
std::optional<NoDriver> find_no_driver(const DriverFacts& d);

/// One of the GPU checks' shared findings: no driver on the node, or a GPU fact the contained
/// helper could not deliver, by why. Each check that can meet them declares their rows in its own
/// table under its own codes (PREFLIGHT_GPU_SHARED_FINDINGS), and reports them with
/// shared_verdict or add_shared: the message and fix are the same templates in every check.
struct GpuShared {
  enum class Kind {
    NoDriver,
    NotGathered,
    HelperCrashed,
    HelperHung,
    LibraryMissing,
    DriverError,
    HelperGarbage,
    NotRead
  };
  Kind kind = Kind::NotRead;
  /// {consequence} for NoDriver ("the job needs a GPU"); for a missing fact {what} ("the CUDA
  /// devices"), {detail} (the probe's error), {source} (the helper that read it, when known; {from}
  /// says "{source}: " then) and {consequence} ("" or "; the job needs a GPU").
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json evidence = nlohmann::json::object();
  std::string cause;  // "driver.loaded" where that check's result explains it
  Status status() const;
};
inline constexpr std::size_t kGpuSharedKinds = 8;

/// A check's rows of the shared findings, in GpuShared::Kind order: ID is the check's id, WHO a
/// prefix of every message ("" or "{who}" where the check names the ranks a finding is about).
#define PREFLIGHT_GPU_SHARED_FINDINGS(ID, WHO)                                                                \
  ::preflight::FindingSpec{ID "/no-driver", ::preflight::Status::Fail,                                        \
                           WHO "no NVIDIA driver on this node; {consequence}", ::preflight::kNoDriverRemedy}, \
      ::preflight::FindingSpec{ID "/not-gathered", ::preflight::Status::Unknown,                              \
                               WHO "{what} was not gathered: {detail}", ::preflight::kHungProbeRemedy},       \
      ::preflight::FindingSpec{ID "/helper-crashed", ::preflight::Status::Fail,                               \
                               WHO "{what} could not be read: {from}{detail}{consequence}",                   \
                               ::preflight::kHelperCrashedFix},                                               \
      ::preflight::FindingSpec{ID "/helper-hung", ::preflight::Status::Fail,                                  \
                               WHO "{what} could not be read: {from}{detail}{consequence}",                   \
                               ::preflight::kHelperHungFix},                                                  \
      ::preflight::FindingSpec{ID "/library-missing", ::preflight::Status::Fail,                              \
                               WHO "{what} could not be read: {from}{detail}{consequence}",                   \
                               ::preflight::kNoDriverRemedy},                                                 \
      ::preflight::FindingSpec{ID "/driver-error", ::preflight::Status::Fail,                                 \
                               WHO "{what} could not be read: {from}{detail}{consequence}",                   \
                               ::preflight::kDriverErrorFix},                                                 \
      ::preflight::FindingSpec{                                                                               \
          ID "/helper-garbage", ::preflight::Status::Fail,                                                    \
          WHO "{what} could not be read: the GPU helper's answer was garbage ({from}{detail}){consequence}",  \
          ::preflight::kHelperGarbageFix},                                                                    \
      ::preflight::FindingSpec {                                                                              \
    ID "/not-read", ::preflight::Status::Unknown, WHO "could not read {what}: {from}{detail}",                \
        ::preflight::kGpuNotReadFix                                                                           \
  }

using GpuSharedRows = std::array<FindingSpec, kGpuSharedKinds>;

/// A check's whole table: its shared rows, then its own.
template <std::size_t N>
constexpr std::array<FindingSpec, kGpuSharedKinds + N> with_shared(const GpuSharedRows& shared,
                                                                   const std::array<FindingSpec, N>& own) {
  std::array<FindingSpec, kGpuSharedKinds + N> all{};
  for (std::size_t i = 0; i < kGpuSharedKinds; ++i) all[i] = shared[i];
  for (std::size_t i = 0; i < N; ++i) all[kGpuSharedKinds + i] = own[i];
  return all;
}

/// The shared finding for a node without a driver; nullopt when some driver is present.
/// `consequence` ends the message: "the job needs a GPU".
std::optional<GpuShared> no_driver(const DriverFacts& d, std::string_view consequence);

/// A helper-gathered fact that is missing: FAIL when the reason is one the job will meet too
/// (the helper crashed or hung, the library is missing, the driver returned an error, the helper's
/// answer was garbage), UNKNOWN otherwise (not probed, not permitted); a fact a hung probe left
/// behind is NotGathered. `what` names the fact: "the CUDA devices"; `consequence` is added to a
/// FAIL's message ("the job needs a GPU") when not empty.
GpuShared missing_gpu_fact(const ProbeError& err, std::string_view source, std::string_view what,
                           std::string_view consequence);

/// The evidence of a GPU fact the helper could not deliver: {"error", "detail", "source"} (the same
/// missing_gpu_fact gives), for a check that states such an error in a finding of its own.
nlohmann::json gpu_fact_evidence(const ProbeError& err, std::string_view source);

/// The verdict of a shared finding by the check's rows, its evidence and cause kept.
Verdict shared_verdict(const GpuSharedRows& rows, const GpuShared& shared);
/// The same finding added to a builder, with `extra` parameters ({who}).
void add_shared(VerdictBuilder& b, const GpuSharedRows& rows, const GpuShared& shared,
                nlohmann::json extra = nlohmann::json::object());

/// True when the error is one the job will meet too (see missing_gpu_fact).
bool job_meets_it(ProbeErrc code);

/// 12040 -> "12.4".
std::string cuda_version_text(int v);

/// "GPU-6A2B…" and "6a2b…" compare equal; MIG uuids keep their prefix.
std::string uuid_key(std::string_view uuid);
/// "00000000:18:00.0", "0000:18:00.0" and "0000:18:00.0" compare equal.
std::string bus_key(std::string_view bus_id);

/// The same GPU in NVML's and CUDA's lists: by UUID, else by PCI bus id.
bool same_gpu(const NvmlGpu& n, const CudaDevice& c);

/// {cvd_note}: " (CUDA_VISIBLE_DEVICES={cvd_value})" (the value as the rank has it, printable), or ""
/// where the rank does not set it.
nlohmann::json cvd_note_params(const EnvSnapshot& env);

/// Whole MiB: "30000 MiB" (what nvidia-smi prints).
std::string mib_text(std::uint64_t bytes);

/// "GPU 3 (00000000:5D:00.0)": a GPU of NVML's list as the findings name it (its UUID where NVML
/// gave no bus id, its index alone where it gave neither).
std::string nvml_gpu_text(const NvmlGpu& g);

/// A GPU of NVML's list that is lost or needs a reset (NvmlGpu::lost), as a finding names it with
/// its cause: "GPU 3 (00000000:5D:00.0): nvmlDeviceGetName: NVML_ERROR_GPU_IS_LOST (GPU is lost)".
/// Every GPU check that reads a GPU reports a lost one with its table's "<id>/gpu-lost" row
/// (kLostGpuMessage, kLostGpuRemedy) and judges the others.
std::vector<std::string> lost_nvml_gpus(const std::vector<const NvmlGpu*>& gpus);
std::vector<std::string> lost_nvml_gpus(const std::vector<NvmlGpu>& gpus);

/// The message and fix of a GPU that is lost or needs a reset: {gpus} names them with the error.
inline constexpr std::string_view kLostGpuMessage = "{gpus} — the GPU is lost or needs a reset";
inline constexpr std::string_view kLostGpuRemedy =
    "The GPU no longer answers the driver: drain the node (`scontrol update nodename=$(hostname -s) state=drain "
    "reason=\"GPU lost\"`), look for the Xid in `dmesg | grep -i -e NVRM -e Xid` (Xid 79: fallen off the bus), "
    "then reset the GPU (`nvidia-smi -r -i <gpu>`, no process may use it) or reboot the node; if it comes back "
    "lost, reseat or replace the GPU.";

/// The message and fix of GPUs NVML answered another error for (NvmlGpu::error): {gpus} names
/// them with the error; what the error hid is not judged on them, the other GPUs are.
inline constexpr std::string_view kGpuReadErrorMessage = "NVML could not read {gpus}; the rest is judged";
inline constexpr std::string_view kGpuReadErrorFix =
    "Run `nvidia-smi -q -i <gpu>` on the node: the same error there points at the driver or the GPU (`dmesg | grep "
    "-i -e NVRM -e Xid`); a reboot after a driver upgrade clears a mismatch.";

}  // namespace preflight
