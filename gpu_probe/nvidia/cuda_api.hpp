// SPDX-License-Identifier: MIT
// The subset of the CUDA driver API (libcuda.so.1) that preflight uses, declared from NVIDIA's
// documented API (CUDA Driver API reference) so that nothing needs cuda.h to build. Everything is
// resolved at run time with dlsym by the *exported* symbol name: several entry points are
// versioned in the ABI (cuMemAlloc_v2, ...) and the unversioned names are either absent or keep an
// old 32-bit signature. tests/unit/gpu_probe/nvidia_abi_test.cpp checks these declarations against cuda.h
// where the toolkit headers are installed.
//
// Used by the contained GPU helper (gpu_probe/) and by the fake libcuda of the test tree.
#pragma once

#include <cstddef>

namespace preflight::cuda {

/// CUresult: 0 is success. The enumerators are the codes preflight names; any other value may come
/// back from a driver and must be handled (cuGetErrorName gives its name).
enum CUresult : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  /// NOT in cuda.h: 35 is the *runtime* API's cudaErrorInsufficientDriver (the ABI test against
  /// cuda.h showed the driver API has no such enumerator). Kept for the fakes and for mapping
  /// runtime-reported codes; the driver itself does not return it.
  CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  CUDA_ERROR_TOO_MANY_PEERS = 711,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_SYSTEM_NOT_READY = 802,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  CUDA_ERROR_UNKNOWN = 999,
};

/// Only the attributes preflight reads.
enum CUdevice_attribute : int {
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

using CUdevice = int;                    // a device ordinal handle
using CUdeviceptr = unsigned long long;  // 64-bit device address (the _v2 ABI)
struct CUctx_st;                         // opaque
using CUcontext = CUctx_st*;
struct CUstream_st;  // opaque
using CUstream = CUstream_st*;
struct CUevent_st;  // opaque
using CUevent = CUevent_st*;
/// cuStreamCreate / cuEventCreate flags used here.
inline constexpr unsigned int CU_STREAM_DEFAULT = 0;
inline constexpr unsigned int CU_EVENT_DEFAULT = 0;
struct CUuuid {
  char bytes[16];
};

// The function types, one per exported symbol that preflight resolves.
using PFN_cuInit = CUresult (*)(unsigned int flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* driver_version);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice dev);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, CUdevice_attribute attrib, CUdevice dev);
using PFN_cuDeviceTotalMem_v2 = CUresult (*)(std::size_t* bytes, CUdevice dev);
using PFN_cuDeviceGetUuid_v2 = CUresult (*)(CUuuid* uuid, CUdevice dev);
using PFN_cuDeviceGetUuid = CUresult (*)(CUuuid* uuid, CUdevice dev);  // fallback (older drivers)
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* pctx, CUdevice dev);
using PFN_cuDevicePrimaryCtxRelease_v2 = CUresult (*)(CUdevice dev);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuMemAlloc_v2 = CUresult (*)(CUdeviceptr* dptr, std::size_t bytesize);
using PFN_cuMemFree_v2 = CUresult (*)(CUdeviceptr dptr);
using PFN_cuMemsetD32_v2 = CUresult (*)(CUdeviceptr dst, unsigned int value, std::size_t count);
using PFN_cuMemcpyDtoH_v2 = CUresult (*)(void* dst_host, CUdeviceptr src_device, std::size_t byte_count);
using PFN_cuMemcpyHtoD_v2 = CUresult (*)(CUdeviceptr dst_device, const void* src_host, std::size_t byte_count);
using PFN_cuDeviceCanAccessPeer = CUresult (*)(int* can_access_peer, CUdevice dev, CUdevice peer_dev);
using PFN_cuCtxEnablePeerAccess = CUresult (*)(CUcontext peer_context, unsigned int flags);
using PFN_cuCtxDisablePeerAccess = CUresult (*)(CUcontext peer_context);
using PFN_cuMemcpyPeerAsync = CUresult (*)(CUdeviceptr dst_device, CUcontext dst_context, CUdeviceptr src_device,
                                           CUcontext src_context, std::size_t byte_count, CUstream stream);
using PFN_cuStreamCreate = CUresult (*)(CUstream* stream, unsigned int flags);
using PFN_cuStreamDestroy_v2 = CUresult (*)(CUstream stream);
using PFN_cuEventCreate = CUresult (*)(CUevent* event, unsigned int flags);
using PFN_cuEventRecord = CUresult (*)(CUevent event, CUstream stream);
using PFN_cuEventQuery = CUresult (*)(CUevent event);
/// cuEventElapsedTime_v2 (CUDA >= 12.8; what cuda.h 13 maps the name to), else the original
/// cuEventElapsedTime: the same signature.
using PFN_cuEventElapsedTime_v2 = CUresult (*)(float* milliseconds, CUevent start, CUevent end);
using PFN_cuEventElapsedTime = CUresult (*)(float* milliseconds, CUevent start, CUevent end);
using PFN_cuEventDestroy_v2 = CUresult (*)(CUevent event);
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** name);

// The exported names (what dlsym needs). The fallback is tried when the first is absent.
inline constexpr char name_cuInit[] = "cuInit";
inline constexpr char name_cuDriverGetVersion[] = "cuDriverGetVersion";
inline constexpr char name_cuDeviceGetCount[] = "cuDeviceGetCount";
inline constexpr char name_cuDeviceGet[] = "cuDeviceGet";
inline constexpr char name_cuDeviceGetName[] = "cuDeviceGetName";
inline constexpr char name_cuDeviceGetAttribute[] = "cuDeviceGetAttribute";
inline constexpr char name_cuDeviceTotalMem_v2[] = "cuDeviceTotalMem_v2";
inline constexpr char name_cuDeviceGetUuid_v2[] = "cuDeviceGetUuid_v2";
inline constexpr char name_cuDeviceGetUuid[] = "cuDeviceGetUuid";
inline constexpr char name_cuDevicePrimaryCtxRetain[] = "cuDevicePrimaryCtxRetain";
inline constexpr char name_cuDevicePrimaryCtxRelease_v2[] = "cuDevicePrimaryCtxRelease_v2";
inline constexpr char name_cuCtxSetCurrent[] = "cuCtxSetCurrent";
inline constexpr char name_cuCtxSynchronize[] = "cuCtxSynchronize";
inline constexpr char name_cuMemAlloc_v2[] = "cuMemAlloc_v2";
inline constexpr char name_cuMemFree_v2[] = "cuMemFree_v2";
inline constexpr char name_cuMemsetD32_v2[] = "cuMemsetD32_v2";
inline constexpr char name_cuMemcpyDtoH_v2[] = "cuMemcpyDtoH_v2";
inline constexpr char name_cuMemcpyHtoD_v2[] = "cuMemcpyHtoD_v2";
inline constexpr char name_cuDeviceCanAccessPeer[] = "cuDeviceCanAccessPeer";
inline constexpr char name_cuCtxEnablePeerAccess[] = "cuCtxEnablePeerAccess";
inline constexpr char name_cuCtxDisablePeerAccess[] = "cuCtxDisablePeerAccess";
inline constexpr char name_cuMemcpyPeerAsync[] = "cuMemcpyPeerAsync";
inline constexpr char name_cuStreamCreate[] = "cuStreamCreate";
inline constexpr char name_cuStreamDestroy_v2[] = "cuStreamDestroy_v2";
inline constexpr char name_cuEventCreate[] = "cuEventCreate";
inline constexpr char name_cuEventRecord[] = "cuEventRecord";
inline constexpr char name_cuEventQuery[] = "cuEventQuery";
inline constexpr char name_cuEventElapsedTime_v2[] = "cuEventElapsedTime_v2";
inline constexpr char name_cuEventElapsedTime[] = "cuEventElapsedTime";
inline constexpr char name_cuEventDestroy_v2[] = "cuEventDestroy_v2";
inline constexpr char name_cuGetErrorName[] = "cuGetErrorName";

/// Every function declared above, once each: X(name) for PFN_name and name_name.
// One function list, as many names a line as fit (clang-format would make a staircase of it).
// clang-format off
#define PREFLIGHT_CUDA_FUNCTIONS(X) \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem_v2) X(cuDeviceGetUuid_v2) X(cuDeviceGetUuid) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc_v2) X(cuMemFree_v2) \
  X(cuMemsetD32_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyHtoD_v2) X(cuDeviceCanAccessPeer) X(cuCtxEnablePeerAccess) \
  X(cuCtxDisablePeerAccess) X(cuMemcpyPeerAsync) X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuEventCreate) \
  X(cuEventRecord) X(cuEventQuery) X(cuEventElapsedTime_v2) X(cuEventElapsedTime) X(cuEventDestroy_v2) \
  X(cuGetErrorName)
// clang-format on

/// The functions of one opened libcuda, resolved once (resolve_table in gpu_probe/dynlib.hpp): a member is
/// null when the library does not export that symbol (an older driver), and every caller checks before calling.
struct CudaFunctions {
#define PREFLIGHT_CUDA_MEMBER(name) PFN_##name name = nullptr;
  PREFLIGHT_CUDA_FUNCTIONS(PREFLIGHT_CUDA_MEMBER)
#undef PREFLIGHT_CUDA_MEMBER

  /// Every member looked up by its exported name with lib.get<PFN_name>(name_name) (null when absent).
  template <typename Lib>
  static CudaFunctions resolve(const Lib& lib) {
    CudaFunctions table;
#define PREFLIGHT_CUDA_RESOLVE(name) table.name = lib.template get<PFN_##name>(name_##name);
    PREFLIGHT_CUDA_FUNCTIONS(PREFLIGHT_CUDA_RESOLVE)
#undef PREFLIGHT_CUDA_RESOLVE
    return table;
  }
};

/// The soname opened with dlopen (the loader search, so LD_LIBRARY_PATH selects it).
inline constexpr char soname[] = "libcuda.so.1";

}  // namespace preflight::cuda
