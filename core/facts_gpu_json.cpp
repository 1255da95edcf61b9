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
PREFLIGHT_JSON_DEFINE(SmokeResult, ordinal, bytes, ok, failed_step, error, seconds, xid_watch)
PREFLIGHT_JSON_DEFINE(DriverFacts, kernel_module_version, nvml_driver_version, cuda_driver_version, loaded_libraries,
                      nvml_gpus, cuda_devices, smoke, helper, gpu_pairs, peer_copies, nvml_init_seconds,
                      cuda_init_seconds, health, kernel_log)
PREFLIGHT_JSON_DEFINE(KernelGpuEvent, kind, code, bus_id, usec, text)
PREFLIGHT_JSON_DEFINE(KernelLogFacts, source, records, events, nvidia_lines)
PREFLIGHT_JSON_DEFINE(GpuHealth, index, pci_bus_id, name, mig_enabled, persistence_mode, lost, unavailable,
                      remap_correctable, remap_uncorrectable, remap_pending, remap_failure, remap_banks_exhausted,
                      retired_pages_pending, retired_pages_dbe, retired_pages_sbe, ecc_enabled, ecc_pending_enabled,
                      ecc_dbe_volatile, ecc_dbe_aggregate, ecc_sbe_volatile, recovery_action, load_samples,
                      clock_event_reasons, slowdown_samples, pstate, temperature_c, slowdown_temperature_c,
                      nvlinks_present, nvlinks_up, nvlinks_down, nvlink_replay_delta, nvlink_crc_delta, pcie_gen,
                      pcie_width, pcie_gen_max, pcie_width_max, pcie_gen_gpu_max, pcie_replay_before,
                      pcie_replay_after, fabric_info_version, fabric_state, fabric_status, fabric_health_mask,
                      fabric_health_summary, fabric_cluster_uuid, fabric_clique_id)
PREFLIGHT_JSON_DEFINE(NvmlXidEvent, gpu, pci_bus_id, xid, seconds, gpu_instance, compute_instance)
PREFLIGHT_JSON_DEFINE(NvmlXidGpu, index, pci_bus_id, registered, why)
PREFLIGHT_JSON_DEFINE(NvmlXidWatch, collected, unavailable, work, start_s, end_s, gpus, events, truncated)
PREFLIGHT_JSON_DEFINE(GpuHealthFacts, driver_version, gpus, load, loaded, load_seconds, nvswitches,
                      fabric_manager_running, xid_watch)
PREFLIGHT_JSON_DEFINE(CudaRuntime, version, kind, path, detail, loaded_by)
PREFLIGHT_JSON_DEFINE(FrameworkBuild, name, version, cuda, arch_list, path, build, library, cudart_soname,
                      cudart_path, cudart_via, nccl_path, nccl_via, searched)
PREFLIGHT_JSON_DEFINE(LibraryCandidate, path, source, loaded_by)
PREFLIGHT_JSON_DEFINE(PythonInterpreter, exe, real, version, prefix, paths, error)
PREFLIGHT_JSON_DEFINE(RuntimeFacts, runtimes, nccl_candidates, frameworks, searched, absent, problems,
                      nvidia_require_cuda, python)
PREFLIGHT_JSON_DEFINE(NcclLibrary, path, source, version_code, version, cuda_build)
PREFLIGHT_JSON_DEFINE(GpuStackFacts, driver, runtime, nccl)

}  // namespace preflight
