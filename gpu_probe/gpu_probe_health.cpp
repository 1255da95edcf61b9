// SPDX-License-Identifier: MIT
// preflight-gpu-probe `health`: per GPU, NVML's memory health (row remapping, retired pages, ECC,
// the recovery action), NVLink state and error counters, PCIe link state, the NVSwitch fabric, and
// clock event reasons, performance state, temperature and PCIe link sampled while every GPU runs
// cuMemsetD32 (idle GPUs downshift their link and report "idle": judged only under load), and the
// XIDs NVML reports on any GPU while that load runs (registered before it starts).
//
// Every NVML function is resolved optionally: one an older driver lacks (or answers
// NVML_ERROR_FUNCTION_NOT_FOUND / NVML_ERROR_DEPRECATED) leaves its fact empty with
// "driver R has no F", never a crash.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/facts/gpu_health.hpp"
#include "core/gpu_text.hpp"
#include "core/pci_topology.hpp"
#include "gpu_probe/dynlib.hpp"
#include "gpu_probe/gpu_probe.hpp"
#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"
#include "gpu_probe/xid_watch.hpp"

namespace preflight::helper {
namespace {

using namespace nvml;

constexpr int kMinLoadSamples = 5;             // per GPU, at P0, before the load may end
/// Sample rounds under load before the time limit may end the load: the first as the load starts,
/// then at least one more, so that a slowdown that lasts (a power brake) is seen in two samples
/// and judged as lasting, whatever the limit and however slow a round is.
constexpr int kRoundsBeforeLimit = 2;
constexpr std::size_t kLoadBytes = 64u << 20;  // per GPU
constexpr int kMemsetsPerRound = 8;

bool lost_code(nvmlReturn_t rc) { return rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_RESET_REQUIRED; }

struct Reader {
  DynLib lib;
  PFN_nvmlErrorString error_string = nullptr;
  std::string driver;
  NvmlFunctions fn{};  // resolved once from lib when it is opened

  std::string text(const char* call, nvmlReturn_t rc) const {
    const char* name = nvml_code_name(rc);
    std::string out = std::string(call) + ": " + (name != nullptr ? name : "nvmlReturn_t " + std::to_string(rc));
    if (error_string != nullptr) {
      if (const char* t = error_string(rc); t != nullptr && *t != '\0') out += std::string(" (") + t + ")";
    }
    return out;
  }
  std::string no_symbol(const char* call) const {
    return "driver " + (driver.empty() ? std::string() : driver + " ") + "has no " + call;
  }
  void missing(GpuHealth& g, const char* fact, const char* call) const { g.unavailable.emplace(fact, no_symbol(call)); }
  /// True on success; otherwise records why `fact` stays empty (and a lost GPU).
  bool ok(GpuHealth& g, const char* fact, const char* call, nvmlReturn_t rc) const {
    if (rc == NVML_SUCCESS) return true;
    if (lost_code(rc) && g.lost.empty()) g.lost = text(call, rc);
    std::string why;
    if (absent(rc))
      why = no_symbol(call);
    else if (rc == NVML_ERROR_NOT_SUPPORTED)
      why = std::string(call) + ": not supported on this GPU" +
            (g.mig_enabled.value_or(false) ? " (MIG is enabled)" : "");
    else
      why = text(call, rc);
    g.unavailable.emplace(fact, why);
    return false;
  }
};

std::string hex_uuid(const unsigned char* raw) {
  std::string out;
  char buf[4];
  for (unsigned i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", raw[i]);
    out += buf;
  }
  return out;
}

/// Sums of the NVLink error counters over every present link.
struct LinkErrors {
  std::optional<std::uint64_t> replay, crc;
};

LinkErrors link_errors(const Reader& r, nvmlDevice_t dev, GpuHealth& g, const std::vector<int>& links) {
  LinkErrors e;
  const auto get = r.fn.nvmlDeviceGetNvLinkErrorCounter;
  if (get == nullptr) {
    if (!links.empty()) r.missing(g, "nvlink_errors", name_nvmlDeviceGetNvLinkErrorCounter);
    return e;
  }
  std::uint64_t replay = 0, crc = 0;
  for (const int link : links) {
    const nvmlNvLinkErrorCounter_t kinds[4] = {NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY,
                                               NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA};
    for (int k = 0; k < 4; ++k) {
      unsigned long long v = 0;
      const nvmlReturn_t rc = get(dev, static_cast<unsigned>(link), kinds[k], &v);
      if (rc == NVML_ERROR_NOT_SUPPORTED) continue;  // a counter this link generation lacks
      if (!r.ok(g, "nvlink_errors", name_nvmlDeviceGetNvLinkErrorCounter, rc)) return e;
      (k < 2 ? replay : crc) += v;
    }
  }
  e.replay = replay;
  e.crc = crc;
  return e;
}

void read_memory(const Reader& r, nvmlDevice_t dev, GpuHealth& g) {
  if (const auto get = r.fn.nvmlDeviceGetRemappedRows) {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (r.ok(g, "remapped_rows", name_nvmlDeviceGetRemappedRows, get(dev, &corr, &unc, &pending, &failure))) {
      g.remap_correctable = corr;
      g.remap_uncorrectable = unc;
      g.remap_pending = pending != 0;
      g.remap_failure = failure != 0;
      if (const auto hist = r.fn.nvmlDeviceGetRowRemapperHistogram) {
        nvmlRowRemapperHistogramValues_t h{};
        if (hist(dev, &h) == NVML_SUCCESS) g.remap_banks_exhausted = h.none;
      }
    }
  } else {
    r.missing(g, "remapped_rows", name_nvmlDeviceGetRemappedRows);
  }
  if (const auto get = r.fn.nvmlDeviceGetRetiredPagesPendingStatus) {
    nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
    if (r.ok(g, "retired_pages", name_nvmlDeviceGetRetiredPagesPendingStatus, get(dev, &pending))) {
      g.retired_pages_pending = pending == NVML_FEATURE_ENABLED;
      if (const auto pages = r.fn.nvmlDeviceGetRetiredPages) {
        for (const auto cause : {NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                 NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS}) {
          unsigned count = 0;
          const nvmlReturn_t rc = pages(dev, cause, &count, nullptr);
          if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) continue;
          (cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? g.retired_pages_dbe : g.retired_pages_sbe) =
              count;
        }
      }
    }
  } else {
    r.missing(g, "retired_pages", name_nvmlDeviceGetRetiredPagesPendingStatus);
  }
  if (const auto get = r.fn.nvmlDeviceGetEccMode) {
    nvmlEnableState_t current = NVML_FEATURE_DISABLED, pending = NVML_FEATURE_DISABLED;
    if (r.ok(g, "ecc_mode", name_nvmlDeviceGetEccMode, get(dev, &current, &pending))) {
      g.ecc_enabled = current == NVML_FEATURE_ENABLED;
      g.ecc_pending_enabled = pending == NVML_FEATURE_ENABLED;
    }
  } else {
    r.missing(g, "ecc_mode", name_nvmlDeviceGetEccMode);
  }
  if (g.ecc_enabled.value_or(false)) {
    if (const auto get = r.fn.nvmlDeviceGetTotalEccErrors) {
      unsigned long long v = 0;
      if (r.ok(g, "ecc_errors", name_nvmlDeviceGetTotalEccErrors,
               get(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v))) {
        g.ecc_dbe_volatile = v;
        if (get(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &v) == NVML_SUCCESS)
          g.ecc_dbe_aggregate = v;
        if (get(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &v) == NVML_SUCCESS) g.ecc_sbe_volatile = v;
      }
    } else {
      r.missing(g, "ecc_errors", name_nvmlDeviceGetTotalEccErrors);
    }
  } else if (g.ecc_enabled) {
    g.unavailable.emplace("ecc_errors", "ECC is disabled on this GPU: no error counters");
  }
  // The recovery action: field 230 (R570), else the reset / drain-and-reset status fields (R560).
  if (const auto get = r.fn.nvmlDeviceGetFieldValues) {
    nvmlFieldValue_t v[3] = {};
    v[0].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
    v[1].fieldId = NVML_FI_DEV_RESET_STATUS;
    v[2].fieldId = NVML_FI_DEV_DRAIN_AND_RESET_STATUS;
    const nvmlReturn_t rc = get(dev, 3, v);
    if (r.ok(g, "recovery_action", name_nvmlDeviceGetFieldValues, rc)) {
      auto as_int = [](const nvmlFieldValue_t& f) -> long long {
        switch (f.valueType) {
          case NVML_VALUE_TYPE_UNSIGNED_INT: return f.value.uiVal;
          case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<long long>(f.value.ulVal);
          case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<long long>(f.value.ullVal);
          case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return f.value.sllVal;
          case NVML_VALUE_TYPE_SIGNED_INT: return f.value.siVal;
          case NVML_VALUE_TYPE_DOUBLE: return static_cast<long long>(f.value.dVal);
        }
        return 0;
      };
      if (v[0].nvmlReturn == NVML_SUCCESS) {
        g.recovery_action = static_cast<int>(as_int(v[0]));
      } else if (v[1].nvmlReturn == NVML_SUCCESS || v[2].nvmlReturn == NVML_SUCCESS) {
        g.recovery_action = v[2].nvmlReturn == NVML_SUCCESS && as_int(v[2]) != 0   ? kRecoveryDrainAndReset
                            : v[1].nvmlReturn == NVML_SUCCESS && as_int(v[1]) != 0 ? kRecoveryGpuReset
                                                                                   : kRecoveryNone;
      } else {
        if (lost_code(v[0].nvmlReturn) && g.lost.empty()) g.lost = r.text("nvmlDeviceGetFieldValues", v[0].nvmlReturn);
        g.unavailable.emplace("recovery_action",
                              "driver " + (r.driver.empty() ? std::string() : r.driver + " ") +
                                  "has no GPU recovery action field (NVML field 230, R570; 226/227, R560)");
      }
    }
  } else {
    r.missing(g, "recovery_action", name_nvmlDeviceGetFieldValues);
  }
}

/// NVLink states; returns the present links.
std::vector<int> read_nvlinks(const Reader& r, nvmlDevice_t dev, GpuHealth& g) {
  std::vector<int> present;
  const auto get = r.fn.nvmlDeviceGetNvLinkState;
  if (get == nullptr) {
    r.missing(g, "nvlink", name_nvmlDeviceGetNvLinkState);
    return present;
  }
  int up = 0;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    const nvmlReturn_t rc = get(dev, link, &active);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;  // past this GPU's links
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
      if (link == 0) g.unavailable.emplace("nvlink", "this GPU has no NVLink");
      break;  // on link k > 0: the GPU has k links
    }
    if (!r.ok(g, "nvlink", name_nvmlDeviceGetNvLinkState, rc)) {
      if (lost_code(rc)) break;
      continue;
    }
    present.push_back(static_cast<int>(link));
    if (active == NVML_FEATURE_ENABLED)
      ++up;
    else
      g.nvlinks_down.push_back(static_cast<int>(link));
  }
  if (!present.empty() || g.unavailable.count("nvlink") == 0) {
    g.nvlinks_present = static_cast<int>(present.size());
    g.nvlinks_up = up;
  }
  return present;
}

void read_pcie_static(const Reader& r, nvmlDevice_t dev, GpuHealth& g) {
  auto read_uint = [&](const char* fact, const char* call, PFN_nvmlDeviceGetCurrPcieLinkGeneration get,
                       std::optional<int>& out) {
    if (get == nullptr) return r.missing(g, fact, call);
    unsigned v = 0;
    if (r.ok(g, fact, call, get(dev, &v))) out = static_cast<int>(v);
  };
  read_uint("pcie", name_nvmlDeviceGetMaxPcieLinkGeneration, r.fn.nvmlDeviceGetMaxPcieLinkGeneration, g.pcie_gen_max);
  read_uint("pcie", name_nvmlDeviceGetMaxPcieLinkWidth, r.fn.nvmlDeviceGetMaxPcieLinkWidth, g.pcie_width_max);
  if (const auto get = r.fn.nvmlDeviceGetGpuMaxPcieLinkGeneration) {
    unsigned v = 0;
    if (get(dev, &v) == NVML_SUCCESS) g.pcie_gen_gpu_max = static_cast<int>(v);
  }
  if (const auto get = r.fn.nvmlDeviceGetPcieReplayCounter) {
    unsigned v = 0;
    if (r.ok(g, "pcie_replay", name_nvmlDeviceGetPcieReplayCounter, get(dev, &v))) g.pcie_replay_before = v;
  } else {
    r.missing(g, "pcie_replay", name_nvmlDeviceGetPcieReplayCounter);
  }
  if (const auto get = r.fn.nvmlDeviceGetTemperatureThreshold) {
    unsigned v = 0;
    if (get(dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v) == NVML_SUCCESS)
      g.slowdown_temperature_c = static_cast<int>(v);
  }
}

/// Fabric info: the v3 struct, else v2 (ARGUMENT_VERSION_MISMATCH), else the unversioned v1 call.
void read_fabric(const Reader& r, nvmlDevice_t dev, GpuHealth& g) {
  auto keep = [&](int version, const unsigned char* uuid, nvmlReturn_t status, unsigned clique,
                  nvmlGpuFabricState_t state) {
    g.fabric_info_version = version;
    g.fabric_state = static_cast<int>(state);
    g.fabric_status = static_cast<int>(status);
    g.fabric_clique_id = clique;
    g.fabric_cluster_uuid = hex_uuid(uuid);
  };
  if (const auto getv = r.fn.nvmlDeviceGetGpuFabricInfoV) {
    nvmlGpuFabricInfo_v3_t info{};
    info.version = nvmlGpuFabricInfo_v3;
    nvmlReturn_t rc = getv(dev, &info);
    int version = 3;
    if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      info = nvmlGpuFabricInfo_v3_t{};
      info.version = nvmlGpuFabricInfo_v2;
      rc = getv(dev, &info);
      version = 2;
    }
    if (rc == NVML_SUCCESS) {
      keep(version, info.clusterUuid, info.status, info.cliqueId, info.state);
      g.fabric_health_mask = info.healthMask;
      if (version == 3) g.fabric_health_summary = info.healthSummary;
      return;
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
      g.fabric_info_version = version;
      g.fabric_state = kFabricNotSupported;
      return;
    }
    if (!absent(rc)) {
      r.ok(g, "fabric", name_nvmlDeviceGetGpuFabricInfoV, rc);
      return;
    }
  }
  if (const auto get = r.fn.nvmlDeviceGetGpuFabricInfo) {
    nvmlGpuFabricInfo_t info{};
    const nvmlReturn_t rc = get(dev, &info);
    if (rc == NVML_SUCCESS) return keep(1, info.clusterUuid, info.status, info.cliqueId, info.state);
    if (absent(rc)) {
      g.unavailable.emplace("fabric", r.no_symbol("nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo"));
      return;
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED) {
      g.fabric_info_version = 1;
      g.fabric_state = kFabricNotSupported;
      return;
    }
    r.ok(g, "fabric", name_nvmlDeviceGetGpuFabricInfo, rc);
    return;
  }
  g.unavailable.emplace("fabric", r.no_symbol("nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo"));
}

/// One sample under load: clock event reasons (OR), the best P-state, PCIe link and the hottest
/// temperature. Returns whether the GPU was at P0.
bool sample(const Reader& r, nvmlDevice_t dev, GpuHealth& g) {
  // The R535 name first, then the older one (deprecated in 13.0).
  const auto events = r.fn.nvmlDeviceGetCurrentClocksEventReasons;
  const auto throttle = r.fn.nvmlDeviceGetCurrentClocksThrottleReasons;
  ++g.load_samples;
  if (events != nullptr || throttle != nullptr) {
    unsigned long long v = 0;
    nvmlReturn_t rc = events != nullptr ? events(dev, &v) : NVML_ERROR_FUNCTION_NOT_FOUND;
    const char* reasons_name = name_nvmlDeviceGetCurrentClocksEventReasons;
    if (absent(rc) && throttle != nullptr) {
      rc = throttle(dev, &v);
      reasons_name = name_nvmlDeviceGetCurrentClocksThrottleReasons;
    }
    if (r.ok(g, "clocks", reasons_name, rc)) {
      g.clock_event_reasons = g.clock_event_reasons.value_or(0) | v;
      if ((v & (kClocksHwSlowdown | kClocksHwThermal | kClocksHwPowerBrake)) != 0) ++g.slowdown_samples;
    }
  } else {
    r.missing(g, "clocks", name_nvmlDeviceGetCurrentClocksEventReasons);
  }
  bool p0 = false;
  if (const auto get = r.fn.nvmlDeviceGetPerformanceState) {
    nvmlPstates_t p = NVML_PSTATE_UNKNOWN;
    if (r.ok(g, "pstate", name_nvmlDeviceGetPerformanceState, get(dev, &p)) && p != NVML_PSTATE_UNKNOWN) {
      g.pstate = std::min(g.pstate.value_or(p), p);
      p0 = p == NVML_PSTATE_0;
    }
  } else {
    r.missing(g, "pstate", name_nvmlDeviceGetPerformanceState);
  }
  if (const auto get = r.fn.nvmlDeviceGetCurrPcieLinkGeneration) {
    unsigned v = 0;
    if (r.ok(g, "pcie", name_nvmlDeviceGetCurrPcieLinkGeneration, get(dev, &v)))
      g.pcie_gen = std::max(g.pcie_gen.value_or(0), static_cast<int>(v));
  } else {
    r.missing(g, "pcie", name_nvmlDeviceGetCurrPcieLinkGeneration);
  }
  if (const auto get = r.fn.nvmlDeviceGetCurrPcieLinkWidth) {
    unsigned v = 0;
    if (r.ok(g, "pcie", name_nvmlDeviceGetCurrPcieLinkWidth, get(dev, &v)))
      g.pcie_width = std::max(g.pcie_width.value_or(0), static_cast<int>(v));
  } else {
    r.missing(g, "pcie", name_nvmlDeviceGetCurrPcieLinkWidth);
  }
  if (const auto get = r.fn.nvmlDeviceGetTemperature) {
    unsigned v = 0;
    if (r.ok(g, "temperature", name_nvmlDeviceGetTemperature, get(dev, NVML_TEMPERATURE_GPU, &v)))
      g.temperature_c = std::max(g.temperature_c.value_or(0), static_cast<int>(v));
  }
  return p0;
}

/// The load: a primary context, a buffer and a stream of cuMemsetD32 on every CUDA device.
struct Load {
  DynLib lib;
  cuda::CudaFunctions fn{};  // resolved once from lib when it is opened
  cuda::PFN_cuCtxSetCurrent set_current = nullptr;
  cuda::PFN_cuMemsetD32_v2 memset32 = nullptr;
  cuda::PFN_cuCtxSynchronize synchronize = nullptr;
  cuda::PFN_cuMemFree_v2 mem_free = nullptr;
  cuda::PFN_cuDevicePrimaryCtxRelease_v2 release = nullptr;
  struct Device {
    cuda::CUdevice dev = 0;
    cuda::CUcontext ctx = nullptr;
    cuda::CUdeviceptr ptr = 0;
    std::string bus_id;
  };
  std::vector<Device> devices;
  std::string error;  // why there is no load

  void start() {
    using namespace cuda;
    lib = DynLib::open(cuda::soname);
    fn = resolve_table<CudaFunctions>(lib);
    if (!lib) {
      error = lib.error();
      return;
    }
    const auto init = fn.cuInit;
    const auto get_count = fn.cuDeviceGetCount;
    const auto get = fn.cuDeviceGet;
    const auto get_attr = fn.cuDeviceGetAttribute;
    const auto retain = fn.cuDevicePrimaryCtxRetain;
    const auto alloc = fn.cuMemAlloc_v2;
    set_current = fn.cuCtxSetCurrent;
    memset32 = fn.cuMemsetD32_v2;
    synchronize = fn.cuCtxSynchronize;
    mem_free = fn.cuMemFree_v2;
    release = fn.cuDevicePrimaryCtxRelease_v2;
    if (init == nullptr || get_count == nullptr || get == nullptr || get_attr == nullptr || retain == nullptr ||
        alloc == nullptr || set_current == nullptr || memset32 == nullptr || synchronize == nullptr) {
      error = "a driver API entry point of the load is not exported by " + lib.path();
      return;
    }
    if (const CUresult rc = init(0); rc != CUDA_SUCCESS) {
      error = "cuInit: CUresult " + std::to_string(static_cast<int>(rc));
      return;
    }
    int count = 0;
    if (get_count(&count) != CUDA_SUCCESS) count = 0;
    for (int i = 0; i < count; ++i) {
      Device d;
      if (get(&d.dev, i) != CUDA_SUCCESS) continue;
      int dom = 0, bus = 0, slot = 0;
      get_attr(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d.dev);
      get_attr(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d.dev);
      get_attr(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d.dev);
      d.bus_id = normalize_bus_id(gpu_text::format_pci_bus_id(static_cast<unsigned>(dom), static_cast<unsigned>(bus),
                                                              static_cast<unsigned>(slot)));
      if (retain(&d.ctx, d.dev) != CUDA_SUCCESS) continue;
      if (set_current(d.ctx) != CUDA_SUCCESS || alloc(&d.ptr, kLoadBytes) != CUDA_SUCCESS) {
        if (release != nullptr) release(d.dev);
        continue;
      }
      devices.push_back(d);
    }
    if (devices.empty()) error = "no CUDA device could be given work";
  }
  void round() {
    for (const Device& d : devices) {
      if (set_current(d.ctx) != cuda::CUDA_SUCCESS) continue;
      for (int k = 0; k < kMemsetsPerRound; ++k)
        memset32(d.ptr, 0xA5A5A5A5u + static_cast<unsigned>(k), kLoadBytes / 4);
    }
  }
  void stop() {
    for (const Device& d : devices) {
      if (set_current(d.ctx) != cuda::CUDA_SUCCESS) continue;
      synchronize();
      if (mem_free != nullptr) mem_free(d.ptr);
      set_current(nullptr);
      if (release != nullptr) release(d.dev);
    }
  }
};

}  // namespace

nlohmann::json run_health(double max_load_s) {
  Reader r{DynLib::open(nvml::soname), nullptr, {}};
  r.fn = resolve_table<NvmlFunctions>(r.lib);
  if (!r.lib) return {{"error", r.lib.error()}};
  r.error_string = r.fn.nvmlErrorString;
  const auto init = r.fn.nvmlInit_v2;
  if (init == nullptr) return {{"error", "nvmlInit_v2 not exported by " + r.lib.path()}};
  if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) return {{"error", r.text("nvmlInit_v2", rc)}};
  const auto shutdown = r.fn.nvmlShutdown;
  auto fail = [&](std::string why) {
    if (shutdown != nullptr) shutdown();
    return nlohmann::json{{"error", std::move(why)}};
  };
  GpuHealthFacts facts;
  if (const auto get = r.fn.nvmlSystemGetDriverVersion) {
    char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (get(buf, sizeof buf) == NVML_SUCCESS) {
      buf[sizeof buf - 1] = '\0';
      r.driver = buf;
    }
  }
  facts.driver_version = r.driver;
  const auto get_count = r.fn.nvmlDeviceGetCount_v2;
  const auto get_handle = r.fn.nvmlDeviceGetHandleByIndex_v2;
  if (get_count == nullptr || get_handle == nullptr)
    return fail("nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 not exported");
  unsigned count = 0;
  if (const nvmlReturn_t rc = get_count(&count); rc != NVML_SUCCESS) return fail(r.text("nvmlDeviceGetCount_v2", rc));
  const auto get_name = r.fn.nvmlDeviceGetName;
  const auto get_pci = r.fn.nvmlDeviceGetPciInfo_v3;
  const auto get_persistence = r.fn.nvmlDeviceGetPersistenceMode;
  const auto get_mig = r.fn.nvmlDeviceGetMigMode;

  std::vector<nvmlDevice_t> handles;
  std::vector<std::vector<int>> links;
  std::vector<LinkErrors> before;
  for (unsigned i = 0; i < count; ++i) {
    GpuHealth g;
    g.index = static_cast<int>(i);
    nvmlDevice_t dev = nullptr;
    const nvmlReturn_t hrc = get_handle(i, &dev);
    if (hrc != NVML_SUCCESS) {
      const std::string why = r.text("nvmlDeviceGetHandleByIndex_v2", hrc);
      if (lost_code(hrc))
        g.lost = why;
      else
        g.unavailable.emplace("device", why);
      handles.push_back(nullptr);
      links.emplace_back();
      before.emplace_back();
      facts.gpus.push_back(std::move(g));
      continue;
    }
    if (get_name != nullptr) {
      char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
      if (get_name(dev, buf, sizeof buf) == NVML_SUCCESS) {
        buf[sizeof buf - 1] = '\0';
        g.name = buf;
      }
    }
    if (get_pci != nullptr) {
      nvmlPciInfo_t pci{};
      if (r.ok(g, "pci", name_nvmlDeviceGetPciInfo_v3, get_pci(dev, &pci))) {
        pci.busId[sizeof pci.busId - 1] = '\0';
        g.pci_bus_id = pci.busId;  // as NVML prints it: "00000000:18:00.0"
        if (g.pci_bus_id.empty()) g.pci_bus_id = gpu_text::format_pci_bus_id(pci.domain, pci.bus, pci.device);
      }
    }
    if (get_persistence != nullptr) {
      nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
      if (get_persistence(dev, &mode) == NVML_SUCCESS) g.persistence_mode = mode == NVML_FEATURE_ENABLED;
    }
    if (get_mig != nullptr) {
      unsigned current = 0, pending = 0;
      if (get_mig(dev, &current, &pending) == NVML_SUCCESS) g.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    }
    read_memory(r, dev, g);
    links.push_back(read_nvlinks(r, dev, g));
    before.push_back(link_errors(r, dev, g, links.back()));
    read_pcie_static(r, dev, g);
    read_fabric(r, dev, g);
    handles.push_back(dev);
    facts.gpus.push_back(std::move(g));
  }

  // XID events on every GPU, registered before the load starts and read at every sample round.
  XidWatch xids(r.fn, r.driver, "health load");
  {
    std::vector<XidDevice> devices;
    for (std::size_t i = 0; i < handles.size(); ++i)
      devices.push_back({facts.gpus[i].index, handles[i], facts.gpus[i].pci_bus_id});
    xids.start(devices);
  }

  // Under load: every CUDA device busy with cuMemsetD32 while the samples are taken.
  Load load;
  load.start();
  facts.loaded = load.error.empty();
  const auto begin = std::chrono::steady_clock::now();
  const auto limit = std::chrono::duration<double>(max_load_s);
  std::vector<int> p0(handles.size(), 0);
  int rounds = 0;
  for (;;) {
    if (facts.loaded) load.round();
    bool enough = true;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      GpuHealth& g = facts.gpus[i];
      if (handles[i] == nullptr || !g.lost.empty()) continue;
      if (sample(r, handles[i], g)) ++p0[i];
      const bool has_pstate = g.unavailable.count("pstate") == 0;
      if (has_pstate ? p0[i] < kMinLoadSamples : g.load_samples < kMinLoadSamples) enough = false;
    }
    ++rounds;
    xids.drain();
    if (enough || (rounds >= kRoundsBeforeLimit && std::chrono::steady_clock::now() - begin >= limit)) break;
  }
  if (facts.loaded) load.stop();
  facts.xid_watch = xids.finish();
  facts.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  char text[160];
  if (facts.loaded) {
    std::snprintf(text, sizeof text, "cuMemsetD32 on %zu GPU%s for %.2f s, %d sample rounds", load.devices.size(),
                  load.devices.size() == 1 ? "" : "s", facts.load_seconds, rounds);
    facts.load = text;
  } else {
    facts.load = "no load (" + load.error + "): sampled idle";
  }
  // GPUs the load did not reach were sampled idle.
  for (std::size_t i = 0; i < handles.size(); ++i) {
    GpuHealth& g = facts.gpus[i];
    if (handles[i] == nullptr) continue;
    const bool busy = std::any_of(load.devices.begin(), load.devices.end(),
                                  [&](const Load::Device& d) { return d.bus_id == normalize_bus_id(g.pci_bus_id); });
    if (!busy) g.unavailable.emplace("load", "not given work by the load (not visible to CUDA here)");
    const LinkErrors after = link_errors(r, handles[i], g, links[i]);
    if (before[i].replay && after.replay)
      g.nvlink_replay_delta = *after.replay - std::min(*after.replay, *before[i].replay);
    if (before[i].crc && after.crc) g.nvlink_crc_delta = *after.crc - std::min(*after.crc, *before[i].crc);
    if (g.pcie_replay_before) {
      if (const auto get = r.fn.nvmlDeviceGetPcieReplayCounter) {
        unsigned v = 0;
        if (get(handles[i], &v) == NVML_SUCCESS) g.pcie_replay_after = v;
      }
    }
  }
  if (shutdown != nullptr) shutdown();
  return facts;
}

}  // namespace preflight::helper
