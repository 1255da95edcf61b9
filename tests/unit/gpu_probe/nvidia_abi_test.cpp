// SPDX-License-Identifier: MIT
// Our declarations of the NVIDIA ABI subset (gpu_probe/nvidia/*_api.hpp) against the toolkit's own
// headers, where they are installed (/usr/local/cuda/include: cuda.h, nccl.h; CMake then defines
// PREFLIGHT_HAVE_CUDA_H / PREFLIGHT_HAVE_NCCL_H / PREFLIGHT_HAVE_NVML_H for this file only). Without
// them the tests skip. There is no nvml.h on the build machines: the NVML test skips and says so,
// after the layout facts that hold whatever the header.
#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"

#include <cstddef>
#include <type_traits>

#include <gtest/gtest.h>

#ifdef PREFLIGHT_HAVE_CUDA_H
#include <cuda.h>
#endif
#ifdef PREFLIGHT_HAVE_NCCL_H
#include <nccl.h>
#endif

namespace {

/// Rewrites a type spelled with our declarations into the same type spelled with the toolkit's:
/// Translate<preflight::cuda::PFN_cuInit> is the type of &::cuInit when the ABI matches.
template <typename T>
struct Translate {
  using type = T;
};
template <typename T>
using translate_t = typename Translate<T>::type;
template <typename T>
struct Translate<T*> {
  using type = translate_t<T>*;
};
template <typename T>
struct Translate<const T> {
  using type = const translate_t<T>;
};
template <typename R, typename... A>
struct Translate<R (*)(A...)> {
  using type = translate_t<R> (*)(translate_t<A>...);
};

#ifdef PREFLIGHT_HAVE_CUDA_H
template <>
struct Translate<preflight::cuda::CUresult> {
  using type = ::CUresult;
};
template <>
struct Translate<preflight::cuda::CUdevice_attribute> {
  using type = ::CUdevice_attribute;
};
template <>
struct Translate<preflight::cuda::CUuuid> {
  using type = ::CUuuid;
};
template <>
struct Translate<preflight::cuda::CUctx_st> {
  using type = ::CUctx_st;
};
template <>
struct Translate<preflight::cuda::CUstream_st> {
  using type = ::CUstream_st;
};
template <>
struct Translate<preflight::cuda::CUevent_st> {
  using type = ::CUevent_st;
};

// Every function pointer type we declare is the toolkit's. (cuda.h maps the unversioned names to
// the _v2 symbols with macros; &::cuDeviceGetUuid therefore names cuDeviceGetUuid_v2, which has
// the same signature as the old entry point we fall back to.)
#define PREFLIGHT_CHECK_CU(fn) \
  static_assert(std::is_same_v<translate_t<preflight::cuda::PFN_##fn>, decltype(&::fn)>, #fn)
PREFLIGHT_CHECK_CU(cuInit);
PREFLIGHT_CHECK_CU(cuDriverGetVersion);
PREFLIGHT_CHECK_CU(cuDeviceGetCount);
PREFLIGHT_CHECK_CU(cuDeviceGet);
PREFLIGHT_CHECK_CU(cuDeviceGetName);
PREFLIGHT_CHECK_CU(cuDeviceGetAttribute);
PREFLIGHT_CHECK_CU(cuDeviceTotalMem_v2);
PREFLIGHT_CHECK_CU(cuDeviceGetUuid_v2);
PREFLIGHT_CHECK_CU(cuDevicePrimaryCtxRetain);
PREFLIGHT_CHECK_CU(cuDevicePrimaryCtxRelease_v2);
PREFLIGHT_CHECK_CU(cuCtxSetCurrent);
PREFLIGHT_CHECK_CU(cuCtxSynchronize);
PREFLIGHT_CHECK_CU(cuMemAlloc_v2);
PREFLIGHT_CHECK_CU(cuMemFree_v2);
PREFLIGHT_CHECK_CU(cuMemsetD32_v2);
PREFLIGHT_CHECK_CU(cuMemcpyDtoH_v2);
PREFLIGHT_CHECK_CU(cuMemcpyHtoD_v2);
PREFLIGHT_CHECK_CU(cuGetErrorName);
PREFLIGHT_CHECK_CU(cuDeviceCanAccessPeer);
PREFLIGHT_CHECK_CU(cuCtxEnablePeerAccess);
PREFLIGHT_CHECK_CU(cuCtxDisablePeerAccess);
PREFLIGHT_CHECK_CU(cuMemcpyPeerAsync);
PREFLIGHT_CHECK_CU(cuStreamCreate);
PREFLIGHT_CHECK_CU(cuStreamDestroy_v2);
PREFLIGHT_CHECK_CU(cuEventCreate);
PREFLIGHT_CHECK_CU(cuEventRecord);
PREFLIGHT_CHECK_CU(cuEventQuery);
PREFLIGHT_CHECK_CU(cuEventElapsedTime_v2);
PREFLIGHT_CHECK_CU(cuEventDestroy_v2);
#undef PREFLIGHT_CHECK_CU
// cuda.h maps cuEventElapsedTime to the _v2 symbol; the original entry point has the same type.
static_assert(std::is_same_v<translate_t<preflight::cuda::PFN_cuEventElapsedTime>, decltype(&::cuEventElapsedTime_v2)>);
static_assert(std::is_same_v<translate_t<preflight::cuda::CUstream>, ::CUstream>);
static_assert(std::is_same_v<translate_t<preflight::cuda::CUevent>, ::CUevent>);
static_assert(std::is_same_v<translate_t<preflight::cuda::PFN_cuDeviceGetUuid>, decltype(&::cuDeviceGetUuid_v2)>);
static_assert(std::is_same_v<preflight::cuda::CUdevice, ::CUdevice>);
static_assert(std::is_same_v<preflight::cuda::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<translate_t<preflight::cuda::CUcontext>, ::CUcontext>);
static_assert(sizeof(preflight::cuda::CUuuid) == sizeof(::CUuuid));
static_assert(sizeof(preflight::cuda::CUresult) == sizeof(::CUresult));
static_assert(sizeof(preflight::cuda::CUdevice_attribute) == sizeof(::CUdevice_attribute));
#endif

#ifdef PREFLIGHT_HAVE_NCCL_H
template <>
struct Translate<preflight::nccl::ncclResult_t> {
  using type = ::ncclResult_t;
};
static_assert(std::is_same_v<translate_t<preflight::nccl::PFN_ncclGetVersion>, decltype(&::ncclGetVersion)>);
static_assert(std::is_same_v<translate_t<preflight::nccl::PFN_ncclGetErrorString>, decltype(&::ncclGetErrorString)>);
static_assert(sizeof(preflight::nccl::ncclResult_t) == sizeof(::ncclResult_t));
template <>
struct Translate<preflight::nccl::ncclComm> {
  using type = ::ncclComm;
};
template <>
struct Translate<preflight::nccl::ncclUniqueId> {
  using type = ::ncclUniqueId;
};
template <>
struct Translate<preflight::nccl::ncclConfig_t> {
  using type = ::ncclConfig_t;
};
template <>
struct Translate<preflight::nccl::ncclDataType_t> {
  using type = ::ncclDataType_t;
};
template <>
struct Translate<preflight::nccl::ncclRedOp_t> {
  using type = ::ncclRedOp_t;
};
#define PREFLIGHT_CHECK_NCCL(fn) \
  static_assert(std::is_same_v<translate_t<preflight::nccl::PFN_##fn>, decltype(&::fn)>, #fn)
PREFLIGHT_CHECK_NCCL(ncclGetLastError);
PREFLIGHT_CHECK_NCCL(ncclGetUniqueId);
PREFLIGHT_CHECK_NCCL(ncclCommInitRankConfig);
PREFLIGHT_CHECK_NCCL(ncclCommGetAsyncError);
PREFLIGHT_CHECK_NCCL(ncclCommFinalize);
PREFLIGHT_CHECK_NCCL(ncclCommDestroy);
PREFLIGHT_CHECK_NCCL(ncclCommAbort);
#ifdef PREFLIGHT_HAVE_CUDA_H
// cudaStream_t is struct CUstream_st*, the driver's CUstream.
PREFLIGHT_CHECK_NCCL(ncclAllReduce);
#endif
#undef PREFLIGHT_CHECK_NCCL
static_assert(std::is_same_v<translate_t<preflight::nccl::ncclComm_t>, ::ncclComm_t>);
static_assert(sizeof(preflight::nccl::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(sizeof(preflight::nccl::ncclDataType_t) == sizeof(::ncclDataType_t));
static_assert(sizeof(preflight::nccl::ncclRedOp_t) == sizeof(::ncclRedOp_t));
#endif

TEST(NvidiaAbi, CudaDriverApi) {
#ifndef PREFLIGHT_HAVE_CUDA_H
  GTEST_SKIP() << "/usr/local/cuda/include/cuda.h is not installed: cuda_api.hpp not checked";
#else
  namespace c = preflight::cuda;
  EXPECT_EQ(+c::CUDA_SUCCESS, +::CUDA_SUCCESS);
  EXPECT_EQ(+c::CUDA_ERROR_INVALID_VALUE, +::CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(+c::CUDA_ERROR_OUT_OF_MEMORY, +::CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(+c::CUDA_ERROR_NOT_INITIALIZED, +::CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(+c::CUDA_ERROR_DEINITIALIZED, +::CUDA_ERROR_DEINITIALIZED);
  EXPECT_EQ(+c::CUDA_ERROR_STUB_LIBRARY, +::CUDA_ERROR_STUB_LIBRARY);
  EXPECT_EQ(+c::CUDA_ERROR_DEVICE_UNAVAILABLE, +::CUDA_ERROR_DEVICE_UNAVAILABLE);
  EXPECT_EQ(+c::CUDA_ERROR_NO_DEVICE, +::CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(+c::CUDA_ERROR_INVALID_DEVICE, +::CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(+c::CUDA_ERROR_INVALID_CONTEXT, +::CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(+c::CUDA_ERROR_OPERATING_SYSTEM, +::CUDA_ERROR_OPERATING_SYSTEM);
  EXPECT_EQ(+c::CUDA_ERROR_NOT_FOUND, +::CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(+c::CUDA_ERROR_ILLEGAL_ADDRESS, +::CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(+c::CUDA_ERROR_LAUNCH_FAILED, +::CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(+c::CUDA_ERROR_NOT_SUPPORTED, +::CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(+c::CUDA_ERROR_SYSTEM_NOT_READY, +::CUDA_ERROR_SYSTEM_NOT_READY);
  EXPECT_EQ(+c::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, +::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
  EXPECT_EQ(+c::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, +::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
  EXPECT_EQ(+c::CUDA_ERROR_UNKNOWN, +::CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(+c::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, +::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  EXPECT_EQ(+c::CUDA_ERROR_NOT_READY, +::CUDA_ERROR_NOT_READY);
  EXPECT_EQ(+c::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, +::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(+c::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, +::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  EXPECT_EQ(+c::CUDA_ERROR_TOO_MANY_PEERS, +::CUDA_ERROR_TOO_MANY_PEERS);
  EXPECT_EQ(c::CU_STREAM_DEFAULT, static_cast<unsigned>(::CU_STREAM_DEFAULT));
  EXPECT_EQ(c::CU_EVENT_DEFAULT, static_cast<unsigned>(::CU_EVENT_DEFAULT));
  EXPECT_EQ(+c::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, +::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  EXPECT_EQ(+c::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, +::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  EXPECT_EQ(+c::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, +::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  EXPECT_EQ(+c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, +::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  EXPECT_EQ(+c::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, +::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  EXPECT_EQ(offsetof(c::CUuuid, bytes), offsetof(::CUuuid, bytes));
  // The symbol names are the exported (versioned) ones the header macros map to.
  EXPECT_STREQ(c::name_cuMemAlloc_v2, "cuMemAlloc_v2");
  EXPECT_STREQ(c::name_cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2");
  EXPECT_STREQ(c::name_cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2");
  EXPECT_STREQ(c::name_cuDeviceGetUuid_v2, "cuDeviceGetUuid_v2");
#define PREFLIGHT_STR2(x) #x
#define PREFLIGHT_STR(x) PREFLIGHT_STR2(x)
  EXPECT_STREQ(PREFLIGHT_STR(cuMemAlloc), c::name_cuMemAlloc_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuMemFree), c::name_cuMemFree_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuDeviceTotalMem), c::name_cuDeviceTotalMem_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuDevicePrimaryCtxRelease), c::name_cuDevicePrimaryCtxRelease_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuDeviceGetUuid), c::name_cuDeviceGetUuid_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuStreamDestroy), c::name_cuStreamDestroy_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuEventDestroy), c::name_cuEventDestroy_v2);
  EXPECT_STREQ(PREFLIGHT_STR(cuEventElapsedTime), c::name_cuEventElapsedTime_v2);
#undef PREFLIGHT_STR
#undef PREFLIGHT_STR2
#endif
}

TEST(NvidiaAbi, Nccl) {
#ifndef PREFLIGHT_HAVE_NCCL_H
  GTEST_SKIP() << "/usr/local/cuda/include/nccl.h is not installed: nccl_api.hpp not checked";
#else
  namespace n = preflight::nccl;
  EXPECT_EQ(+n::ncclSuccess, +::ncclSuccess);
  EXPECT_EQ(+n::ncclUnhandledCudaError, +::ncclUnhandledCudaError);
  EXPECT_EQ(+n::ncclSystemError, +::ncclSystemError);
  EXPECT_EQ(+n::ncclInternalError, +::ncclInternalError);
  EXPECT_EQ(+n::ncclInvalidArgument, +::ncclInvalidArgument);
  EXPECT_EQ(+n::ncclInvalidUsage, +::ncclInvalidUsage);
  EXPECT_EQ(+n::ncclRemoteError, +::ncclRemoteError);
  EXPECT_EQ(+n::ncclInProgress, +::ncclInProgress);
  EXPECT_EQ(n::kUniqueIdBytes, static_cast<std::size_t>(NCCL_UNIQUE_ID_BYTES));
  EXPECT_EQ(sizeof(n::ncclUniqueId), sizeof(::ncclUniqueId));
  EXPECT_EQ(+n::ncclInt32, +::ncclInt32);
  EXPECT_EQ(+n::ncclInt64, +::ncclInt64);
  EXPECT_EQ(+n::ncclUint32, +::ncclUint32);
  EXPECT_EQ(+n::ncclUint64, +::ncclUint64);
  EXPECT_EQ(+n::ncclFloat32, +::ncclFloat32);
  EXPECT_EQ(+n::ncclFloat64, +::ncclFloat64);
  EXPECT_EQ(+n::ncclSum, +::ncclSum);
  EXPECT_EQ(n::kConfigUndefInt, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(n::nccl_version(2, 28, 9), NCCL_VERSION(2, 28, 9));
  EXPECT_EQ(n::nccl_version(2, 8, 4), NCCL_VERSION(2, 8, 4));
  // ncclConfig_t: the same layout, field by field, as the installed header's. A newer nccl.h that
  // grew the struct fails here: declare its fields and its version in nccl_api.hpp.
  EXPECT_EQ(sizeof(n::ncclConfig_t), sizeof(::ncclConfig_t));
#define PREFLIGHT_CHECK_FIELD(f)                                              \
  EXPECT_EQ(offsetof(n::ncclConfig_t, f), offsetof(::ncclConfig_t, f)) << #f; \
  EXPECT_EQ(sizeof(n::ncclConfig_t::f), sizeof(::ncclConfig_t::f)) << #f
  PREFLIGHT_CHECK_FIELD(size);
  PREFLIGHT_CHECK_FIELD(magic);
  PREFLIGHT_CHECK_FIELD(version);
  PREFLIGHT_CHECK_FIELD(blocking);
  PREFLIGHT_CHECK_FIELD(cgaClusterSize);
  PREFLIGHT_CHECK_FIELD(minCTAs);
  PREFLIGHT_CHECK_FIELD(maxCTAs);
  PREFLIGHT_CHECK_FIELD(netName);
  PREFLIGHT_CHECK_FIELD(splitShare);
  PREFLIGHT_CHECK_FIELD(trafficClass);
  PREFLIGHT_CHECK_FIELD(commName);
  PREFLIGHT_CHECK_FIELD(collnetEnable);
  PREFLIGHT_CHECK_FIELD(CTAPolicy);
  PREFLIGHT_CHECK_FIELD(shrinkShare);
  PREFLIGHT_CHECK_FIELD(nvlsCTAs);
  PREFLIGHT_CHECK_FIELD(nChannelsPerNetPeer);
  PREFLIGHT_CHECK_FIELD(nvlinkCentricSched);
#undef PREFLIGHT_CHECK_FIELD
  // config_initializer() is NCCL_CONFIG_INITIALIZER, value for value.
  const ::ncclConfig_t theirs = NCCL_CONFIG_INITIALIZER;
  const n::ncclConfig_t ours = n::config_initializer();
  EXPECT_EQ(ours.size, theirs.size);
  EXPECT_EQ(ours.magic, theirs.magic);
  EXPECT_EQ(ours.version, theirs.version);
  EXPECT_EQ(ours.blocking, theirs.blocking);
  EXPECT_EQ(ours.cgaClusterSize, theirs.cgaClusterSize);
  EXPECT_EQ(ours.minCTAs, theirs.minCTAs);
  EXPECT_EQ(ours.maxCTAs, theirs.maxCTAs);
  EXPECT_EQ(ours.netName, theirs.netName);
  EXPECT_EQ(ours.splitShare, theirs.splitShare);
  EXPECT_EQ(ours.trafficClass, theirs.trafficClass);
  EXPECT_EQ(ours.commName, theirs.commName);
  EXPECT_EQ(ours.collnetEnable, theirs.collnetEnable);
  EXPECT_EQ(ours.CTAPolicy, theirs.CTAPolicy);
  EXPECT_EQ(ours.shrinkShare, theirs.shrinkShare);
  EXPECT_EQ(ours.nvlsCTAs, theirs.nvlsCTAs);
  EXPECT_EQ(ours.nChannelsPerNetPeer, theirs.nChannelsPerNetPeer);
  EXPECT_EQ(ours.nvlinkCentricSched, theirs.nvlinkCentricSched);
  EXPECT_STREQ(n::name_ncclCommInitRankConfig, "ncclCommInitRankConfig");
  EXPECT_STREQ(n::name_ncclAllReduce, "ncclAllReduce");
#endif
}

TEST(NvidiaAbi, Nvml) {
  // Layout facts that hold whatever the header (documented nvml.h layouts, x86-64/aarch64 LP64).
  namespace v = preflight::nvml;
  static_assert(sizeof(v::nvmlPciInfo_t) == 16 + 5 * 4 + 32);
  static_assert(offsetof(v::nvmlPciInfo_t, busId) == 36);
  static_assert(sizeof(v::nvmlMemory_t) == 24);
  static_assert(sizeof(v::nvmlProcessInfo_t) == 24);
  static_assert(offsetof(v::nvmlProcessInfo_t, usedGpuMemory) == 8);
  // The enum values nvml.h documents (NCCL's copy: src/include/nvmlwrap.h).
  static_assert(v::NVML_TOPOLOGY_INTERNAL == 0 && v::NVML_TOPOLOGY_SINGLE == 10 && v::NVML_TOPOLOGY_MULTIPLE == 20 &&
                v::NVML_TOPOLOGY_HOSTBRIDGE == 30 && v::NVML_TOPOLOGY_NODE == 40 && v::NVML_TOPOLOGY_SYSTEM == 50);
  static_assert(v::NVML_P2P_CAPS_INDEX_READ == 0 && v::NVML_P2P_CAPS_INDEX_WRITE == 1 &&
                v::NVML_P2P_CAPS_INDEX_NVLINK == 2 && v::NVML_P2P_CAPS_INDEX_UNKNOWN == 5);
  static_assert(v::NVML_P2P_STATUS_OK == 0 && v::NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED == 3 &&
                v::NVML_P2P_STATUS_DISABLED_BY_REGKEY == 4 && v::NVML_P2P_STATUS_UNKNOWN == 6);
  static_assert(v::NVML_AFFINITY_SCOPE_NODE == 0 && v::NVML_NVLINK_MAX_LINKS == 18);
  // The health subset (gpu-health reference: nvml.h 11.0 .. 13.0 layouts and values).
  static_assert(sizeof(v::nvmlFieldValue_t) == 40 && offsetof(v::nvmlFieldValue_t, value) == 32);
  static_assert(sizeof(v::nvmlRowRemapperHistogramValues_t) == 20);
  static_assert(sizeof(v::nvmlGpuFabricInfo_t) == 28 && offsetof(v::nvmlGpuFabricInfo_t, state) == 24);
  static_assert(sizeof(v::nvmlGpuFabricInfo_v2_t) == 36 && offsetof(v::nvmlGpuFabricInfo_v2_t, healthMask) == 32);
  static_assert(sizeof(v::nvmlGpuFabricInfo_v3_t) == 40 && offsetof(v::nvmlGpuFabricInfo_v3_t, healthSummary) == 36);
  static_assert(v::nvmlGpuFabricInfo_v2 == (36u | 2u << 24) && v::nvmlGpuFabricInfo_v3 == (40u | 3u << 24));
  static_assert(v::NVML_ERROR_GPU_IS_LOST == 15 && v::NVML_ERROR_RESET_REQUIRED == 16 &&
                v::NVML_ERROR_ARGUMENT_VERSION_MISMATCH == 25 && v::NVML_ERROR_DEPRECATED == 26);
  static_assert(v::NVML_FI_DEV_RESET_STATUS == 226 && v::NVML_FI_DEV_DRAIN_AND_RESET_STATUS == 227 &&
                v::NVML_FI_DEV_GET_GPU_RECOVERY_ACTION == 230);
  static_assert(v::NVML_NVLINK_ERROR_DL_REPLAY == 0 && v::NVML_NVLINK_ERROR_DL_RECOVERY == 1 &&
                v::NVML_NVLINK_ERROR_DL_CRC_FLIT == 2 && v::NVML_NVLINK_ERROR_DL_CRC_DATA == 3);
  static_assert(v::NVML_MEMORY_ERROR_TYPE_UNCORRECTED == 1 && v::NVML_VOLATILE_ECC == 0 && v::NVML_AGGREGATE_ECC == 1);
  static_assert(v::NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR == 1 && v::NVML_TEMPERATURE_THRESHOLD_SLOWDOWN == 1);
  // Events (nvml.h 11.0 .. 13.3: nvmlEventData_st and the nvmlEventType bits have not changed).
  static_assert(sizeof(v::nvmlEventData_t) == 32);
  static_assert(offsetof(v::nvmlEventData_t, device) == 0 && offsetof(v::nvmlEventData_t, eventType) == 8 &&
                offsetof(v::nvmlEventData_t, eventData) == 16 && offsetof(v::nvmlEventData_t, gpuInstanceId) == 24 &&
                offsetof(v::nvmlEventData_t, computeInstanceId) == 28);
  static_assert(v::nvmlEventTypeSingleBitEccError == 0x1 && v::nvmlEventTypeDoubleBitEccError == 0x2 &&
                v::nvmlEventTypePState == 0x4 && v::nvmlEventTypeXidCriticalError == 0x8 &&
                v::nvmlEventTypeClock == 0x10);
  static_assert(v::NVML_ERROR_TIMEOUT == 10 && v::NVML_XID_UNKNOWN == 999 && v::NVML_INSTANCE_ID_NONE == 0xFFFFFFFFu);
  static_assert(std::is_same_v<v::PFN_nvmlEventSetWait, v::PFN_nvmlEventSetWait_v2>);
  EXPECT_STREQ(v::name_nvmlEventSetWait_v2, "nvmlEventSetWait_v2");
  EXPECT_STREQ(v::name_nvmlEventSetCreate, "nvmlEventSetCreate");
#ifndef PREFLIGHT_HAVE_NVML_H
  GTEST_SKIP() << "no nvml.h on this machine (not installable on Debian 12): nvml_api.hpp enum values and "
                  "signatures not checked against NVIDIA's header";
#endif
}

}  // namespace

// ---- Against NVIDIA's own nvml.h, where installed --------------------------------------------------
// Included last: nvml.h defines many of the names nvml_api.hpp declares as macros (the event type
// bits, the buffer sizes, nvmlEventSetWait -> nvmlEventSetWait_v2), so what is compared is taken
// from our header first.
#ifdef PREFLIGHT_HAVE_NVML_H
namespace nvml_ours {
namespace v = preflight::nvml;
constexpr unsigned long long kSingleBitEcc = v::nvmlEventTypeSingleBitEccError;
constexpr unsigned long long kDoubleBitEcc = v::nvmlEventTypeDoubleBitEccError;
constexpr unsigned long long kPState = v::nvmlEventTypePState;
constexpr unsigned long long kXidCriticalError = v::nvmlEventTypeXidCriticalError;
constexpr unsigned long long kClock = v::nvmlEventTypeClock;
constexpr int kTimeout = v::NVML_ERROR_TIMEOUT;
constexpr int kNotSupported = v::NVML_ERROR_NOT_SUPPORTED;
constexpr int kNoPermission = v::NVML_ERROR_NO_PERMISSION;
constexpr int kFunctionNotFound = v::NVML_ERROR_FUNCTION_NOT_FOUND;
}  // namespace nvml_ours

#include <nvml.h>

namespace {
template <>
struct Translate<preflight::nvml::nvmlReturn_t> {
  using type = ::nvmlReturn_t;
};
template <>
struct Translate<preflight::nvml::nvmlDevice_st> {
  using type = ::nvmlDevice_st;
};
template <>
struct Translate<preflight::nvml::nvmlEventSet_st> {
  using type = ::nvmlEventSet_st;
};
template <>
struct Translate<preflight::nvml::nvmlEventData_t> {
  using type = ::nvmlEventData_t;
};
#define PREFLIGHT_CHECK_NVML(pfn, fn) \
  static_assert(std::is_same_v<translate_t<preflight::nvml::pfn>, decltype(&::fn)>, #fn)
PREFLIGHT_CHECK_NVML(PFN_nvmlInit_v2, nvmlInit_v2);
PREFLIGHT_CHECK_NVML(PFN_nvmlShutdown, nvmlShutdown);
PREFLIGHT_CHECK_NVML(PFN_nvmlErrorString, nvmlErrorString);
PREFLIGHT_CHECK_NVML(PFN_nvmlDeviceGetCount_v2, nvmlDeviceGetCount_v2);
PREFLIGHT_CHECK_NVML(PFN_nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex_v2);
PREFLIGHT_CHECK_NVML(PFN_nvmlEventSetCreate, nvmlEventSetCreate);
PREFLIGHT_CHECK_NVML(PFN_nvmlDeviceRegisterEvents, nvmlDeviceRegisterEvents);
PREFLIGHT_CHECK_NVML(PFN_nvmlDeviceGetSupportedEventTypes, nvmlDeviceGetSupportedEventTypes);
PREFLIGHT_CHECK_NVML(PFN_nvmlEventSetWait_v2, nvmlEventSetWait_v2);
PREFLIGHT_CHECK_NVML(PFN_nvmlEventSetFree, nvmlEventSetFree);
#undef PREFLIGHT_CHECK_NVML
static_assert(std::is_same_v<translate_t<preflight::nvml::nvmlEventSet_t>, ::nvmlEventSet_t>);
static_assert(std::is_same_v<translate_t<preflight::nvml::nvmlDevice_t>, ::nvmlDevice_t>);
static_assert(sizeof(preflight::nvml::nvmlEventData_t) == sizeof(::nvmlEventData_t));
static_assert(offsetof(preflight::nvml::nvmlEventData_t, eventType) == offsetof(::nvmlEventData_t, eventType));
static_assert(offsetof(preflight::nvml::nvmlEventData_t, eventData) == offsetof(::nvmlEventData_t, eventData));
static_assert(offsetof(preflight::nvml::nvmlEventData_t, gpuInstanceId) == offsetof(::nvmlEventData_t, gpuInstanceId));
static_assert(offsetof(preflight::nvml::nvmlEventData_t, computeInstanceId) ==
              offsetof(::nvmlEventData_t, computeInstanceId));
static_assert(nvml_ours::kSingleBitEcc == static_cast<unsigned long long>(nvmlEventTypeSingleBitEccError));
static_assert(nvml_ours::kDoubleBitEcc == static_cast<unsigned long long>(nvmlEventTypeDoubleBitEccError));
static_assert(nvml_ours::kPState == static_cast<unsigned long long>(nvmlEventTypePState));
static_assert(nvml_ours::kXidCriticalError == static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
static_assert(nvml_ours::kClock == static_cast<unsigned long long>(nvmlEventTypeClock));
static_assert(nvml_ours::kTimeout == NVML_ERROR_TIMEOUT && nvml_ours::kNotSupported == NVML_ERROR_NOT_SUPPORTED &&
              nvml_ours::kNoPermission == NVML_ERROR_NO_PERMISSION &&
              nvml_ours::kFunctionNotFound == NVML_ERROR_FUNCTION_NOT_FOUND);
}  // namespace
#endif
