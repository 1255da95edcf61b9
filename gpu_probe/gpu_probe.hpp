// SPDX-License-Identifier: MIT
// The subcommands of preflight-gpu-probe, the contained GPU helper. Each returns the one JSON
// document the helper prints; driver and library errors are inside it (Probed errors, SmokeResult
// failed_step), only a crash or a hang is out of band.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/facts/gpu.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"

namespace preflight::helper {

/// The host buffer through which device memory is filled and read back (the smoke test's
/// verification, the all_reduce's staging): one slice reused, never a host copy of a whole
/// allocation, whose pages would each cost a fault on every GPU.
constexpr std::size_t kHostStageBytes = std::size_t{1} << 20;

/// "NVML_ERROR_GPU_IS_LOST"; nullptr for a code nvml_api.hpp does not name.
const char* nvml_code_name(nvml::nvmlReturn_t rc);

/// `health [--max-load S]`: GpuHealthFacts (core/facts/gpu_health.hpp) for every GPU NVML sees:
/// memory health, NVLink state and error counters, PCIe link and fabric state, and clock event
/// reasons, P-state, PCIe link and temperature sampled while every CUDA device runs cuMemsetD32
/// (two sample rounds at least, the first as the load starts, whatever S; then until each GPU has 5
/// samples at P0, S seconds at most, default 1), and the XIDs NVML reports on
/// any GPU while that load runs (xid_watch: registered before the load, read at every sample
/// round and after it). {"error": why} when NVML cannot be used at all.
nlohmann::json run_health(double max_load_s);

/// `driver`: {"nvml_driver_version": Probed<string>, "cuda_driver_version": Probed<int>,
/// "loaded_libraries": [real paths], "nvml_gpus": Probed<[NvmlGpu]> (with CPU affinity, NUMA node and
/// NVLinks), "cuda_devices": Probed<[CudaDevice]>, "gpu_pairs": Probed<[GpuPair]> (NVML's path,
/// NVLink count and P2P status for every pair a < b)}
nlohmann::json run_driver();

/// `hold --seconds S`: a client of the driver while preflight's other helpers run. With persistence
/// mode off the driver tears the GPUs' state down when its last client exits, and every new process
/// initialises them again (seconds per GPU on a big node): this one calls cuInit (no context, so no
/// GPU memory and no entry in the GPUs' process lists), prints {"held": true, "cuda_init_seconds": s}
/// (or {"held": false, "error": why}, and exits 0), then waits until preflight stops it or S seconds
/// have passed. Returns the exit status.
int run_hold(double seconds);

/// `smoke --ordinal N --bytes B`: primary context on device N, allocate, cuMemsetD32 0x5AA5F00D,
/// synchronise, copy back, verify every word, free; xid_watch: the XIDs NVML reports on that GPU
/// (found by its PCI bus id) meanwhile, registered before the context is made.
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

/// `nccl-id --root ADDR:PORT [--lib PATH]`: NCCL_COMM_ID=ADDR:PORT (the bootstrap root, started by
/// rank 0's init; without a root the id would point at a thread of this short-lived helper), then
/// ncclGetUniqueId. Prints one JSON line: {"event":"id","id":<256 hex digits>,"lib","version","root"}
/// or {"event":"error","step":"root"|"dlopen"|"dlsym"|"ncclGetUniqueId","error":..}. Returns 0.
int run_nccl_id(const std::string& lib, const std::string& root);

/// `nccl-allreduce`: one rank of an all_reduce.
struct AllreduceArgs {
  std::string id_hex;  ///< the unique id from nccl-id (256 hex digits)
  std::string root;    ///< NCCL_COMM_ID (ADDR:PORT); empty: inherited from the environment
  std::string lib;     ///< libnccl path; empty: the soname
  int rank = 0;
  int nranks = 1;
  int device = 0;           ///< CUDA ordinal
  std::uint64_t bytes = 0;  ///< message size (rounded down to whole elements)
  int repeats = 5;          ///< timed iterations after one warm-up; the best is kept
  double timeout_s = 30.0;  ///< the helper's own deadline, from its start
};

/// Whether `nranks` ranks use ncclInt64 (the exact sums overflow int32 beyond 2048 ranks).
bool nccl_allreduce_uses_int64(int nranks);

/// `nccl-allreduce --id HEX --rank R --nranks N --device D --bytes B [--repeats K] [--timeout S]
/// [--lib PATH] [--root ADDR:PORT]`: the device's primary context, a send buffer with element i =
/// (R+1)*((i%1021)+1) and a poisoned receive buffer, ncclCommInitRankConfig with blocking = 0
/// polled through ncclCommGetAsyncError, one warm-up and K all_reduces (ncclSum) each between two
/// events polled with cuEventQuery and ncclCommGetAsyncError, then every element checked against
/// ((i%1021)+1)*N(N+1)/2. JSON Lines, flushed per line:
///   {"event":"start",rank,nranks,device,bytes,count,dtype,repeats,timeout_s,lib,version}
///   {"event":"progress","step":"init"|"ready"|"warmup"|"iteration"|"abort",...}
///   {"event":"error","step":"args"|"root"|"cuda"|"dlopen"|"dlsym"|"init"|"allreduce"|"async"|
///            "verify"|"finalize","error":..,"expired":bool[,"code","nccl_error"]
///            [,"index","value","expected","wrong_elements" for verify]}
///   {"event":"abort","result":"ncclSuccess","seconds":..}   after ncclCommAbort
///   {"event":"done","ok":bool,bytes,repeats,time_s (best),algbw_gbps,busbw_gbps,...}
///   {"event":"end"}
/// Past the deadline (or on any NCCL error) the communicator is aborted and the helper exits at
/// once. Returns the exit status.
int run_nccl_allreduce(const AllreduceArgs& args);

}  // namespace preflight::helper
