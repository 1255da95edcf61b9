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
  bool cuda_visible = true;  // false: listed in nvml_only_gpus

  // Derived.
  std::array<unsigned char, 16> uuid_bytes{};
  unsigned int pci_domain = 0, pci_bus = 0, pci_device = 0, pci_function = 0;
  unsigned int pci_device_id = 0x233010DE;  // NVML's combined device/vendor id
};

struct Scenario {
  std::string source = "default";  // the file it came from, or "default"
  std::string driver_version = "550.54.15";
  int cuda_driver_version = 12040;
  std::optional<int> nccl_version;  // nullopt: the version of the fake libnccl's embedded string
  std::vector<Gpu> gpus;            // NVML's view, in PCI order
  Fault cu_init, nvml_init, ctx, alloc, memset, copy;
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
