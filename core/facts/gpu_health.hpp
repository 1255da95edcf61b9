// SPDX-License-Identifier: MIT
// Facts about the health of each GPU of the node, read by the contained GPU helper's `health`
// subcommand through NVML: memory (row remapping, retired pages, ECC, the recovery action), clock
// event reasons and PCIe link state sampled while the helper keeps the GPUs busy, NVLink state and
// error counters, and the NVSwitch fabric. Every field a driver or GPU cannot answer stays empty
// and `unavailable` says why ("driver 470.82.01 has no nvmlDeviceGetGpuFabricInfoV"). Also the
// XIDs NVML reported while the helper's own GPU work ran (NvmlXidWatch), and this boot's kernel log.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace preflight {

/// nvmlDeviceGpuRecoveryAction_t (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, field 230).
inline constexpr int kRecoveryNone = 0;
inline constexpr int kRecoveryGpuReset = 1;
inline constexpr int kRecoveryNodeReboot = 2;
inline constexpr int kRecoveryDrainP2p = 3;
inline constexpr int kRecoveryDrainAndReset = 4;

/// nvmlGpuFabricState_t.
inline constexpr int kFabricNotSupported = 0;
inline constexpr int kFabricNotStarted = 1;
inline constexpr int kFabricInProgress = 2;
inline constexpr int kFabricCompleted = 3;

/// Clock event reason bits (nvmlClocksEventReason*).
inline constexpr std::uint64_t kClocksGpuIdle = 0x1;
inline constexpr std::uint64_t kClocksApplicationsSetting = 0x2;
inline constexpr std::uint64_t kClocksSwPowerCap = 0x4;
inline constexpr std::uint64_t kClocksHwSlowdown = 0x8;
inline constexpr std::uint64_t kClocksSyncBoost = 0x10;
inline constexpr std::uint64_t kClocksSwThermal = 0x20;
inline constexpr std::uint64_t kClocksHwThermal = 0x40;
inline constexpr std::uint64_t kClocksHwPowerBrake = 0x80;
inline constexpr std::uint64_t kClocksDisplaySetting = 0x100;

struct GpuHealth {
  int index = 0;           // NVML index
  std::string pci_bus_id;  // "00000000:18:00.0"
  std::string name;
  std::optional<bool> mig_enabled;
  std::optional<bool> persistence_mode;
  /// The first call that answered NVML_ERROR_GPU_IS_LOST or NVML_ERROR_RESET_REQUIRED, with the
  /// code: "nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST (GPU is lost)". Empty: none did.
  std::string lost;
  /// Why a fact is empty, by fact: "remapped_rows", "retired_pages", "ecc_mode", "ecc_errors",
  /// "recovery_action", "clocks", "temperature", "pstate", "pcie", "pcie_replay", "nvlink",
  /// "nvlink_errors", "fabric".
  std::map<std::string, std::string> unavailable;

  // Memory.
  std::optional<unsigned> remap_correctable;       // rows remapped for correctable errors
  std::optional<unsigned> remap_uncorrectable;     // rows remapped for uncorrectable errors
  std::optional<bool> remap_pending;               // a remap waits for the next GPU reset
  std::optional<bool> remap_failure;               // a remap failed (no spare row left)
  std::optional<unsigned> remap_banks_exhausted;   // nvmlDeviceGetRowRemapperHistogram "none"
  std::optional<bool> retired_pages_pending;       // pre-Ampere page retirement waits for a reboot
  std::optional<unsigned> retired_pages_dbe;       // pages retired for double-bit errors
  std::optional<unsigned> retired_pages_sbe;       // ... for multiple single-bit errors
  std::optional<bool> ecc_enabled;                 // ECC mode, current
  std::optional<bool> ecc_pending_enabled;         // ECC mode after the next reboot
  std::optional<std::uint64_t> ecc_dbe_volatile;   // uncorrected errors since the driver loaded
  std::optional<std::uint64_t> ecc_dbe_aggregate;  // uncorrected errors over the GPU's life
  std::optional<std::uint64_t> ecc_sbe_volatile;   // corrected errors since the driver loaded
  std::optional<int> recovery_action;              // kRecovery*

  // Under the helper's load (cuMemsetD32 on every GPU), sampled.
  int load_samples = 0;
  std::optional<std::uint64_t> clock_event_reasons;  // every reason seen in a sample (OR)
  int slowdown_samples = 0;                          // samples with a hardware slowdown, thermal or power-brake reason
  std::optional<int> pstate;                         // the best (lowest) performance state seen: 0 = P0
  std::optional<int> temperature_c;                  // the hottest sample
  std::optional<int> slowdown_temperature_c;         // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN

  // Links.
  std::optional<int> nvlinks_present;  // links answering a state
  std::optional<int> nvlinks_up;
  std::vector<int> nvlinks_down;                     // link numbers
  std::optional<std::uint64_t> nvlink_replay_delta;  // DL replay + recovery, after minus before the load
  std::optional<std::uint64_t> nvlink_crc_delta;     // DL CRC flit + data, after minus before
  std::optional<int> pcie_gen;                       // the best seen under load
  std::optional<int> pcie_width;
  std::optional<int> pcie_gen_max;  // device and system
  std::optional<int> pcie_width_max;
  std::optional<int> pcie_gen_gpu_max;  // the GPU's own (nvmlDeviceGetGpuMaxPcieLinkGeneration)
  std::optional<unsigned> pcie_replay_before;
  std::optional<unsigned> pcie_replay_after;

  // NVSwitch fabric (nvmlDeviceGetGpuFabricInfo(V)).
  int fabric_info_version = 0;       // 1, 2 or 3: the struct the driver answered; 0: not read
  std::optional<int> fabric_state;   // kFabric*
  std::optional<int> fabric_status;  // an nvmlReturn_t, meaningful when completed
  std::optional<unsigned> fabric_health_mask;
  std::optional<int> fabric_health_summary;  // v3: 0 not supported, 1 healthy, 2 unhealthy, 3 limited capacity
  std::string fabric_cluster_uuid;
  std::optional<unsigned> fabric_clique_id;
};
PREFLIGHT_JSON_DECLARE(GpuHealth)

/// One XID that NVML reported during the helper's GPU work (nvmlEventTypeXidCriticalError).
struct NvmlXidEvent {
  int gpu = -1;                              // NVML index; -1: a device handle the helper did not register
  std::string pci_bus_id;                    // "00000000:18:00.0" as NVML prints it
  std::uint64_t xid = 0;                     // nvmlEventData_t.eventData: the Xid; 999 when NVML cannot name it
  double seconds = 0;                        // when it was read, seconds after the helper started
  std::optional<unsigned> gpu_instance;      // MIG: the GPU instance it is attributed to
  std::optional<unsigned> compute_instance;  // MIG: the compute instance
};
PREFLIGHT_JSON_DECLARE(NvmlXidEvent)

/// One GPU's registration for XID events.
struct NvmlXidGpu {
  int index = 0;            // NVML index
  std::string pci_bus_id;   // "00000000:18:00.0"
  bool registered = false;  // nvmlDeviceRegisterEvents(nvmlEventTypeXidCriticalError) succeeded
  /// Why not: "nvmlDeviceRegisterEvents: not supported on this GPU",
  /// "nvmlDeviceRegisterEvents: NVML_ERROR_NO_PERMISSION (Insufficient Permissions)".
  std::string why;
};
PREFLIGHT_JSON_DECLARE(NvmlXidGpu)

/// NVML's XID critical error events over a window of the contained helper's own GPU work: an
/// event set registered on the GPUs before the work started, read (0 ms waits, at most
/// kMaxNvmlXidEvents) during and after it. Unlike the kernel log this needs no privilege, but it
/// sees only XIDs raised inside the window.
struct NvmlXidWatch {
  /// The set was created, registered on at least one GPU and read after the work: `events` is
  /// every XID NVML delivered on the registered GPUs in the window.
  bool collected = false;
  /// Why nothing was collected: "driver 470.82.01 has no nvmlEventSetCreate", "nvmlInit_v2: ...",
  /// "no GPU accepted the registration". Empty when collected.
  std::string unavailable;
  std::string work;    // the work watched: "health load", "cuda.smoke"
  double start_s = 0;  // the window, seconds after the helper started
  double end_s = 0;
  std::vector<NvmlXidGpu> gpus;
  std::vector<NvmlXidEvent> events;
  bool truncated = false;  // reading stopped at kMaxNvmlXidEvents
};
PREFLIGHT_JSON_DECLARE(NvmlXidWatch)

/// The most events one window reads.
inline constexpr std::size_t kMaxNvmlXidEvents = 256;

struct GpuHealthFacts {
  std::string driver_version;  // nvmlSystemGetDriverVersion, for the "driver R… has no …" texts
  std::vector<GpuHealth> gpus;
  /// How the load went: "cuMemsetD32 on 8 GPUs for 0.21 s, 12 samples" or why there was none.
  std::string load;
  bool loaded = false;  // the GPUs were busy while sampled
  double load_seconds = 0;
  std::optional<int> nvswitches;  // PCI devices of class 0x068000 from NVIDIA in sysfs; nullopt: not read
  /// The nvidia-fabricmanager process: true running, false not found; nullopt: /proc not readable.
  std::optional<bool> fabric_manager_running;
  /// The XIDs NVML reported on every GPU while the load ran (registered before it starts).
  NvmlXidWatch xid_watch;
};
PREFLIGHT_JSON_DECLARE(GpuHealthFacts)

/// One NVIDIA event of this boot's kernel log (core/kmsg.hpp).
struct KernelGpuEvent {
  std::string kind;                   // "xid", "fallen_off_bus", "sxid"
  int code = 0;                       // the Xid / SXid number; 0 for fallen_off_bus
  std::string bus_id;                 // "0000:3b:00.0"
  std::optional<std::uint64_t> usec;  // microseconds since boot
  std::string text;                   // as logged
};
PREFLIGHT_JSON_DECLARE(KernelGpuEvent)

/// The kernel log (/dev/kmsg, read to its end without blocking): the NVIDIA events of this boot.
struct KernelLogFacts {
  std::string source;       // "/dev/kmsg"
  std::size_t records = 0;  // records read
  std::vector<KernelGpuEvent> events;
  std::string nvidia_lines;  // the NVIDIA lines in /dev/kmsg format, kept for a capture (at most 64 KiB)
};
PREFLIGHT_JSON_DECLARE(KernelLogFacts)

}  // namespace preflight
