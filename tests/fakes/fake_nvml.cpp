// SPDX-License-Identifier: MIT
// The fake libnvidia-ml.so.1 of the test tree: the NVML subset of gpu_probe/nvidia/nvml_api.hpp,
// serving the scenario of $PREFLIGHT_FAKE_GPU (tests/fakes/README.md). Like real NVML it sees every
// GPU of the node (CUDA_VISIBLE_DEVICES and nvml_only_gpus do not apply), counts nvmlInit_v2 /
// nvmlShutdown pairs, and answers NVML_ERROR_UNINITIALIZED outside them. Its event sets deliver
// the scenario's xid_events on the GPUs registered for them.
#include <dlfcn.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gpu_probe/nvidia/nvml_api.hpp"
#include "tests/fakes/scenario.hpp"

using namespace preflight::nvml;
namespace fake = preflight::fake_gpu;

struct preflight::nvml::nvmlDevice_st {
  unsigned int index = 0;
  unsigned int replay_reads = 0;      // nvmlDeviceGetPcieReplayCounter calls so far
  unsigned int nvlink_reads[4] = {};  // nvmlDeviceGetNvLinkErrorCounter calls on link 0, per counter
};

/// An event set: the GPUs registered for XID events, and which scripted XIDs it delivered.
struct preflight::nvml::nvmlEventSet_st {
  std::set<std::size_t> xid_gpus;
  std::vector<bool> delivered;  // per scenario xid_events entry
};

namespace {

struct State {
  std::mutex mutex;
  int init_count = 0;
  bool loaded = false;
  fake::LoadedScenario scenario;
  std::vector<nvmlDevice_st> devices;
  std::list<nvmlEventSet_st> event_sets;  // stable addresses: the handles
};

State& state() {
  static State s;  // destroyed at dlclose / exit
  return s;
}

const fake::Gpu* gpu_of(State& s, nvmlDevice_t device) {
  for (const nvmlDevice_st& d : s.devices)
    if (&d == device) return &s.scenario.scenario.gpus[d.index];
  return nullptr;
}

nvmlReturn_t copy_string(char* dst, unsigned int length, const std::string& src) {
  if (dst == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (src.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(dst, src.c_str(), src.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace

#define PREFLIGHT_FAKE_REQUIRE_INIT() \
  State& s = state();                 \
  std::lock_guard lock(s.mutex);      \
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED

/// A device handle, lost or not (what NVML still answers for a lost GPU: its PCI identity).
#define PREFLIGHT_FAKE_REQUIRE_HANDLE(device) \
  PREFLIGHT_FAKE_REQUIRE_INIT();              \
  const fake::Gpu* gpu = gpu_of(s, device);   \
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT

/// A device that answers: a GPU the scenario marks lost answers its lost code.
#define PREFLIGHT_FAKE_REQUIRE_DEVICE(device) \
  PREFLIGHT_FAKE_REQUIRE_HANDLE(device);      \
  if (gpu->lost != 0) return static_cast<nvmlReturn_t>(gpu->lost)

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlInit_v2() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.loaded) {
    s.scenario = fake::load_scenario_from_env();
    s.loaded = true;
    s.devices.resize(s.scenario.scenario.gpus.size());
    for (std::size_t i = 0; i < s.devices.size(); ++i) s.devices[i].index = static_cast<unsigned int>(i);
  }
  if (!s.scenario.error.empty()) {
    std::fprintf(stderr, "fake libnvidia-ml.so.1: %s\n", s.scenario.error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  const fake::Fault& fault = s.scenario.scenario.nvml_init;
  fake::enact(fault);  // a crash or a hang does not come back
  if (fault.kind == fake::Fault::Kind::Error) return static_cast<nvmlReturn_t>(fault.code);
  ++s.init_count;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  --s.init_count;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (static_cast<int>(result)) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    default: return "Unknown Error";
  }
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  return copy_string(version, length, s.scenario.scenario.driver_version);
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cuda_driver_version) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (cuda_driver_version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cuda_driver_version = s.scenario.scenario.cuda_driver_version;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cuda_driver_version) {
  return nvmlSystemGetCudaDriverVersion_v2(cuda_driver_version);
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* device_count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (device_count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *device_count = static_cast<unsigned int>(s.devices.size());
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (device == nullptr || index >= s.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &s.devices[index];
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  return copy_string(name, length, gpu->name);
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  return copy_string(uuid, length, gpu->uuid);
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  PREFLIGHT_FAKE_REQUIRE_HANDLE(device);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", gpu->pci_domain & 0xffffu, gpu->pci_bus,
                gpu->pci_device, gpu->pci_function);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", gpu->pci_bus_id.c_str());
  pci->domain = gpu->pci_domain;
  pci->bus = gpu->pci_bus;
  pci->device = gpu->pci_device;
  pci->pciDeviceId = gpu->pci_device_id;
  pci->pciSubSystemId = 0x16C110DE;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *major = gpu->cc_major;
  *minor = gpu->cc_minor;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = gpu->memory_total_mib * fake::kMiB;
  memory->used = gpu->memory_used_mib * fake::kMiB;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

/// NVML's sizing protocol: with *info_count too small (0 and a null array to ask), the count needed
/// is stored and NVML_ERROR_INSUFFICIENT_SIZE returned; no processes is NVML_SUCCESS with 0.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                           unsigned int* info_count,
                                                                           nvmlProcessInfo_t* infos) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  if (info_count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto n = static_cast<unsigned int>(gpu->processes.size());
  if (*info_count < n) {
    *info_count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (n > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < n; ++i) {
    infos[i].pid = gpu->processes[i].pid;
    infos[i].usedGpuMemory = gpu->processes[i].used_mib * fake::kMiB;
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *info_count = n;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *mode = gpu->persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current_mode,
                                                        unsigned int* pending_mode) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  if (current_mode == nullptr || pending_mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpu->mig) return NVML_ERROR_NOT_SUPPORTED;
  *current_mode = *pending_mode = *gpu->mig ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

#define PREFLIGHT_FAKE_UNLESS_MISSING(fn) \
  if (s.scenario.scenario.nvml_function_missing(#fn)) return NVML_ERROR_FUNCTION_NOT_FOUND

namespace {

/// The index of a device handle, or -1.
long index_of(State& s, nvmlDevice_t device) {
  for (const nvmlDevice_st& d : s.devices)
    if (&d == device) return static_cast<long>(d.index);
  return -1;
}

/// The lost code of either GPU of a pair (indices into gpus); 0 when neither is lost.
int pair_lost(State& s, long a, long b) {
  const auto& gpus = s.scenario.scenario.gpus;
  const int la = gpus[static_cast<std::size_t>(a)].lost;
  return la != 0 ? la : gpus[static_cast<std::size_t>(b)].lost;
}

nvmlGpuP2PStatus_t p2p_code(const std::string& label) {
  if (label == "OK") return NVML_P2P_STATUS_OK;
  if (label == "CNS") return NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED;
  if (label == "GNS") return NVML_P2P_STATUS_GPU_NOT_SUPPORTED;
  if (label == "TNS") return NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED;
  if (label == "DR") return NVML_P2P_STATUS_DISABLED_BY_REGKEY;
  if (label == "NS") return NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_P2P_STATUS_UNKNOWN;
}

}  // namespace

/// The scenario's "cpu_affinity" as a bit mask of cpu_set_size unsigned longs (CPUs beyond it are
/// dropped, as NVML does); NOT_SUPPORTED without one.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpu_set_size,
                                                            unsigned long* cpu_set) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetCpuAffinity);
  if (cpu_set == nullptr || cpu_set_size == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpu->cpu_affinity) return NVML_ERROR_NOT_SUPPORTED;
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  for (unsigned int i = 0; i < cpu_set_size; ++i) cpu_set[i] = 0;
  for (int cpu : *gpu->cpu_affinity) {
    const auto c = static_cast<unsigned>(cpu);
    if (c / kBits < cpu_set_size) cpu_set[c / kBits] |= 1UL << (c % kBits);
  }
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetNumaNodeId);
  if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpu->numa_node) return NVML_ERROR_NOT_SUPPORTED;
  *node = static_cast<unsigned int>(*gpu->numa_node);
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int node_set_size,
                                                               unsigned long* node_set, nvmlAffinityScope_t scope) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetMemoryAffinity);
  if (node_set == nullptr || node_set_size == 0 || scope > NVML_AFFINITY_SCOPE_SOCKET)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpu->numa_node) return NVML_ERROR_NOT_SUPPORTED;
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  for (unsigned int i = 0; i < node_set_size; ++i) node_set[i] = 0;
  const auto n = static_cast<unsigned>(*gpu->numa_node);
  if (n / kBits < node_set_size) node_set[n / kBits] |= 1UL << (n % kBits);
  return NVML_SUCCESS;
}

/// GPUs without NVLinks answer NOT_SUPPORTED (as PCIe boards do); links below "nvlinks" are enabled.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                            nvmlEnableState_t* is_active) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetNvLinkState);
  if (is_active == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  *is_active = static_cast<int>(link) < gpu->nvlinks ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                                       nvmlPciInfo_t* pci) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetNvLinkRemotePciInfo_v2);
  if (pci == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (static_cast<int>(link) >= gpu->nvlinks) return NVML_ERROR_NOT_FOUND;
  *pci = nvmlPciInfo_t{};
  std::string bus_id;
  if (gpu->nvlink_to_switch) {
    bus_id = fake::nvswitch_bus_id(static_cast<int>(link));
  } else {
    const auto peer = static_cast<std::size_t>(index_of(s, device)) ^ 1u;
    if (peer >= s.scenario.scenario.gpus.size()) return NVML_ERROR_NOT_FOUND;
    bus_id = s.scenario.scenario.gpus[peer].pci_bus_id;
  }
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", bus_id.c_str() + 4);
  unsigned domain = 0, bus = 0, dev = 0;
  std::sscanf(bus_id.c_str(), "%x:%x:%x", &domain, &bus, &dev);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                                       nvmlIntNvLinkDeviceType_t* type) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetNvLinkRemoteDeviceType);
  if (type == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (static_cast<int>(link) >= gpu->nvlinks) return NVML_ERROR_NOT_FOUND;
  *type = gpu->nvlink_to_switch ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                                       nvmlGpuTopologyLevel_t* path_info) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetTopologyCommonAncestor);
  const long a = index_of(s, device1), b = index_of(s, device2);
  if (a < 0 || b < 0 || path_info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (const int lost = pair_lost(s, a, b)) return static_cast<nvmlReturn_t>(lost);
  const std::string label = s.scenario.scenario.path(static_cast<std::size_t>(a), static_cast<std::size_t>(b));
  if (label == "PIX")
    *path_info = NVML_TOPOLOGY_SINGLE;
  else if (label == "PXB")
    *path_info = NVML_TOPOLOGY_MULTIPLE;
  else if (label == "PHB")
    *path_info = NVML_TOPOLOGY_HOSTBRIDGE;
  else if (label == "NODE")
    *path_info = NVML_TOPOLOGY_NODE;
  else if (label == "SYS")
    *path_info = NVML_TOPOLOGY_SYSTEM;
  else
    *path_info = NVML_TOPOLOGY_INTERNAL;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                          nvmlGpuP2PCapsIndex_t index, nvmlGpuP2PStatus_t* status) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetP2PStatus);
  const long a = index_of(s, device1), b = index_of(s, device2);
  if (a < 0 || b < 0 || a == b || status == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (const int lost = pair_lost(s, a, b)) return static_cast<nvmlReturn_t>(lost);
  const fake::P2pStatus st = s.scenario.scenario.p2p_status(static_cast<std::size_t>(a), static_cast<std::size_t>(b));
  switch (index) {
    case NVML_P2P_CAPS_INDEX_READ: *status = p2p_code(st.read); return NVML_SUCCESS;
    case NVML_P2P_CAPS_INDEX_WRITE: *status = p2p_code(st.write); return NVML_SUCCESS;
    case NVML_P2P_CAPS_INDEX_NVLINK: *status = p2p_code(st.nvlink); return NVML_SUCCESS;
    case NVML_P2P_CAPS_INDEX_ATOMICS:
    case NVML_P2P_CAPS_INDEX_PCI: *status = p2p_code(st.read); return NVML_SUCCESS;
    case NVML_P2P_CAPS_INDEX_UNKNOWN: break;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

// ---- Health: the scenario's per-GPU "health" object ---------------------------------------------

namespace {

int driver_major(const State& s) { return std::atoi(s.scenario.scenario.driver_version.c_str()); }

}  // namespace

#define PREFLIGHT_FAKE_HEALTH(device, fn)       \
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);        \
  PREFLIGHT_FAKE_UNLESS_MISSING(fn);            \
  const fake::GpuHealthScript& h = gpu->health; \
  if (h.lost != 0) return static_cast<nvmlReturn_t>(h.lost)

/// Ampere and newer, MIG off; NOT_SUPPORTED otherwise (as NVML documents).
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr_rows,
                                                             unsigned int* unc_rows, unsigned int* is_pending,
                                                             unsigned int* failure_occurred) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetRemappedRows);
  if (corr_rows == nullptr || unc_rows == nullptr || is_pending == nullptr || failure_occurred == nullptr)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->cc_major < 8 || gpu->mig.value_or(false)) return NVML_ERROR_NOT_SUPPORTED;
  *corr_rows = h.remap_correctable;
  *unc_rows = h.remap_uncorrectable;
  *is_pending = h.remap_pending ? 1 : 0;
  *failure_occurred = h.remap_failure ? 1 : 0;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t device,
                                                                     nvmlRowRemapperHistogramValues_t* values) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetRowRemapperHistogram);
  if (values == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->cc_major < 8 || gpu->mig.value_or(false)) return NVML_ERROR_NOT_SUPPORTED;
  *values = nvmlRowRemapperHistogramValues_t{640, 0, 0, 0, h.remap_banks_exhausted};
  return NVML_SUCCESS;
}

/// Before Ampere only.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                          nvmlEnableState_t* is_pending) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetRetiredPagesPendingStatus);
  if (is_pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->cc_major >= 8) return NVML_ERROR_NOT_SUPPORTED;
  *is_pending = h.retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

/// The sizing protocol: *page_count 0 asks for the count (NVML_SUCCESS with it when there are none).
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                             unsigned int* page_count, unsigned long long* addresses) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetRetiredPages);
  if (page_count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->cc_major >= 8) return NVML_ERROR_NOT_SUPPORTED;
  const unsigned n = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? h.retired_dbe : h.retired_sbe;
  if (*page_count < n) {
    *page_count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n && addresses != nullptr; ++i) addresses[i] = 0x1000ull * (i + 1);
  *page_count = n;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                                        nvmlEnableState_t* pending) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetEccMode);
  if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *current = h.ecc ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  *pending = h.ecc_pending.value_or(h.ecc) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

/// "Requires ECC Mode to be enabled": NOT_SUPPORTED with ECC off.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                                               nvmlEccCounterType_t counter_type,
                                                               unsigned long long* ecc_counts) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetTotalEccErrors);
  if (ecc_counts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!h.ecc) return NVML_ERROR_NOT_SUPPORTED;
  if (error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
    *ecc_counts = counter_type == NVML_VOLATILE_ECC ? h.ecc_dbe_volatile : h.ecc_dbe_aggregate;
  else
    *ecc_counts = counter_type == NVML_VOLATILE_ECC ? h.ecc_sbe_volatile : h.ecc_sbe_volatile;
  return NVML_SUCCESS;
}

/// Fields 230 (recovery action, driver 570+) and 226/227 (reset / drain-and-reset status, 560+);
/// any other field answers NVML_ERROR_NOT_SUPPORTED in its value.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int values_count,
                                                            nvmlFieldValue_t* values) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetFieldValues);
  if (values == nullptr || values_count <= 0) return NVML_ERROR_INVALID_ARGUMENT;
  const int major = driver_major(s);
  for (int i = 0; i < values_count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    if (v.fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && major >= 570) {
      v.nvmlReturn = NVML_SUCCESS;
      v.value.uiVal = static_cast<unsigned>(h.recovery_action);
    } else if (v.fieldId == NVML_FI_DEV_RESET_STATUS && major >= 560) {
      v.nvmlReturn = NVML_SUCCESS;
      v.value.uiVal = h.recovery_action == 1 ? 1u : 0u;
    } else if (v.fieldId == NVML_FI_DEV_DRAIN_AND_RESET_STATUS && major >= 560) {
      v.nvmlReturn = NVML_SUCCESS;
      v.value.uiVal = h.recovery_action == 4 ? 1u : 0u;
    }
  }
  return NVML_SUCCESS;
}

/// Driver 535 and newer; the older name answers on every driver.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                          unsigned long long* clocks_event_reasons) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetCurrentClocksEventReasons);
  if (clocks_event_reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (driver_major(s) < 535) return NVML_ERROR_FUNCTION_NOT_FOUND;
  *clocks_event_reasons = h.clock_event_reasons;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* clocks_throttle_reasons) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetCurrentClocksThrottleReasons);
  if (clocks_throttle_reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *clocks_throttle_reasons = h.clock_event_reasons;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t* p_state) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetPerformanceState);
  if (p_state == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *p_state = h.pstate;
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor_type,
                                                            unsigned int* temp) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetTemperature);
  if (temp == nullptr || sensor_type != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = static_cast<unsigned>(h.temperature);
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                                     nvmlTemperatureThresholds_t threshold_type,
                                                                     unsigned int* temp) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetTemperatureThreshold);
  if (temp == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = static_cast<unsigned>(threshold_type == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN ? h.slowdown_temperature
                                                                                      : h.slowdown_temperature + 5);
  return NVML_SUCCESS;
}

#define PREFLIGHT_FAKE_PCIE(fn, field)                                              \
  PREFLIGHT_FAKE_EXPORT nvmlReturn_t fn(nvmlDevice_t device, unsigned int* value) { \
    PREFLIGHT_FAKE_HEALTH(device, fn);                                              \
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;                       \
    *value = static_cast<unsigned>(h.field);                                        \
    return NVML_SUCCESS;                                                            \
  }
PREFLIGHT_FAKE_PCIE(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen)
PREFLIGHT_FAKE_PCIE(nvmlDeviceGetCurrPcieLinkWidth, pcie_width)
PREFLIGHT_FAKE_PCIE(nvmlDeviceGetMaxPcieLinkGeneration, pcie_gen_max)
PREFLIGHT_FAKE_PCIE(nvmlDeviceGetMaxPcieLinkWidth, pcie_width_max)
PREFLIGHT_FAKE_PCIE(nvmlDeviceGetGpuMaxPcieLinkGeneration, pcie_gen_gpu_max)

/// "pcie_replay", then "pcie_replay_rise" more at every later read.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetPcieReplayCounter);
  if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *value = h.pcie_replay + h.pcie_replay_rise * device->replay_reads++;
  return NVML_SUCCESS;
}

/// Link 0's replay and CRC flit counters rise by "nvlink_replay_rise" / "nvlink_crc_rise" at every
/// read after the first; the others stay 0.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                                   nvmlNvLinkErrorCounter_t counter,
                                                                   unsigned long long* counter_value) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetNvLinkErrorCounter);
  if (counter_value == nullptr || link >= NVML_NVLINK_MAX_LINKS || counter < 0 || counter > 3)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  *counter_value = 0;
  if (link == 0) {
    const unsigned reads = device->nvlink_reads[counter]++;
    if (counter == NVML_NVLINK_ERROR_DL_REPLAY) *counter_value = h.nvlink_replay_rise * reads;
    if (counter == NVML_NVLINK_ERROR_DL_CRC_FLIT) *counter_value = h.nvlink_crc_rise * reads;
  }
  return NVML_SUCCESS;
}

namespace {

/// Hopper and newer GPUs with NVLinks to NVSwitches take part in a fabric (completed by default).
int fabric_state_of(const fake::Gpu& g) {
  if (g.health.fabric_state) return *g.health.fabric_state;
  return g.cc_major >= 9 && g.nvlinks > 0 && g.nvlink_to_switch ? 3 : 0;
}

}  // namespace

/// Driver 525 and newer.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetGpuFabricInfo);
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (driver_major(s) < 525) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const int state = fabric_state_of(*gpu);
  if (state == 0) return NVML_ERROR_NOT_SUPPORTED;
  *info = nvmlGpuFabricInfo_t{};
  info->clusterUuid[15] = 0x01;
  info->status = static_cast<nvmlReturn_t>(h.fabric_status);
  info->cliqueId = h.fabric_clique_id;
  info->state = static_cast<nvmlGpuFabricState_t>(state);
  return NVML_SUCCESS;
}

/// Driver 550 and newer: v2; v3 from 580 (an older driver answers ARGUMENT_VERSION_MISMATCH to it).
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfo_v3_t* info) {
  PREFLIGHT_FAKE_HEALTH(device, nvmlDeviceGetGpuFabricInfoV);
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const int major = driver_major(s);
  if (major < 550) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const unsigned version = info->version;
  if (version != nvmlGpuFabricInfo_v2 && version != nvmlGpuFabricInfo_v3) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (version == nvmlGpuFabricInfo_v3 && major < 580) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const int state = fabric_state_of(*gpu);
  if (state == 0) return NVML_ERROR_NOT_SUPPORTED;
  nvmlGpuFabricInfo_v2_t v2{};
  v2.version = version;
  v2.clusterUuid[15] = 0x01;
  v2.status = static_cast<nvmlReturn_t>(h.fabric_status);
  v2.cliqueId = h.fabric_clique_id;
  v2.state = static_cast<nvmlGpuFabricState_t>(state);
  v2.healthMask = h.fabric_health_mask;
  if (version == nvmlGpuFabricInfo_v2) {
    std::memcpy(static_cast<void*>(info), &v2, sizeof v2);  // the caller's struct is a v2
    return NVML_SUCCESS;
  }
  info->version = version;
  std::memcpy(info->clusterUuid, v2.clusterUuid, sizeof v2.clusterUuid);
  info->status = v2.status;
  info->cliqueId = v2.cliqueId;
  info->state = v2.state;
  info->healthMask = v2.healthMask;
  info->healthSummary = static_cast<unsigned char>(h.fabric_health_summary);
  return NVML_SUCCESS;
}

// ---- Events: the scenario's "xid_events", per-GPU "events" ----------------------------------------

namespace {

nvmlEventSet_st* find_set(State& s, nvmlEventSet_t set) {
  for (nvmlEventSet_st& e : s.event_sets)
    if (&e == set) return &e;
  return nullptr;
}

/// A datacenter GPU's event types: ECC (with ECC on), P-state and XID; no XID where not supported.
unsigned long long supported_events(const fake::Gpu& g) {
  unsigned long long types = nvmlEventTypePState | nvmlEventTypeXidCriticalError;
  if (g.health.ecc) types |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
  if (g.events == fake::Gpu::Events::NotSupported) types &= ~nvmlEventTypeXidCriticalError;
  return types;
}

/// The next scripted XID for a GPU the set watches, marked delivered; nullptr: none pending.
const fake::XidEventScript* next_event(State& s, nvmlEventSet_st& set) {
  const std::vector<fake::XidEventScript>& events = s.scenario.scenario.xid_events;
  set.delivered.resize(events.size(), false);
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (set.delivered[i] || set.xid_gpus.count(events[i].gpu) == 0) continue;
    if (events[i].during_nccl) {  // raised by NCCL's work: only a process running NCCL sees it
      void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
      if (nccl == nullptr) continue;
      dlclose(nccl);
    }
    set.delivered[i] = true;
    return &events[i];
  }
  return nullptr;
}

/// nvmlEventSetWait_v2 / nvmlEventSetWait: `bytes` of nvmlEventData_t are written (the old entry
/// point's struct lacks the instance ids). Nothing pending: sleeps the timeout, NVML_ERROR_TIMEOUT.
nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms, std::size_t bytes,
                        const char* fn) {
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (s.scenario.scenario.nvml_function_missing(fn)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlEventSet_st* e = find_set(s, set);
    if (e == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (const fake::XidEventScript* x = next_event(s, *e)) {
      nvmlEventData_t out{};
      out.device = &s.devices[x->gpu];
      out.eventType = nvmlEventTypeXidCriticalError;
      out.eventData = x->xid;
      out.gpuInstanceId = x->gpu_instance.value_or(NVML_INSTANCE_ID_NONE);
      out.computeInstanceId = x->compute_instance.value_or(NVML_INSTANCE_ID_NONE);
      std::memcpy(static_cast<void*>(data), &out, bytes);
      return NVML_SUCCESS;
    }
  }
  if (timeoutms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeoutms));
  return NVML_ERROR_TIMEOUT;
}

}  // namespace

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlEventSetCreate);
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = &s.event_sets.emplace_back();
  return NVML_SUCCESS;
}

/// NOT_SUPPORTED for an event type the GPU lacks (the set stays usable), NO_PERMISSION where the
/// scenario says so, the lost code of a lost GPU.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long event_types,
                                                            nvmlEventSet_t set) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceRegisterEvents);
  nvmlEventSet_st* e = find_set(s, set);
  if (e == nullptr || event_types == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->health.lost != 0) return static_cast<nvmlReturn_t>(gpu->health.lost);
  if ((event_types & ~supported_events(*gpu)) != 0) return NVML_ERROR_NOT_SUPPORTED;
  if (gpu->events == fake::Gpu::Events::NoPermission) return NVML_ERROR_NO_PERMISSION;
  if ((event_types & nvmlEventTypeXidCriticalError) != 0) e->xid_gpus.insert(device->index);
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                                    unsigned long long* event_types) {
  PREFLIGHT_FAKE_REQUIRE_DEVICE(device);
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlDeviceGetSupportedEventTypes);
  if (event_types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->health.lost != 0) return static_cast<nvmlReturn_t>(gpu->health.lost);
  *event_types = supported_events(*gpu);
  return NVML_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                       unsigned int timeoutms) {
  return event_wait(set, data, timeoutms, sizeof(nvmlEventData_t), "nvmlEventSetWait_v2");
}

/// The pre-11.0 entry point: its nvmlEventData_t ends after eventData.
PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return event_wait(set, data, timeoutms, offsetof(nvmlEventData_t, gpuInstanceId), "nvmlEventSetWait");
}

PREFLIGHT_FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_UNLESS_MISSING(nvmlEventSetFree);
  for (auto it = s.event_sets.begin(); it != s.event_sets.end(); ++it) {
    if (&*it != set) continue;
    s.event_sets.erase(it);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

// The fake and the header can never drift: every export has exactly the header's type.
#define PREFLIGHT_FAKE_SAME_TYPE(fn) static_assert(std::is_same_v<decltype(&fn), PFN_##fn>, #fn)
PREFLIGHT_FAKE_SAME_TYPE(nvmlInit_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlShutdown);
PREFLIGHT_FAKE_SAME_TYPE(nvmlErrorString);
PREFLIGHT_FAKE_SAME_TYPE(nvmlSystemGetDriverVersion);
PREFLIGHT_FAKE_SAME_TYPE(nvmlSystemGetCudaDriverVersion_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlSystemGetCudaDriverVersion);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCount_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetHandleByIndex_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetName);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetUUID);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetPciInfo_v3);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCudaComputeCapability);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetMemoryInfo);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetComputeRunningProcesses_v3);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetPersistenceMode);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetMigMode);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCpuAffinity);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetNumaNodeId);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetMemoryAffinity);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetNvLinkState);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetNvLinkRemotePciInfo_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetNvLinkRemoteDeviceType);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetTopologyCommonAncestor);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetP2PStatus);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetRemappedRows);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetRowRemapperHistogram);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetRetiredPagesPendingStatus);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetRetiredPages);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetEccMode);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetTotalEccErrors);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetFieldValues);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCurrentClocksEventReasons);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCurrentClocksThrottleReasons);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetPerformanceState);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetTemperature);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetTemperatureThreshold);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCurrPcieLinkGeneration);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetCurrPcieLinkWidth);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetMaxPcieLinkGeneration);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetMaxPcieLinkWidth);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetGpuMaxPcieLinkGeneration);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetPcieReplayCounter);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetNvLinkErrorCounter);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetGpuFabricInfo);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetGpuFabricInfoV);
PREFLIGHT_FAKE_SAME_TYPE(nvmlEventSetCreate);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceRegisterEvents);
PREFLIGHT_FAKE_SAME_TYPE(nvmlDeviceGetSupportedEventTypes);
PREFLIGHT_FAKE_SAME_TYPE(nvmlEventSetWait_v2);
PREFLIGHT_FAKE_SAME_TYPE(nvmlEventSetWait);
PREFLIGHT_FAKE_SAME_TYPE(nvmlEventSetFree);
