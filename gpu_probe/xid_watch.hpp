// SPDX-License-Identifier: MIT
// XIDs raised while the contained helper's own GPU work runs, through NVML events: an event set
// registered for nvmlEventTypeXidCriticalError on the GPUs before the work starts, then read with
// 0 ms waits (never blocking; at most kMaxNvmlXidEvents per window) during and after it. Needs no
// privilege, unlike the kernel log. Every NVML function is resolved optionally: a driver without
// one leaves the watch "not collected" with "driver R has no F", never a crash.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/facts/gpu_health.hpp"
#include "gpu_probe/dynlib.hpp"
#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"

namespace preflight::helper {

/// When this helper process started (the origin of every NvmlXidWatch time).
std::chrono::steady_clock::time_point helper_start();

/// Seconds since helper_start().
double helper_seconds();

/// A GPU to watch: its NVML index, handle and bus id ("00000000:18:00.0").
struct XidDevice {
  int index = 0;
  nvml::nvmlDevice_t handle = nullptr;
  std::string bus_id;
};

class XidWatch {
 public:
  /// `nvml`: the functions of the helper's libnvidia-ml, initialised (nvmlInit_v2) for as long as the watch lives;
  /// `driver`: its version, for "driver 470.82.01 has no nvmlEventSetCreate" (may be empty).
  XidWatch(const nvml::NvmlFunctions& nvml, std::string driver, std::string work);
  ~XidWatch();
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;

  /// Creates the set, registers every device for XID events (a refusal is recorded per GPU) and
  /// opens the window. Call before the work starts.
  void start(const std::vector<XidDevice>& devices);
  /// Reads what is pending now: 0 ms waits until NVML_ERROR_TIMEOUT, within the window's bound.
  void drain();
  /// The last drain, the set freed and the window closed; the facts. Safe to call once only.
  NvmlXidWatch finish();

  /// A watch that never started: not collected, for `why`.
  static NvmlXidWatch not_collected(std::string work, std::string why);

 private:
  std::string text(const char* call, nvml::nvmlReturn_t rc) const;
  std::string no_symbol(const char* call) const;

  const nvml::NvmlFunctions& m_fn;
  std::string m_driver;
  NvmlXidWatch m_facts;
  nvml::PFN_nvmlEventSetWait_v2 m_wait = nullptr;
  const char* m_wait_name = nvml::name_nvmlEventSetWait_v2;
  nvml::PFN_nvmlEventSetWait m_wait_old = nullptr;
  nvml::PFN_nvmlEventSetFree m_free = nullptr;
  nvml::nvmlEventSet_t m_set = nullptr;
  std::vector<XidDevice> m_devices;
  bool m_waiting = false;  // the set exists and has at least one registered GPU
  bool m_finished = false;
};

/// An XID watch on the one GPU a test uses (the smoke test, one rank's all_reduce): libnvidia-ml
/// loaded and initialised in this process for it, the GPU found by its PCI bus id. Nothing here
/// may fail the test it watches; finish() gives the facts, or why there are none.
class DeviceXidWatch {
 public:
  /// `work`: the window's name in the facts ("cuda.smoke", "all_reduce"); `what`: the test in a
  /// sentence ("the smoke test").
  DeviceXidWatch(std::string work, std::string what);
  ~DeviceXidWatch();
  DeviceXidWatch(const DeviceXidWatch&) = delete;
  DeviceXidWatch& operator=(const DeviceXidWatch&) = delete;

  /// Registers XID events on the NVML GPU at `bus_id` (any spelling normalize_bus_id accepts).
  void start(const std::string& bus_id);
  /// The same for CUDA device `dev` (ordinal `ordinal`) of the libcuda whose functions are `cuda_fn`, found by its
  /// PCI bus id.
  void start(const cuda::CudaFunctions& cuda_fn, cuda::CUdevice dev, int ordinal);
  /// No watch, for `why`.
  void skip(std::string why);
  /// The watch's facts (or why there is none: `step`, where the test ended, when it never
  /// started); NVML shut down again. Once only.
  NvmlXidWatch finish(const std::string& step);

 private:
  class Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace preflight::helper
