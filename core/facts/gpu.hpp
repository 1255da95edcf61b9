// SPDX-License-Identifier: MIT
// Facts about the NVIDIA stack: the driver and its GPUs (gathered by the contained GPU helper
// through NVML and the CUDA driver API), the CUDA runtimes the job will load (found on disk,
// without running Python), and the NCCL library it will load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/facts/gpu_health.hpp"
#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

/// A process holding memory on a GPU (NVML's compute processes). Inside containers the pid is the
/// host's pid.
struct GpuProcess {
  int pid = 0;
  std::uint64_t used_bytes = 0;
};
PREFLIGHT_JSON_DECLARE(GpuProcess)

/// A GPU as NVML sees it (every GPU of the node, in PCI order, regardless of CUDA_VISIBLE_DEVICES).
struct NvmlGpu {
  int index = 0;
  std::string name;
  std::string uuid;        // "GPU-6a2b…"
  std::string pci_bus_id;  // "00000000:18:00.0" as NVML prints it
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t memory_total = 0;
  std::uint64_t memory_used = 0;
  std::optional<bool> persistence_mode;
  std::optional<bool> mig_enabled;
  std::vector<GpuProcess> processes;
  std::vector<int> cpu_affinity;            // nvmlDeviceGetCpuAffinity: the CPUs local to the GPU (empty: not reported)
  std::optional<int> numa_node;             // nvmlDeviceGetNumaNodeId, else the memory affinity's single node
  int nvlinks_active = 0;                   // NVLinks in state enabled
  std::vector<std::string> nvlink_remotes;  // per active link, the remote end's PCI bus id (peer GPU or NVSwitch)
  /// The first call on this GPU that answered NVML_ERROR_GPU_IS_LOST or NVML_ERROR_RESET_REQUIRED:
  /// "nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST (GPU is lost)". The GPU's other fields are what was
  /// read before it (the index always, the bus id where NVML still answers it). Empty: none did.
  std::string lost;
  /// The first other error of a call on this GPU (not NOT_SUPPORTED): "nvmlDeviceGetMemoryInfo:
  /// NVML_ERROR_UNKNOWN (Unknown Error)"; the field it reads stays empty. The other GPUs are read
  /// as usual: an error on one GPU is a fact about that GPU. Empty: none.
  std::string error;
};
PREFLIGHT_JSON_DECLARE(NvmlGpu)

/// One pair of GPUs as NVML sees it (a < b, NVML indexes).
struct GpuPair {
  int a = 0;
  int b = 0;
  std::string path;      // nvmlDeviceGetTopologyCommonAncestor as nvidia-smi prints it: PIX, PXB, PHB, NODE, SYS
  int nvlinks = 0;       // NVLinks joining them, directly or through NVSwitches (NV# in nvidia-smi)
  std::string p2p_read;  // nvmlDeviceGetP2PStatus: "OK", "CNS", "GNS", "TNS", "DR", "NS", "U"
  std::string p2p_write;
  std::string p2p_nvlink;
  /// Why the pair's fields are empty: one of its GPUs is lost or could not be read ("GPU 3 is
  /// lost"), or NVML's call for the pair failed ("nvmlDeviceGetP2PStatus: NVML_ERROR_UNKNOWN
  /// (Unknown Error)"). Empty: read.
  std::string error;
};
PREFLIGHT_JSON_DECLARE(GpuPair)

/// A real peer copy src -> dst with peer access enabled, run by the contained helper.
struct PeerCopy {
  int src = 0;  // CUDA ordinals
  int dst = 0;
  std::string src_bus_id;
  std::string dst_bus_id;
  bool can_access = false;  // cuDeviceCanAccessPeer
  bool ok = false;
  std::string failed_step;  // "cuCtxEnablePeerAccess", "cuMemcpyPeerAsync", "deadline", "verify", ...
  std::string error;        // "CUDA_ERROR_... (N)", "did not finish within 4.0 s", "word 17 is ..."
  std::uint64_t bytes = 0;
  double seconds = 0;
  double gbps = 0;  // bytes / seconds / 1e9
};
PREFLIGHT_JSON_DECLARE(PeerCopy)

/// A device as the CUDA driver API sees it in this process (honours CUDA_VISIBLE_DEVICES).
struct CudaDevice {
  int ordinal = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t memory_total = 0;
  /// The first call on this device that failed: "cuDeviceGetUuid: CUDA_ERROR_UNKNOWN (999)"; the
  /// fields it reads stay empty, and the other devices are read as usual. Empty: none.
  std::string error;
};
PREFLIGHT_JSON_DECLARE(CudaDevice)

/// The smoke test on this rank's GPU: context, allocate, write a pattern, read it back.
struct SmokeResult {
  int ordinal = 0;
  std::uint64_t bytes = 0;
  bool ok = false;
  std::string failed_step;  // "cuInit", "cuCtxCreate", "cuMemAlloc", "cuMemsetD32", "cuMemcpyDtoH", "verify"
  std::string error;        // "CUDA_ERROR_NO_DEVICE (100)", "word 17 is 0x00000000, wrote 0x5AA5F00D"
  double seconds = 0;
  /// The XIDs NVML reported on this GPU while the test ran (registered before the allocation).
  NvmlXidWatch xid_watch;
};
PREFLIGHT_JSON_DECLARE(SmokeResult)

struct DriverFacts {
  Probed<std::string> kernel_module_version;  // /proc/driver/nvidia/version, else /sys/module/nvidia/version
  Probed<std::string> nvml_driver_version;    // nvmlSystemGetDriverVersion: the user-space library
  Probed<int> cuda_driver_version;            // cuDriverGetVersion: 12040 = CUDA 12.4
  std::vector<std::string> loaded_libraries;  // real paths of libnvidia-ml / libcuda that were loaded
  Probed<std::vector<NvmlGpu>> nvml_gpus;
  Probed<std::vector<CudaDevice>> cuda_devices;
  Probed<SmokeResult> smoke;
  std::string helper;                         // how the contained helper ended: "exited with status 0 after 0.3 s"
  Probed<std::vector<GpuPair>> gpu_pairs;     // NVML's P2P matrix (every pair of NVML GPUs)
  Probed<std::vector<PeerCopy>> peer_copies;  // the real peer copies (pairs where P2P is claimed)
  // How long the driver helper's initialisation took (seconds; unset: not reached or not reported).
  // Without persistence mode the first init of every process sets up each GPU: seconds on 8 GPUs.
  std::optional<double> nvml_init_seconds;  // nvmlInit_v2
  std::optional<double> cuda_init_seconds;  // cuInit(0)
  // The health of every GPU of the node (the helper's `health` run, core/facts/gpu_health.hpp):
  // gathered once per node (local rank 0) and only when a check that reads it is selected.
  Probed<GpuHealthFacts> health = Probed<GpuHealthFacts>::error(ProbeErrc::Unsupported, "not probed");
  // This boot's kernel log, NVIDIA events only (gpu.xid); NoPermission without CAP_SYSLOG.
  Probed<KernelLogFacts> kernel_log = Probed<KernelLogFacts>::error(ProbeErrc::Unsupported, "not probed");
};
PREFLIGHT_JSON_DECLARE(DriverFacts)

/// A CUDA runtime found on the node, and whether the job loads it. Each runtime appears once: a
/// toolkit's libcudart on the loader path is the toolkit's row, a wheel's libcudart that torch
/// loads is torch's row.
struct CudaRuntime {
  std::string version;  // "12.4" or "12.4.127"
  std::string kind;     // "toolkit", "loader", "wheel", "torch", "container", "explicit"
  std::string path;     // the file it was read from (the libcudart the framework loads, for "torch")
  std::string detail;   // "torch 2.5.1+cu124 loads libcudart.so.12 from nvidia-cuda-runtime-cu12 12.4.127 (…)"
  // Who of the job loads it: "torch 2.5.1+cu124", "--cuda-runtime", "the loader path" (no framework
  // found: whatever the job's binaries load). Empty: nothing of the job loads it (a toolkit beside a
  // framework with its own runtime, a wheel of another soname): reported, never decisive.
  std::string loaded_by;
};
PREFLIGHT_JSON_DECLARE(CudaRuntime)

/// A framework build found in a Python environment, and the CUDA runtime and NCCL it loads,
/// resolved by soname the way ld.so would from its own library's DT_RPATH/DT_RUNPATH.
struct FrameworkBuild {
  std::string name;                    // "torch"
  std::string version;                 // "2.5.1+cu124"
  std::string cuda;                    // "12.4" (torch.version.cuda); empty for a CPU build
  std::vector<std::string> arch_list;  // compiled architectures, "sm_80", "compute_90": the fatbins of `library`
  std::string arch_source;             // where arch_list came from ("libtorch_cuda.so .nv_fatbin: 3712 entries"),
                                       // or why it is empty ("not read: ...")
  std::string path;                    // torch/version.py
  std::string build;                   // "cuda", "cpu" (cuda = None, hip = None) or "rocm"
  std::string library;        // the torch library whose dynamic section was read ("…/torch/lib/libtorch_cuda.so")
  std::string cudart_soname;  // "libcudart.so.12" (DT_NEEDED, else from torch.version.cuda)
  std::string cudart_path;    // where the loader finds it; "" when it finds it nowhere (or it is linked in)
  std::string cudart_via;     // "DT_RPATH of libtorch_cuda.so: $ORIGIN/../../nvidia/cuda_runtime/lib", "linked in"
  std::string nccl_path;      // the libnccl.so.2 it loads; "" for none
  std::string nccl_via;       // how: as cudart_via; "linked in" (static NCCL); "none" (a CPU build)
  std::vector<std::string> searched;  // where the loader looked for cudart_soname, in order
  /// The nccl* symbols `library` needs that the libnccl at nccl_path does not export: `import torch`
  /// fails with "undefined symbol" (ld.so binds them all at load).
  std::vector<std::string> nccl_missing;
  std::string nccl_symbols;  // what was compared ("41 nccl* symbols needed, all exported"), or why not ("not read: …")
};
PREFLIGHT_JSON_DECLARE(FrameworkBuild)

/// A library file the job may load, and why it would be that one.
struct LibraryCandidate {
  std::string path;
  std::string source;     // "--nccl-lib", "wheel nvidia-nccl-cu12 2.21.5", "LD_LIBRARY_PATH", "ld.so.cache"
  std::string loaded_by;  // "torch 2.5.1+cu124", "--nccl-lib", "the loader path"; "" when nothing of the job does
};
PREFLIGHT_JSON_DECLARE(LibraryCandidate)

/// What the job's interpreter said when asked (EXE -B -S -c: the sys.path that `site` would build,
/// without executing any .pth import line or sitecustomize, and where `import torch` would come
/// from, as JSON): --python EXE, else python3 on the job's PATH.
struct PythonInterpreter {
  std::string exe;                 // as given, PATH lookup resolved
  std::string source;              // "--python", "python3 on the job's PATH"
  std::string real;                // its real path (symlinks resolved)
  std::string version;             // "3.11.2"
  std::string prefix;              // sys.prefix
  std::vector<std::string> paths;  // the directories searched, in import order
  std::string torch;               // importlib.util.find_spec("torch").origin; "" when it imports none
  std::string error;               // why it could not be asked (crash, deadline, not JSON): the check is UNKNOWN
};
PREFLIGHT_JSON_DECLARE(PythonInterpreter)

struct RuntimeFacts {
  std::vector<CudaRuntime> runtimes;
  std::vector<LibraryCandidate> nccl_candidates;  // in the order the job would find them
  std::vector<FrameworkBuild> frameworks;
  std::vector<std::string> searched;        // where it looked: site-packages dirs, loader paths
  std::vector<std::string> absent;          // the searched directories that do not exist (a subset of searched)
  std::vector<std::string> problems;        // unreadable or malformed files met on the way (named)
  std::string nvidia_require_cuda;          // NVIDIA_REQUIRE_CUDA as set in the image
  std::optional<PythonInterpreter> python;  // the job's interpreter, asked
  std::string python_not_run;               // why python3 on the job's PATH was not asked ("" asked, or none)
  std::vector<std::string> not_loaded;      // frameworks found that the job does not import, and why
};
PREFLIGHT_JSON_DECLARE(RuntimeFacts)

struct NcclLibrary {
  std::string path;        // the file actually loaded (real path)
  std::string source;      // "--nccl-lib", "wheel nvidia-nccl-cu12", "loader"
  int version_code = 0;    // ncclGetVersion: 22809
  std::string version;     // "2.28.9"
  std::string cuda_build;  // "12.9" from the "NCCL version 2.28.9+cuda12.9" string
};
PREFLIGHT_JSON_DECLARE(NcclLibrary)

struct GpuStackFacts {
  DriverFacts driver;
  RuntimeFacts runtime;
  Probed<NcclLibrary> nccl;
};
PREFLIGHT_JSON_DECLARE(GpuStackFacts)

}  // namespace preflight
