// SPDX-License-Identifier: MIT
// The subset of NVML (libnvidia-ml.so.1) that preflight uses, declared from NVIDIA's documented
// API (NVML API reference; the same approach as NCCL's nvmlwrap.h, "extracted from nvml.h"), since
// no nvml.h is installable on the build machines. Resolved at run time with dlsym by the exported
// symbol name; where a struct layout differs between versions (_v1/_v2/_v3) we bind the symbol
// whose struct is declared here.
//
// Used by the contained GPU helper (gpu_probe/) and by the fake libnvidia-ml of the test tree.
#pragma once

namespace preflight::nvml {

enum nvmlReturn_t : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,  // a versioned struct's version is not supported
  NVML_ERROR_DEPRECATED = 26,                 // a removed function (treated like a missing symbol)
  NVML_ERROR_UNKNOWN = 999,
};

enum nvmlEnableState_t : int {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

/// nvmlDeviceGetMigMode's current/pending mode values.
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

// Buffer sizes (bytes, including the NUL).
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

struct nvmlDevice_st;  // opaque
using nvmlDevice_t = nvmlDevice_st*;

/// The PCI information of nvmlDeviceGetPciInfo_v3.
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "0000:18:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // combined 16-bit device id and 16-bit vendor id
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:18:00.0"
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/// The process entry of nvmlDeviceGetComputeRunningProcesses_v3 (the v2 layout; v1 lacks the
/// instance ids).
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;        // 0xFFFFFFFF when not MIG
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

/// nvmlDeviceGetMemoryAffinity / nvmlDeviceGetCpuAffinityWithinScope scope.
using nvmlAffinityScope_t = unsigned int;
inline constexpr nvmlAffinityScope_t NVML_AFFINITY_SCOPE_NODE = 0;
inline constexpr nvmlAffinityScope_t NVML_AFFINITY_SCOPE_SOCKET = 1;

/// NVML_NVLINK_MAX_LINKS of Hopper-class headers.
inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;

/// nvmlDeviceGetTopologyCommonAncestor: PCIe only (NVLink is not reflected).
enum nvmlGpuTopologyLevel_t : int {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};

enum nvmlGpuP2PCapsIndex_t : int {
  NVML_P2P_CAPS_INDEX_READ = 0,
  NVML_P2P_CAPS_INDEX_WRITE = 1,
  NVML_P2P_CAPS_INDEX_NVLINK = 2,
  NVML_P2P_CAPS_INDEX_ATOMICS = 3,
  NVML_P2P_CAPS_INDEX_PCI = 4,
  NVML_P2P_CAPS_INDEX_UNKNOWN = 5,
};

enum nvmlGpuP2PStatus_t : int {
  NVML_P2P_STATUS_OK = 0,
  NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED = 1,  // (sic) as in nvml.h
  NVML_P2P_STATUS_GPU_NOT_SUPPORTED = 2,
  NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
  NVML_P2P_STATUS_DISABLED_BY_REGKEY = 4,
  NVML_P2P_STATUS_NOT_SUPPORTED = 5,
  NVML_P2P_STATUS_UNKNOWN = 6,
};

/// nvmlDeviceGetNvLinkRemoteDeviceType.
enum nvmlIntNvLinkDeviceType_t : int {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
};

using PFN_nvmlInit_v2 = nvmlReturn_t (*)();
using PFN_nvmlShutdown = nvmlReturn_t (*)();
using PFN_nvmlErrorString = const char* (*)(nvmlReturn_t result);
using PFN_nvmlSystemGetDriverVersion = nvmlReturn_t (*)(char* version, unsigned int length);
using PFN_nvmlSystemGetCudaDriverVersion_v2 = nvmlReturn_t (*)(int* cuda_driver_version);
using PFN_nvmlSystemGetCudaDriverVersion = nvmlReturn_t (*)(int* cuda_driver_version);
using PFN_nvmlDeviceGetCount_v2 = nvmlReturn_t (*)(unsigned int* device_count);
using PFN_nvmlDeviceGetHandleByIndex_v2 = nvmlReturn_t (*)(unsigned int index, nvmlDevice_t* device);
using PFN_nvmlDeviceGetName = nvmlReturn_t (*)(nvmlDevice_t device, char* name, unsigned int length);
using PFN_nvmlDeviceGetUUID = nvmlReturn_t (*)(nvmlDevice_t device, char* uuid, unsigned int length);
using PFN_nvmlDeviceGetPciInfo_v3 = nvmlReturn_t (*)(nvmlDevice_t device, nvmlPciInfo_t* pci);
using PFN_nvmlDeviceGetCudaComputeCapability = nvmlReturn_t (*)(nvmlDevice_t device, int* major, int* minor);
using PFN_nvmlDeviceGetMemoryInfo = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemory_t* memory);
using PFN_nvmlDeviceGetComputeRunningProcesses_v3 = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* info_count,
                                                                     nvmlProcessInfo_t* infos);
using PFN_nvmlDeviceGetPersistenceMode = nvmlReturn_t (*)(nvmlDevice_t device, nvmlEnableState_t* mode);
using PFN_nvmlDeviceGetMigMode = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* current_mode,
                                                  unsigned int* pending_mode);

using PFN_nvmlDeviceGetCpuAffinity = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int cpu_set_size,
                                                      unsigned long* cpu_set);
using PFN_nvmlDeviceGetNumaNodeId = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* node);
using PFN_nvmlDeviceGetMemoryAffinity = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int node_set_size,
                                                         unsigned long* node_set, nvmlAffinityScope_t scope);
using PFN_nvmlDeviceGetNvLinkState = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                      nvmlEnableState_t* is_active);
using PFN_nvmlDeviceGetNvLinkRemotePciInfo_v2 = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                                 nvmlPciInfo_t* pci);
using PFN_nvmlDeviceGetNvLinkRemoteDeviceType = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                                 nvmlIntNvLinkDeviceType_t* type);
using PFN_nvmlDeviceGetTopologyCommonAncestor = nvmlReturn_t (*)(nvmlDevice_t device1, nvmlDevice_t device2,
                                                                 nvmlGpuTopologyLevel_t* path_info);
using PFN_nvmlDeviceGetP2PStatus = nvmlReturn_t (*)(nvmlDevice_t device1, nvmlDevice_t device2,
                                                    nvmlGpuP2PCapsIndex_t index, nvmlGpuP2PStatus_t* status);

inline constexpr char name_nvmlInit_v2[] = "nvmlInit_v2";
inline constexpr char name_nvmlShutdown[] = "nvmlShutdown";
inline constexpr char name_nvmlErrorString[] = "nvmlErrorString";
inline constexpr char name_nvmlSystemGetDriverVersion[] = "nvmlSystemGetDriverVersion";
inline constexpr char name_nvmlSystemGetCudaDriverVersion_v2[] = "nvmlSystemGetCudaDriverVersion_v2";
inline constexpr char name_nvmlSystemGetCudaDriverVersion[] = "nvmlSystemGetCudaDriverVersion";
inline constexpr char name_nvmlDeviceGetCount_v2[] = "nvmlDeviceGetCount_v2";
inline constexpr char name_nvmlDeviceGetHandleByIndex_v2[] = "nvmlDeviceGetHandleByIndex_v2";
inline constexpr char name_nvmlDeviceGetName[] = "nvmlDeviceGetName";
inline constexpr char name_nvmlDeviceGetUUID[] = "nvmlDeviceGetUUID";
inline constexpr char name_nvmlDeviceGetPciInfo_v3[] = "nvmlDeviceGetPciInfo_v3";
inline constexpr char name_nvmlDeviceGetCudaComputeCapability[] = "nvmlDeviceGetCudaComputeCapability";
inline constexpr char name_nvmlDeviceGetMemoryInfo[] = "nvmlDeviceGetMemoryInfo";
inline constexpr char name_nvmlDeviceGetComputeRunningProcesses_v3[] = "nvmlDeviceGetComputeRunningProcesses_v3";
inline constexpr char name_nvmlDeviceGetPersistenceMode[] = "nvmlDeviceGetPersistenceMode";
inline constexpr char name_nvmlDeviceGetMigMode[] = "nvmlDeviceGetMigMode";
inline constexpr char name_nvmlDeviceGetCpuAffinity[] = "nvmlDeviceGetCpuAffinity";
inline constexpr char name_nvmlDeviceGetNumaNodeId[] = "nvmlDeviceGetNumaNodeId";
inline constexpr char name_nvmlDeviceGetMemoryAffinity[] = "nvmlDeviceGetMemoryAffinity";
inline constexpr char name_nvmlDeviceGetNvLinkState[] = "nvmlDeviceGetNvLinkState";
inline constexpr char name_nvmlDeviceGetNvLinkRemotePciInfo_v2[] = "nvmlDeviceGetNvLinkRemotePciInfo_v2";
inline constexpr char name_nvmlDeviceGetNvLinkRemoteDeviceType[] = "nvmlDeviceGetNvLinkRemoteDeviceType";
inline constexpr char name_nvmlDeviceGetTopologyCommonAncestor[] = "nvmlDeviceGetTopologyCommonAncestor";
inline constexpr char name_nvmlDeviceGetP2PStatus[] = "nvmlDeviceGetP2PStatus";

// ---- Health (gpu.memory_health, gpu.clocks, gpu.links, gpu.fabric) ------------------------------
// Each resolved optionally: a symbol an older libnvidia-ml lacks (or that answers
// NVML_ERROR_FUNCTION_NOT_FOUND / NVML_ERROR_DEPRECATED) leaves its fact empty, with the reason.

/// nvmlDeviceGetTotalEccErrors.
enum nvmlMemoryErrorType_t : int {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
};
enum nvmlEccCounterType_t : int {
  NVML_VOLATILE_ECC = 0,
  NVML_AGGREGATE_ECC = 1,
};

/// nvmlDeviceGetRetiredPages.
enum nvmlPageRetirementCause_t : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};

/// nvmlDeviceGetRowRemapperHistogram: banks by the spare rows they have left.
struct nvmlRowRemapperHistogramValues_t {
  unsigned int max;
  unsigned int high;
  unsigned int partial;
  unsigned int low;
  unsigned int none;
};

/// nvmlDeviceGetPerformanceState: 0 (P0, maximum) .. 15; 32 unknown.
using nvmlPstates_t = int;
inline constexpr nvmlPstates_t NVML_PSTATE_0 = 0;
inline constexpr nvmlPstates_t NVML_PSTATE_UNKNOWN = 32;

enum nvmlTemperatureSensors_t : int { NVML_TEMPERATURE_GPU = 0 };
enum nvmlTemperatureThresholds_t : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
};

/// nvmlDeviceGetNvLinkErrorCounter.
enum nvmlNvLinkErrorCounter_t : int {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
};

/// nvmlDeviceGetFieldValues.
enum nvmlValueType_t : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
};
union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};
inline constexpr unsigned int NVML_FI_DEV_RESET_STATUS = 226;             // R560, deprecated by 230
inline constexpr unsigned int NVML_FI_DEV_DRAIN_AND_RESET_STATUS = 227;   // R560
inline constexpr unsigned int NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230;  // R570

/// nvmlGpuFabricState_t (unsigned char).
using nvmlGpuFabricState_t = unsigned char;
inline constexpr unsigned int NVML_GPU_FABRIC_UUID_LEN = 16;

/// nvmlDeviceGetGpuFabricInfo (R525, deprecated in 13.0): no version field.
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
};
/// nvmlDeviceGetGpuFabricInfoV (R550): v2 adds the version and the health mask, v3 (R580) the summary.
struct nvmlGpuFabricInfo_v2_t {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
};
struct nvmlGpuFabricInfo_v3_t {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
  unsigned char healthSummary;
};
/// NVML_STRUCT_VERSION(GpuFabricInfo, v): sizeof | v << 24.
inline constexpr unsigned int nvmlGpuFabricInfo_v2 =
    static_cast<unsigned int>(sizeof(nvmlGpuFabricInfo_v2_t) | (2u << 24));
inline constexpr unsigned int nvmlGpuFabricInfo_v3 =
    static_cast<unsigned int>(sizeof(nvmlGpuFabricInfo_v3_t) | (3u << 24));

using PFN_nvmlDeviceGetRemappedRows = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* corr_rows,
                                                       unsigned int* unc_rows, unsigned int* is_pending,
                                                       unsigned int* failure_occurred);
using PFN_nvmlDeviceGetRowRemapperHistogram = nvmlReturn_t (*)(nvmlDevice_t device,
                                                               nvmlRowRemapperHistogramValues_t* values);
using PFN_nvmlDeviceGetRetiredPagesPendingStatus = nvmlReturn_t (*)(nvmlDevice_t device, nvmlEnableState_t* is_pending);
using PFN_nvmlDeviceGetRetiredPages = nvmlReturn_t (*)(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                       unsigned int* page_count, unsigned long long* addresses);
using PFN_nvmlDeviceGetEccMode = nvmlReturn_t (*)(nvmlDevice_t device, nvmlEnableState_t* current,
                                                  nvmlEnableState_t* pending);
using PFN_nvmlDeviceGetTotalEccErrors = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemoryErrorType_t error_type,
                                                         nvmlEccCounterType_t counter_type,
                                                         unsigned long long* ecc_counts);
using PFN_nvmlDeviceGetFieldValues = nvmlReturn_t (*)(nvmlDevice_t device, int values_count, nvmlFieldValue_t* values);
using PFN_nvmlDeviceGetCurrentClocksEventReasons = nvmlReturn_t (*)(nvmlDevice_t device,
                                                                    unsigned long long* clocks_event_reasons);
using PFN_nvmlDeviceGetCurrentClocksThrottleReasons = nvmlReturn_t (*)(nvmlDevice_t device,
                                                                       unsigned long long* clocks_throttle_reasons);
using PFN_nvmlDeviceGetPerformanceState = nvmlReturn_t (*)(nvmlDevice_t device, nvmlPstates_t* p_state);
using PFN_nvmlDeviceGetTemperature = nvmlReturn_t (*)(nvmlDevice_t device, nvmlTemperatureSensors_t sensor_type,
                                                      unsigned int* temp);
using PFN_nvmlDeviceGetTemperatureThreshold = nvmlReturn_t (*)(nvmlDevice_t device,
                                                               nvmlTemperatureThresholds_t threshold_type,
                                                               unsigned int* temp);
using PFN_nvmlDeviceGetCurrPcieLinkGeneration = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* curr_link_gen);
using PFN_nvmlDeviceGetCurrPcieLinkWidth = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* curr_link_width);
using PFN_nvmlDeviceGetMaxPcieLinkGeneration = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* max_link_gen);
using PFN_nvmlDeviceGetMaxPcieLinkWidth = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* max_link_width);
using PFN_nvmlDeviceGetGpuMaxPcieLinkGeneration = nvmlReturn_t (*)(nvmlDevice_t device,
                                                                   unsigned int* max_link_gen_device);
using PFN_nvmlDeviceGetPcieReplayCounter = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int* value);
using PFN_nvmlDeviceGetNvLinkErrorCounter = nvmlReturn_t (*)(nvmlDevice_t device, unsigned int link,
                                                             nvmlNvLinkErrorCounter_t counter,
                                                             unsigned long long* counter_value);
using PFN_nvmlDeviceGetGpuFabricInfo = nvmlReturn_t (*)(nvmlDevice_t device, nvmlGpuFabricInfo_t* gpu_fabric_info);
/// The argument is an nvmlGpuFabricInfo_v2_t or _v3_t by its version field (nvmlGpuFabricInfoV_t).
using PFN_nvmlDeviceGetGpuFabricInfoV = nvmlReturn_t (*)(nvmlDevice_t device, nvmlGpuFabricInfo_v3_t* gpu_fabric_info);

inline constexpr char name_nvmlDeviceGetRemappedRows[] = "nvmlDeviceGetRemappedRows";
inline constexpr char name_nvmlDeviceGetRowRemapperHistogram[] = "nvmlDeviceGetRowRemapperHistogram";
inline constexpr char name_nvmlDeviceGetRetiredPagesPendingStatus[] = "nvmlDeviceGetRetiredPagesPendingStatus";
inline constexpr char name_nvmlDeviceGetRetiredPages[] = "nvmlDeviceGetRetiredPages";
inline constexpr char name_nvmlDeviceGetEccMode[] = "nvmlDeviceGetEccMode";
inline constexpr char name_nvmlDeviceGetTotalEccErrors[] = "nvmlDeviceGetTotalEccErrors";
inline constexpr char name_nvmlDeviceGetFieldValues[] = "nvmlDeviceGetFieldValues";
inline constexpr char name_nvmlDeviceGetCurrentClocksEventReasons[] = "nvmlDeviceGetCurrentClocksEventReasons";
inline constexpr char name_nvmlDeviceGetCurrentClocksThrottleReasons[] = "nvmlDeviceGetCurrentClocksThrottleReasons";
inline constexpr char name_nvmlDeviceGetPerformanceState[] = "nvmlDeviceGetPerformanceState";
inline constexpr char name_nvmlDeviceGetTemperature[] = "nvmlDeviceGetTemperature";
inline constexpr char name_nvmlDeviceGetTemperatureThreshold[] = "nvmlDeviceGetTemperatureThreshold";
inline constexpr char name_nvmlDeviceGetCurrPcieLinkGeneration[] = "nvmlDeviceGetCurrPcieLinkGeneration";
inline constexpr char name_nvmlDeviceGetCurrPcieLinkWidth[] = "nvmlDeviceGetCurrPcieLinkWidth";
inline constexpr char name_nvmlDeviceGetMaxPcieLinkGeneration[] = "nvmlDeviceGetMaxPcieLinkGeneration";
inline constexpr char name_nvmlDeviceGetMaxPcieLinkWidth[] = "nvmlDeviceGetMaxPcieLinkWidth";
inline constexpr char name_nvmlDeviceGetGpuMaxPcieLinkGeneration[] = "nvmlDeviceGetGpuMaxPcieLinkGeneration";
inline constexpr char name_nvmlDeviceGetPcieReplayCounter[] = "nvmlDeviceGetPcieReplayCounter";
inline constexpr char name_nvmlDeviceGetNvLinkErrorCounter[] = "nvmlDeviceGetNvLinkErrorCounter";
inline constexpr char name_nvmlDeviceGetGpuFabricInfo[] = "nvmlDeviceGetGpuFabricInfo";
inline constexpr char name_nvmlDeviceGetGpuFabricInfoV[] = "nvmlDeviceGetGpuFabricInfoV";

// ---- Events (gpu.xid: XIDs raised while preflight's own GPU work runs) --------------------------
// Unprivileged, unlike the kernel log, but they see only what happens after the registration.
// nvmlEventSetWait_v2 is in every header since NVML 11.0 (R450); older libraries export only
// nvmlEventSetWait, whose nvmlEventData_t lacks the two instance ids (it fills a prefix of this
// struct). NVML_ERROR_TIMEOUT from a wait means no event arrived. Each resolved optionally.

struct nvmlEventSet_st;  // opaque
using nvmlEventSet_t = nvmlEventSet_st*;

/// nvmlEventType bits (unsigned long long masks).
inline constexpr unsigned long long nvmlEventTypeNone = 0x0ULL;
inline constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1ULL;
inline constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2ULL;
inline constexpr unsigned long long nvmlEventTypePState = 0x4ULL;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
inline constexpr unsigned long long nvmlEventTypeClock = 0x10ULL;

/// What nvmlEventSetWait_v2 delivers. eventData is the Xid for nvmlEventTypeXidCriticalError (999
/// when NVML does not know it); the instance ids are 0xFFFFFFFF unless MIG attributes the event.
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long NVML_XID_UNKNOWN = 999;
inline constexpr unsigned int NVML_INSTANCE_ID_NONE = 0xFFFFFFFFu;

using PFN_nvmlEventSetCreate = nvmlReturn_t (*)(nvmlEventSet_t* set);
using PFN_nvmlDeviceRegisterEvents = nvmlReturn_t (*)(nvmlDevice_t device, unsigned long long event_types,
                                                      nvmlEventSet_t set);
using PFN_nvmlDeviceGetSupportedEventTypes = nvmlReturn_t (*)(nvmlDevice_t device, unsigned long long* event_types);
using PFN_nvmlEventSetWait_v2 = nvmlReturn_t (*)(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
using PFN_nvmlEventSetWait = nvmlReturn_t (*)(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
using PFN_nvmlEventSetFree = nvmlReturn_t (*)(nvmlEventSet_t set);

inline constexpr char name_nvmlEventSetCreate[] = "nvmlEventSetCreate";
inline constexpr char name_nvmlDeviceRegisterEvents[] = "nvmlDeviceRegisterEvents";
inline constexpr char name_nvmlDeviceGetSupportedEventTypes[] = "nvmlDeviceGetSupportedEventTypes";
inline constexpr char name_nvmlEventSetWait_v2[] = "nvmlEventSetWait_v2";
inline constexpr char name_nvmlEventSetWait[] = "nvmlEventSetWait";
inline constexpr char name_nvmlEventSetFree[] = "nvmlEventSetFree";

/// Every function declared above, once each: X(name) for PFN_name and name_name.
// One function list, as many names a line as fit (clang-format would make a staircase of it).
// clang-format off
#define PREFLIGHT_NVML_FUNCTIONS(X) \
  X(nvmlInit_v2) X(nvmlShutdown) X(nvmlErrorString) X(nvmlSystemGetDriverVersion) \
  X(nvmlSystemGetCudaDriverVersion_v2) X(nvmlSystemGetCudaDriverVersion) X(nvmlDeviceGetCount_v2) \
  X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetName) X(nvmlDeviceGetUUID) X(nvmlDeviceGetPciInfo_v3) \
  X(nvmlDeviceGetCudaComputeCapability) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetComputeRunningProcesses_v3) \
  X(nvmlDeviceGetPersistenceMode) X(nvmlDeviceGetMigMode) X(nvmlDeviceGetCpuAffinity) X(nvmlDeviceGetNumaNodeId) \
  X(nvmlDeviceGetMemoryAffinity) X(nvmlDeviceGetNvLinkState) X(nvmlDeviceGetNvLinkRemotePciInfo_v2) \
  X(nvmlDeviceGetNvLinkRemoteDeviceType) X(nvmlDeviceGetTopologyCommonAncestor) X(nvmlDeviceGetP2PStatus) \
  X(nvmlDeviceGetRemappedRows) X(nvmlDeviceGetRowRemapperHistogram) X(nvmlDeviceGetRetiredPagesPendingStatus) \
  X(nvmlDeviceGetRetiredPages) X(nvmlDeviceGetEccMode) X(nvmlDeviceGetTotalEccErrors) X(nvmlDeviceGetFieldValues) \
  X(nvmlDeviceGetCurrentClocksEventReasons) X(nvmlDeviceGetCurrentClocksThrottleReasons) \
  X(nvmlDeviceGetPerformanceState) X(nvmlDeviceGetTemperature) X(nvmlDeviceGetTemperatureThreshold) \
  X(nvmlDeviceGetCurrPcieLinkGeneration) X(nvmlDeviceGetCurrPcieLinkWidth) X(nvmlDeviceGetMaxPcieLinkGeneration) \
  X(nvmlDeviceGetMaxPcieLinkWidth) X(nvmlDeviceGetGpuMaxPcieLinkGeneration) X(nvmlDeviceGetPcieReplayCounter) \
  X(nvmlDeviceGetNvLinkErrorCounter) X(nvmlDeviceGetGpuFabricInfo) X(nvmlDeviceGetGpuFabricInfoV) \
  X(nvmlEventSetCreate) X(nvmlDeviceRegisterEvents) X(nvmlDeviceGetSupportedEventTypes) X(nvmlEventSetWait_v2) \
  X(nvmlEventSetWait) X(nvmlEventSetFree)
// clang-format on

/// The functions of one opened libnvidia-ml, resolved once (resolve_table in gpu_probe/dynlib.hpp): a member is
/// null when the library does not export that symbol (an older driver), and every caller checks before calling.
struct NvmlFunctions {
#define PREFLIGHT_NVML_MEMBER(name) PFN_##name name = nullptr;
  PREFLIGHT_NVML_FUNCTIONS(PREFLIGHT_NVML_MEMBER)
#undef PREFLIGHT_NVML_MEMBER

  /// Every member looked up by its exported name with lib.get<PFN_name>(name_name) (null when absent).
  template <typename Lib>
  static NvmlFunctions resolve(const Lib& lib) {
    NvmlFunctions table;
#define PREFLIGHT_NVML_RESOLVE(name) table.name = lib.template get<PFN_##name>(name_##name);
    PREFLIGHT_NVML_FUNCTIONS(PREFLIGHT_NVML_RESOLVE)
#undef PREFLIGHT_NVML_RESOLVE
    return table;
  }
};

/// The soname opened with dlopen (what NCCL opens too).
inline constexpr char soname[] = "libnvidia-ml.so.1";

/// A function this driver's NVML does not have (an older or newer driver): absent, not failed.
inline bool absent(nvmlReturn_t rc) { return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_DEPRECATED; }

}  // namespace preflight::nvml
