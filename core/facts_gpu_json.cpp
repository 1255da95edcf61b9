// SPDX-License-Identifier: MIT
// The JSON conversions of the GPU stack's fact structs (core/facts/gpu.hpp), defined once here.
#include "core/facts/gpu.hpp"

namespace preflight {

PREFLIGHT_JSON_DEFINE(GpuProcess, pid, used_bytes)
PREFLIGHT_JSON_DEFINE(NvmlGpu, index, name, uuid, pci_bus_id, cc_major, cc_minor, memory_total, memory_used,
                      persistence_mode, mig_enabled, processes, cpu_affinity, numa_node, nvlinks_active,
                      nvlink_remotes)
PREFLIGHT_JSON_DEFINE(GpuPair, a, b, path, nvlinks, p2p_read, p2p_write, p2p_nvlink)
PREFLIGHT_JSON_DEFINE(PeerCopy, src, dst, src_bus_id, dst_bus_id, can_access, ok, failed_step, error, bytes, seconds,
                      gbps)
PREFLIGHT_JSON_DEFINE(CudaDevice, ordinal, name, uuid, pci_bus_id, cc_major, cc_minor, memory_total)
PREFLIGHT_JSON_DEFINE(SmokeResult, ordinal, bytes, ok, failed_step, error, seconds)
PREFLIGHT_JSON_DEFINE(DriverFacts, kernel_module_version, nvml_driver_version, cuda_driver_version, loaded_libraries,
                      nvml_gpus, cuda_devices, smoke, helper, gpu_pairs, peer_copies, nvml_init_seconds,
                      cuda_init_seconds)
PREFLIGHT_JSON_DEFINE(CudaRuntime, version, kind, path, detail, loaded_by)
PREFLIGHT_JSON_DEFINE(FrameworkBuild, name, version, cuda, arch_list, path, build, library, cudart_soname,
                      cudart_path, cudart_via, nccl_path, nccl_via, searched)
PREFLIGHT_JSON_DEFINE(LibraryCandidate, path, source, loaded_by)
PREFLIGHT_JSON_DEFINE(PythonInterpreter, exe, real, version, prefix, paths, error)
PREFLIGHT_JSON_DEFINE(RuntimeFacts, runtimes, nccl_candidates, frameworks, searched, problems, nvidia_require_cuda,
                      python)
PREFLIGHT_JSON_DEFINE(NcclLibrary, path, source, version_code, version, cuda_build)
PREFLIGHT_JSON_DEFINE(GpuStackFacts, driver, runtime, nccl)

}  // namespace preflight
