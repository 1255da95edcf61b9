// SPDX-License-Identifier: MIT
// The subset of the NCCL API (libnccl.so.2) that preflight uses, declared from NCCL's documented
// API so that nothing needs nccl.h to build. Resolved at run time with dlsym. Checked against nccl.h
// by tests/unit/gpu_probe/nvidia_abi_test.cpp where the header is installed.
#pragma once

#include <climits>
#include <cstddef>

#include "gpu_probe/nvidia/cuda_api.hpp"

namespace preflight::nccl {

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};
/// ncclTimeout exists from NCCL 2.30 on (older headers end the list with ncclNumResults = 8).
inline constexpr int ncclTimeoutCode = 8;

/// NCCL_VERSION(X,Y,Z) of nccl.h: the code of a release (2.8.4 -> 2804, 2.28.9 -> 22809).
constexpr int nccl_version(int x, int y, int z) {
  return (x <= 2 && y <= 8) ? x * 1000 + y * 100 + z : x * 10000 + y * 100 + z;
}

/// An opaque communicator.
struct ncclComm;
using ncclComm_t = ncclComm*;

/// The id (nccl.h: NCCL_UNIQUE_ID_BYTES) every rank of one communicator passes to ncclCommInitRank*: made once
/// (ncclGetUniqueId) and broadcast by the caller. It carries the bootstrap root's address: without NCCL_COMM_ID the
/// root is a thread of the process that made the id, which must then outlive every rank's init;
/// with NCCL_COMM_ID=<addr>:<port> the root is started by rank 0's init at that address.
inline constexpr std::size_t kUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kUniqueIdBytes];
};

enum ncclDataType_t : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
};

enum ncclRedOp_t : int {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
};

/// kConfigUndefInt / NCCL_CONFIG_UNDEF_PTR: "let NCCL choose".
inline constexpr int kConfigUndefInt = INT_MIN;
inline constexpr unsigned int kConfigMagic = 0xcafebeefu;

/// ncclConfig_t as nccl.h 2.28 declares it (struct ncclConfig_v22800). The library reads `size`,
/// `magic` and `version` first and only the fields that layout version has, so an older NCCL
/// (2.14 on: blocking is in every version) accepts it and a newer one reads no further than `size`.
/// Every field must start as NCCL_CONFIG_INITIALIZER sets it: use config_initializer().
struct ncclConfig_t {
  std::size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
};
/// The NCCL version whose header declares this layout (what NCCL_CONFIG_INITIALIZER puts in `version`).
inline constexpr unsigned int kConfigLayoutVersion = static_cast<unsigned int>(nccl_version(2, 28, 9));
/// The smallest config any NCCL with ncclCommInitRankConfig reads: through `blocking` (2.14).
inline constexpr std::size_t kConfigMinSize = offsetof(ncclConfig_t, blocking) + sizeof(int);

/// NCCL_CONFIG_INITIALIZER.
constexpr ncclConfig_t config_initializer() {
  return ncclConfig_t{
      sizeof(ncclConfig_t), kConfigMagic,    kConfigLayoutVersion, kConfigUndefInt, kConfigUndefInt, kConfigUndefInt,
      kConfigUndefInt,      nullptr,         kConfigUndefInt,      kConfigUndefInt, nullptr,         kConfigUndefInt,
      kConfigUndefInt,      kConfigUndefInt, kConfigUndefInt,      kConfigUndefInt, kConfigUndefInt};
}

using PFN_ncclGetVersion = ncclResult_t (*)(int* version);
using PFN_ncclGetErrorString = const char* (*)(ncclResult_t result);
using PFN_ncclGetLastError = const char* (*)(ncclComm_t comm);
using PFN_ncclGetUniqueId = ncclResult_t (*)(ncclUniqueId* unique_id);
/// The unique id is passed by value (128 bytes), as nccl.h declares it.
using PFN_ncclCommInitRankConfig = ncclResult_t (*)(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank,
                                                    ncclConfig_t* config);
using PFN_ncclCommGetAsyncError = ncclResult_t (*)(ncclComm_t comm, ncclResult_t* async_error);
/// cudaStream_t is the driver's CUstream (struct CUstream_st*).
using PFN_ncclAllReduce = ncclResult_t (*)(const void* sendbuff, void* recvbuff, std::size_t count,
                                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                           cuda::CUstream stream);
using PFN_ncclCommFinalize = ncclResult_t (*)(ncclComm_t comm);
using PFN_ncclCommDestroy = ncclResult_t (*)(ncclComm_t comm);
using PFN_ncclCommAbort = ncclResult_t (*)(ncclComm_t comm);

inline constexpr char name_ncclGetVersion[] = "ncclGetVersion";
inline constexpr char name_ncclGetErrorString[] = "ncclGetErrorString";
inline constexpr char name_ncclGetLastError[] = "ncclGetLastError";
inline constexpr char name_ncclGetUniqueId[] = "ncclGetUniqueId";
inline constexpr char name_ncclCommInitRankConfig[] = "ncclCommInitRankConfig";
inline constexpr char name_ncclCommGetAsyncError[] = "ncclCommGetAsyncError";
inline constexpr char name_ncclAllReduce[] = "ncclAllReduce";
inline constexpr char name_ncclCommFinalize[] = "ncclCommFinalize";
inline constexpr char name_ncclCommDestroy[] = "ncclCommDestroy";
inline constexpr char name_ncclCommAbort[] = "ncclCommAbort";

/// Every function declared above, once each: X(name) for PFN_name and name_name.
// One function list, as many names a line as fit (clang-format would make a staircase of it).
// clang-format off
#define PREFLIGHT_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetLastError) X(ncclGetUniqueId) X(ncclCommInitRankConfig) \
  X(ncclCommGetAsyncError) X(ncclAllReduce) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort)
// clang-format on

/// The functions of one opened libnccl, resolved once (resolve_table in gpu_probe/dynlib.hpp): a member is
/// null when the library does not export that symbol (an older NCCL), and every caller checks before calling.
struct NcclFunctions {
#define PREFLIGHT_NCCL_MEMBER(name) PFN_##name name = nullptr;
  PREFLIGHT_NCCL_FUNCTIONS(PREFLIGHT_NCCL_MEMBER)
#undef PREFLIGHT_NCCL_MEMBER

  /// Every member looked up by its exported name with lib.get<PFN_name>(name_name) (null when absent).
  template <typename Lib>
  static NcclFunctions resolve(const Lib& lib) {
    NcclFunctions table;
#define PREFLIGHT_NCCL_RESOLVE(name) table.name = lib.template get<PFN_##name>(name_##name);
    PREFLIGHT_NCCL_FUNCTIONS(PREFLIGHT_NCCL_RESOLVE)
#undef PREFLIGHT_NCCL_RESOLVE
    return table;
  }
};

inline constexpr char soname[] = "libnccl.so.2";

}  // namespace preflight::nccl
