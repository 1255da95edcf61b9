// SPDX-License-Identifier: MIT
// The subcommands of preflight-gpu-probe, the contained GPU helper. Each returns the one JSON
// document the helper prints; driver and library errors are inside it (Probed errors, SmokeResult
// failed_step), only a crash or a hang is out of band.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/facts/gpu.hpp"

namespace preflight::helper {

/// `driver`: {"nvml_driver_version": Probed<string>, "cuda_driver_version": Probed<int>,
/// "loaded_libraries": [real paths], "nvml_gpus": Probed<[NvmlGpu]> (with CPU affinity, NUMA node and
/// NVLinks), "cuda_devices": Probed<[CudaDevice]>, "gpu_pairs": Probed<[GpuPair]> (NVML's path,
/// NVLink count and P2P status for every pair a < b)}
nlohmann::json run_driver();

/// `smoke --ordinal N --bytes B`: primary context on device N, allocate, cuMemsetD32 0x5AA5F00D,
/// synchronise, copy back, verify every word, free.
SmokeResult run_smoke(int ordinal, std::uint64_t bytes);

/// `p2p --bytes B [--pair-timeout S]`: for each ordered pair (i,j) of CUDA devices with
/// cuDeviceCanAccessPeer == 1, a real peer copy with peer access enabled: a pattern (per pair) on i,
/// zeros on j, cuMemcpyPeerAsync between two events, cuEventQuery polled until S seconds, then head,
/// middle and tail samples read back and compared. Writes JSON Lines to stdout, flushed per line:
///   {"event":"start","src":i,"dst":j}           before each copy
///   {"event":"done", <PeerCopy fields>}          after it (also for pairs without peer access)
///   {"event":"error","failed_step":..,"error":..} when nothing could be tried (cuInit failed)
///   {"event":"end"}
/// A copy that does not finish within S seconds is reported (failed_step "deadline") and the
/// helper ends there: a stuck copy leaves the device unusable for the others. Returns the exit status.
int run_p2p(std::uint64_t bytes, double pair_timeout_s);

/// `nccl --lib PATH` (PATH empty: the soname libnccl.so.2): ncclGetVersion, the real path, and the
/// CUDA build read from the "NCCL version X+cudaA.B" string inside the file. No NCCL init.
Probed<NcclLibrary> run_nccl(const std::string& lib);

}  // namespace preflight::helper
