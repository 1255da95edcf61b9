// SPDX-License-Identifier: MIT
// The fake libnccl.so.2 of the test tree: ncclGetVersion and ncclGetErrorString
// (probes/nvidia/nccl_api.hpp), plus the "NCCL version X.Y.Z+cudaA.B" string real NCCL carries in
// its read-only data, which preflight finds by scanning the file for the CUDA it was built for.
//
// That string is fixed when the library is built: PREFLIGHT_FAKE_NCCL_VERSION (default
// "2.21.5+cuda12.4"; tests/CMakeLists.txt builds a second copy for "2.28.9+cuda13.0").
// ncclGetVersion returns the scenario's "nccl_version" when it has one, else the code of that
// string (2.21.5 → 22105), so by default the two agree.
#include <cstdio>
#include <mutex>
#include <type_traits>

#include "probes/nvidia/nccl_api.hpp"
#include "tests/fakes/scenario.hpp"

#ifndef PREFLIGHT_FAKE_NCCL_VERSION
#define PREFLIGHT_FAKE_NCCL_VERSION "2.21.5+cuda12.4"
#endif

using namespace preflight::nccl;
namespace fake = preflight::fake_gpu;

/// Exported and marked used so that neither the compiler nor the linker drops it.
PREFLIGHT_FAKE_EXPORT __attribute__((used)) const char preflight_fake_nccl_version_string[] =
    "NCCL version " PREFLIGHT_FAKE_NCCL_VERSION;
static_assert(sizeof("NCCL version ") - 1 == 13);

namespace {

/// NCCL_VERSION_CODE of the embedded string: major*10000 + minor*100 + patch (NCCL >= 2.9).
int embedded_version_code() {
  // Past "NCCL version ", so that the library holds that phrase only once.
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(preflight_fake_nccl_version_string + 13, "%d.%d.%d", &major, &minor, &patch) != 3) return 0;
  return major * 10000 + minor * 100 + patch;
}

const fake::LoadedScenario& scenario() {
  static const fake::LoadedScenario loaded = [] {
    fake::LoadedScenario l = fake::load_scenario_from_env();
    if (!l.error.empty()) std::fprintf(stderr, "fake libnccl.so.2: %s\n", l.error.c_str());
    return l;
  }();
  return loaded;
}

}  // namespace

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  const fake::LoadedScenario& loaded = scenario();
  if (!loaded.error.empty()) return ncclSystemError;
  *version = loaded.scenario.nccl_version.value_or(embedded_version_code());
  return ncclSuccess;
}

PREFLIGHT_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (static_cast<int>(result)) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

#define PREFLIGHT_FAKE_SAME_TYPE(fn) static_assert(std::is_same_v<decltype(&fn), PFN_##fn>, #fn)
PREFLIGHT_FAKE_SAME_TYPE(ncclGetVersion);
PREFLIGHT_FAKE_SAME_TYPE(ncclGetErrorString);
