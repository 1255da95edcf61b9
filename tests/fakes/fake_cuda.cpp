// SPDX-License-Identifier: MIT
// The fake libcuda.so.1 of the test tree: the CUDA driver API subset of probes/nvidia/cuda_api.hpp,
// serving the scenario of $PREFLIGHT_FAKE_GPU (tests/fakes/README.md). Like the real driver it
// reads CUDA_VISIBLE_DEVICES once, at the first cuInit, and cuInit fails with CUDA_ERROR_NO_DEVICE
// when no device is visible. Device memory is host memory, so a write and read-back really happen.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>

#include "probes/nvidia/cuda_api.hpp"
#include "tests/fakes/scenario.hpp"

using namespace preflight::cuda;
namespace fake = preflight::fake_gpu;

struct preflight::cuda::CUctx_st {
  int device = 0;
};

namespace {

struct State {
  std::mutex mutex;
  bool initialised = false;
  fake::LoadedScenario loaded;
  std::vector<std::size_t> devices;  // CUDA ordinal → index into the scenario's GPUs
  std::vector<CUctx_st> contexts;    // one primary context per device
  std::vector<int> retained;
  std::set<CUdeviceptr> allocations;
};

State& state() {
  static State s;  // destroyed at dlclose / exit
  return s;
}

thread_local CUcontext current_context = nullptr;

const fake::Scenario& scenario() { return state().loaded.scenario; }

bool valid_device(CUdevice dev) {
  return dev >= 0 && static_cast<std::size_t>(dev) < state().devices.size();
}

const fake::Gpu& gpu_of(CUdevice dev) { return scenario().gpus[state().devices[static_cast<std::size_t>(dev)]]; }

/// The result of an entry point's fault: CUDA_SUCCESS to go on, else the code to return.
CUresult apply(const fake::Fault& fault) {
  fake::enact(fault);  // a crash or a hang does not come back
  if (fault.kind == fake::Fault::Kind::Error) return static_cast<CUresult>(fault.code);
  return CUDA_SUCCESS;
}

void copy_string(char* dst, int len, const std::string& src) {
  if (len <= 0) return;
  const std::size_t n = std::min(src.size(), static_cast<std::size_t>(len - 1));
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

struct ErrorName {
  int code;
  const char* name;
};
constexpr ErrorName kErrorNames[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
    {CUDA_ERROR_INSUFFICIENT_DRIVER, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
    {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

}  // namespace

PREFLIGHT_FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (s.initialised) return CUDA_SUCCESS;
  s.loaded = fake::load_scenario_from_env();
  if (!s.loaded.error.empty()) {
    std::fprintf(stderr, "fake libcuda.so.1: %s\n", s.loaded.error.c_str());
    return CUDA_ERROR_UNKNOWN;
  }
  if (const CUresult r = apply(s.loaded.scenario.cu_init); r != CUDA_SUCCESS) return r;
  s.devices = fake::cuda_visible_gpus(s.loaded.scenario, std::getenv("CUDA_VISIBLE_DEVICES"));
  if (s.devices.empty()) return CUDA_ERROR_NO_DEVICE;
  s.contexts.assign(s.devices.size(), CUctx_st{});
  for (std::size_t i = 0; i < s.contexts.size(); ++i) s.contexts[i].device = static_cast<int>(i);
  s.retained.assign(s.devices.size(), 0);
  s.initialised = true;
  return CUDA_SUCCESS;
}

/// Works before cuInit, like the real one. The scenario is read here if cuInit has not run.
PREFLIGHT_FAKE_EXPORT CUresult cuDriverGetVersion(int* driver_version) {
  if (driver_version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const fake::LoadedScenario loaded = s.initialised ? s.loaded : fake::load_scenario_from_env();
  if (!loaded.error.empty()) return CUDA_ERROR_UNKNOWN;
  *driver_version = loaded.scenario.cuda_driver_version;
  return CUDA_SUCCESS;
}

#define PREFLIGHT_FAKE_REQUIRE_INIT()               \
  State& s = state();                               \
  std::lock_guard lock(s.mutex);                    \
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED

#define PREFLIGHT_FAKE_REQUIRE_CONTEXT() \
  if (current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(s.devices.size());
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  copy_string(name, len, gpu_of(dev).name);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const fake::Gpu& gpu = gpu_of(dev);
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = static_cast<int>(gpu.pci_bus); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = static_cast<int>(gpu.pci_device); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = static_cast<int>(gpu.pci_domain); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = gpu.cc_major; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = gpu.cc_minor; return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = static_cast<std::size_t>(gpu_of(dev).memory_total_mib * fake::kMiB);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(uuid->bytes, gpu_of(dev).uuid_bytes.data(), sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

PREFLIGHT_FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (const CUresult r = apply(scenario().ctx); r != CUDA_SUCCESS) return r;
  ++s.retained[static_cast<std::size_t>(dev)];
  *pctx = &s.contexts[static_cast<std::size_t>(dev)];
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int& count = s.retained[static_cast<std::size_t>(dev)];
  if (count == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --count;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (ctx != nullptr) {
    bool ours = false;
    for (const CUctx_st& c : s.contexts) ours = ours || &c == ctx;
    if (!ours || s.retained[static_cast<std::size_t>(ctx->device)] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  }
  current_context = ctx;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuCtxSynchronize() {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytesize) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = apply(scenario().alloc); r != CUDA_SUCCESS) return r;
  const fake::Gpu& gpu = gpu_of(current_context->device);
  const std::uint64_t free_bytes = (gpu.memory_total_mib - gpu.memory_used_mib) * fake::kMiB;
  if (bytesize > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::malloc(bytesize);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  s.allocations.insert(*dptr);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dptr == 0) return CUDA_SUCCESS;
  if (s.allocations.erase(dptr) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr)));
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, std::size_t count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dst == 0 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = apply(scenario().memset); r != CUDA_SUCCESS) return r;
  auto* words = reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(dst));
  for (std::size_t i = 0; i < count; ++i) words[i] = value;
  return CUDA_SUCCESS;
}

/// A "corrupt" copy delivers everything but word 17 (or the last whole word of a shorter copy),
/// which arrives inverted.
PREFLIGHT_FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dst_host, CUdeviceptr src_device, std::size_t byte_count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dst_host == nullptr || src_device == 0) return CUDA_ERROR_INVALID_VALUE;
  const fake::Fault& fault = scenario().copy;
  if (const CUresult r = apply(fault); r != CUDA_SUCCESS) return r;
  std::memcpy(dst_host, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src_device)), byte_count);
  if (fault.kind == fake::Fault::Kind::Corrupt && byte_count > 0) {
    auto* bytes = static_cast<unsigned char*>(dst_host);
    const std::size_t words = byte_count / 4;
    if (words == 0) {
      bytes[0] = static_cast<unsigned char>(~bytes[0]);
    } else {
      const std::size_t word = std::min<std::size_t>(17, words - 1);
      for (std::size_t k = 0; k < 4; ++k) bytes[word * 4 + k] = static_cast<unsigned char>(~bytes[word * 4 + k]);
    }
  }
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorName& e : kErrorNames) {
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// The fake and the header can never drift: every export has exactly the header's type.
#define PREFLIGHT_FAKE_SAME_TYPE(fn) static_assert(std::is_same_v<decltype(&fn), PFN_##fn>, #fn)
PREFLIGHT_FAKE_SAME_TYPE(cuInit);
PREFLIGHT_FAKE_SAME_TYPE(cuDriverGetVersion);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetCount);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGet);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetName);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetAttribute);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceTotalMem_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetUuid_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetUuid);
PREFLIGHT_FAKE_SAME_TYPE(cuDevicePrimaryCtxRetain);
PREFLIGHT_FAKE_SAME_TYPE(cuDevicePrimaryCtxRelease_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxSetCurrent);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxSynchronize);
PREFLIGHT_FAKE_SAME_TYPE(cuMemAlloc_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemFree_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemsetD32_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemcpyDtoH_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuGetErrorName);
