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
/// "loaded_libraries": [real paths], "nvml_gpus": Probed<[NvmlGpu]>, "cuda_devices": Probed<[CudaDevice]>}
nlohmann::json run_driver();

/// `smoke --ordinal N --bytes B`: primary context on device N, allocate, cuMemsetD32 0x5AA5F00D,
/// synchronise, copy back, verify every word, free.
SmokeResult run_smoke(int ordinal, std::uint64_t bytes);

/// `nccl --lib PATH` (PATH empty: the soname libnccl.so.2): ncclGetVersion, the real path, and the
/// CUDA build read from the "NCCL version X+cudaA.B" string inside the file. No NCCL init.
Probed<NcclLibrary> run_nccl(const std::string& lib);

}  // namespace preflight::helper
