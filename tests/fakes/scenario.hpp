// SPDX-License-Identifier: MIT
// The scenario that scripts the fake NVIDIA libraries of the test tree (libcuda.so.1,
// libnvidia-ml.so.1, libnccl.so.2): driver and CUDA versions, the GPUs, what CUDA cannot see, and
// faults (an init error, a crash, a hang, a corrupted copy). Read from the JSON file named by
// $PREFLIGHT_FAKE_GPU; without it, a healthy node of 8 H100s. The format is in tests/fakes/README.md.
//
// Test code only. Each fake library compiles this in with hidden visibility, so the only symbols a
// fake exports are the NVIDIA entry points.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

/// Marks the NVIDIA entry points a fake exports (everything else is hidden).
#define PREFLIGHT_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace preflight::fake_gpu {

inline constexpr std::uint64_t kMiB = 1024 * 1024;

/// What an entry point does instead of its job.
struct Fault {
  enum class Kind { Ok, Error, Segv, Hang, Corrupt };
  Kind kind = Kind::Ok;
  int code = 0;  // Error: the code returned

  bool ok() const { return kind == Kind::Ok; }
};

/// "ok" | "error:N" | "segv" | "hang" (| "corrupt" where `allow_corrupt`). Throws std::invalid_argument.
Fault parse_fault(std::string_view text, bool allow_corrupt);

/// Segv: dies of SIGSEGV (the default action, even if a handler is installed). Hang: never returns.
/// Anything else: returns.
void enact(const Fault& fault);

struct Process {
  unsigned int pid = 0;
  std::uint64_t used_mib = 0;
};

/// The health answers of a GPU (the scenario's per-GPU "health" object, tests/fakes/README.md).
struct GpuHealthScript {
  int lost = 0;  // 15 (NVML_ERROR_GPU_IS_LOST) or 16 (NVML_ERROR_RESET_REQUIRED): every health call answers it
  unsigned remap_correctable = 0, remap_uncorrectable = 0, remap_banks_exhausted = 0;
  bool remap_pending = false, remap_failure = false;
  bool retired_pending = false;
  unsigned retired_dbe = 0, retired_sbe = 0;
  bool ecc = true;
  std::optional<bool> ecc_pending;  // nullopt: as ecc
  std::uint64_t ecc_dbe_volatile = 0, ecc_dbe_aggregate = 0, ecc_sbe_volatile = 0;
  int recovery_action = 0;  // nvmlDeviceGpuRecoveryAction_t
  std::uint64_t clock_event_reasons = 0;
  int pstate = 0;
  int temperature = 40, slowdown_temperature = 87;
  int pcie_gen = 5, pcie_width = 16, pcie_gen_max = 5, pcie_width_max = 16, pcie_gen_gpu_max = 5;
  unsigned pcie_replay = 0, pcie_replay_rise = 0;             // rise: added at every later read
  std::uint64_t nvlink_replay_rise = 0, nvlink_crc_rise = 0;  // link 0's counters, at every later read
  std::optional<int> fabric_state;  // nullopt: 3 (completed) for CC 9.0+ with NVLinks to NVSwitches, else 0
  int fabric_status = 0;
  unsigned fabric_health_mask = 0;
  int fabric_health_summary = 1;
  unsigned fabric_clique_id = 1;
};

struct Gpu {
  std::string name;
  std::string uuid;        // "GPU-" + 8-4-4-4-12 hex digits
  std::string pci_bus_id;  // "00000000:18:00.0"
  int cc_major = 9;
  int cc_minor = 0;
  std::uint64_t memory_total_mib = 81559;
  std::uint64_t memory_used_mib = 0;
  bool persistence = true;
  std::optional<bool> mig;  // nullopt: MIG not supported (NVML_ERROR_NOT_SUPPORTED)
  std::vector<Process> processes;
  bool cuda_visible = true;  // false: listed in nvml_only_gpus, or lost
  /// The GPU-level "lost": 15 (NVML_ERROR_GPU_IS_LOST) or 16 (NVML_ERROR_RESET_REQUIRED), answered
  /// by every NVML call on it but nvmlDeviceGetHandleByIndex_v2 and nvmlDeviceGetPciInfo_v3 (NVML
  /// keeps the identity it enumerated); CUDA does not list it (cuda_visible false). 0: not lost.
  int lost = 0;
  std::optional<std::vector<int>> cpu_affinity;  // nullopt: nvmlDeviceGetCpuAffinity NOT_SUPPORTED
  std::optional<int> numa_node;                  // nullopt: nvmlDeviceGetNumaNodeId / MemoryAffinity NOT_SUPPORTED
  int nvlinks = 0;                               // active NVLinks (links 0..nvlinks-1)
  bool nvlink_to_switch = true;                  // "switch": link l goes to NVSwitch l % 4; "peer": to GPU index ^ 1
  GpuHealthScript health;
  /// NVML events on this GPU: Supported; NotSupported (nvmlDeviceGetSupportedEventTypes lacks
  /// the XID bit, nvmlDeviceRegisterEvents answers NOT_SUPPORTED); NoPermission (registering
  /// answers NVML_ERROR_NO_PERMISSION).
  enum class Events { Supported, NotSupported, NoPermission } events = Events::Supported;

  // Derived.
  std::array<unsigned char, 16> uuid_bytes{};
  unsigned int pci_domain = 0, pci_bus = 0, pci_device = 0, pci_function = 0;
  unsigned int pci_device_id = 0x233010DE;  // NVML's combined device/vendor id
};

/// nvmlDeviceGetP2PStatus answers for one pair ("OK", "CNS", "GNS", "TNS", "DR", "NS", "U").
struct P2pStatus {
  std::string read = "OK";
  std::string write = "OK";
  std::string nvlink;  // empty: "OK" when both GPUs have NVLinks, else "NS"
};

/// A peer copy fault (indices into gpus, which are the CUDA ordinals without CUDA_VISIBLE_DEVICES).
struct PeerCopyFault {
  std::size_t src = 0, dst = 0;
  enum class Step { Enable, Copy } step = Step::Copy;
  /// Copy: Hang = the copy never completes (cuEventQuery answers CUDA_ERROR_NOT_READY forever);
  /// Block = cuMemcpyPeerAsync never returns; Segv; Corrupt = word 17 arrives inverted; Error.
  /// Slow = the copy is timed at 1 GB/s.
  enum class Kind { Hang, Block, Segv, Corrupt, Error, Slow } kind = Kind::Hang;
  int code = 0;
};

/// How the fake libnccl's communicators behave (the scenario's "allreduce" object).
struct AllreduceScript {
  /// HangInit: ncclCommInitRankConfig never completes (non-blocking: ncclCommGetAsyncError answers
  /// ncclInProgress forever; blocking: the call never returns), and the other ranks wait for it.
  /// Hang: the all_reduce is enqueued and never completes (its stream stays busy), nor do the
  /// other ranks'. Corrupt: this rank's result has element 17 (or the last) inverted
  /// (bitwise NOT). AsyncError: the all_reduce never completes and ncclCommGetAsyncError reports
  /// `error_code`. InitError: ncclCommInitRankConfig returns `error_code`.
  enum class Fault { Ok, HangInit, Hang, Corrupt, AsyncError, InitError } fault = Fault::Ok;
  std::optional<int> rank;  ///< the rank that misbehaves; nullopt: every rank
  double busbw_gbps = 100;  ///< an all_reduce of B bytes over N ranks is timed at B*2(N-1)/N / busbw
  int error_code = 6;       ///< ncclRemoteError

  bool applies_to(int r) const { return fault != Fault::Ok && (!rank || *rank == r); }
};

/// An XID that NVML delivers to every event set registered for XID events on the GPU (the
/// scenario's "xid_events"): pending from the registration on, as if raised during the work.
struct XidEventScript {
  std::size_t gpu = 0;  // index into gpus
  unsigned long long xid = 0;
  std::optional<unsigned> gpu_instance, compute_instance;  // nullopt: 0xFFFFFFFF (not attributed)
  bool during_nccl = false;  // "during": "nccl": delivered only to a process that has libnccl.so.2 loaded
};

/// The NVSwitch bus ids NVLinks of "switch" GPUs lead to: 00000000:F0:00.0 ... F3.
std::string nvswitch_bus_id(int link);

struct Scenario {
  std::string source = "default";  // the file it came from, or "default"
  std::string driver_version = "550.54.15";
  int cuda_driver_version = 12040;
  std::optional<int> nccl_version;  // nullopt: the version of the fake libnccl's embedded string
  std::vector<Gpu> gpus;            // NVML's view, in PCI order
  Fault cu_init, nvml_init, ctx, alloc, memset, copy;
  std::vector<std::vector<std::string>> topology;  // [a][b] path label; empty rows: the default
  P2pStatus p2p;                                   // the default of every pair
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, P2pStatus>> p2p_pairs;  // overrides (unordered pairs)
  std::optional<bool> peer_access;  // nullopt: a pair can access when its P2P read status is OK
  std::vector<PeerCopyFault> peer_copy_faults;
  std::vector<std::string> nvml_missing;   // NVML functions that answer NVML_ERROR_FUNCTION_NOT_FOUND
  AllreduceScript allreduce;               // the fake libnccl's communicators
  std::vector<XidEventScript> xid_events;  // what NVML's event sets deliver

  /// The path label between GPUs a and b (indices into gpus): "X" for a == b.
  std::string path(std::size_t a, std::size_t b) const;
  /// The P2P status of an unordered pair.
  P2pStatus p2p_status(std::size_t a, std::size_t b) const;
  /// cuDeviceCanAccessPeer between two GPUs (indices into gpus).
  bool can_access_peer(std::size_t a, std::size_t b) const;
  /// The modelled peer copy speed (GB/s): 20 per NVLink when both have NVLinks, else by the PCIe
  /// path: PIX/PXB 24, PHB/NODE 20, SYS 10.
  double peer_gbps(std::size_t src, std::size_t dst) const;
  const PeerCopyFault* peer_copy_fault(std::size_t src, std::size_t dst) const;
  bool nvml_function_missing(std::string_view name) const;
};

/// The default node: 8 x "NVIDIA H100 80GB HBM3", driver 550.54.15, CUDA 12040, no faults.
Scenario default_scenario();

/// Parses a scenario document; throws std::invalid_argument naming the offending key.
Scenario parse_scenario(const nlohmann::json& doc);

/// Reads and parses a scenario file; throws std::invalid_argument naming the file.
Scenario load_scenario_file(const std::string& path);

/// The scenario of this process: $PREFLIGHT_FAKE_GPU's file, else the default. `error` is set (and
/// the default returned) when the file cannot be used; the fakes then fail their init calls.
struct LoadedScenario {
  Scenario scenario;
  std::string error;
};
LoadedScenario load_scenario_from_env();

/// The GPUs the CUDA driver API exposes, as indices into scenario.gpus, in CUDA ordinal order:
/// the CUDA-visible GPUs filtered by CUDA_VISIBLE_DEVICES (nullptr: unset) the way the driver does:
/// a comma-separated list of ordinals or "GPU-<uuid prefix>" entries; empty means none; parsing
/// stops at the first invalid entry (out of range, not a number, an unknown or ambiguous prefix, a
/// duplicate) and the entries before it stay visible.
std::vector<std::size_t> cuda_visible_gpus(const Scenario& scenario, const char* cuda_visible_devices);

}  // namespace preflight::fake_gpu
