// SPDX-License-Identifier: MIT
// The subset of the NCCL API (libnccl.so.2) that preflight uses, declared from NCCL's documented
// API so that nothing needs nccl.h to build. Resolved at run time with dlsym. Checked against nccl.h
// by tests/unit/nvidia_abi_test.cpp where the header is installed.
#pragma once

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

using PFN_ncclGetVersion = ncclResult_t (*)(int* version);
using PFN_ncclGetErrorString = const char* (*)(ncclResult_t result);

inline constexpr char name_ncclGetVersion[] = "ncclGetVersion";
inline constexpr char name_ncclGetErrorString[] = "ncclGetErrorString";

inline constexpr char soname[] = "libnccl.so.2";

}  // namespace preflight::nccl
