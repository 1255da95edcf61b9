// SPDX-License-Identifier: MIT
// A tiny stand-in for the GPU helper, for the tests of the fake NVIDIA libraries: it dlopens the
// library by its soname (so LD_LIBRARY_PATH selects the fake, as for the real helper) and makes one
// call sequence, so a scripted crash or hang happens in this process and not in the test's.
//   cuInit      cuInit(0)                            prints "cuInit=<code> lib=<real path>"
//   nvmlInit    nvmlInit_v2()                        prints "nvmlInit=<code> lib=<real path>"
//   smoke       cuInit, primary context of device 0, alloc 1 MiB, memset, copy back, verify
//                                                    prints "smoke=ok" or "smoke=<step> <code|detail>"
// Exits 0 when the sequence ran to its end (whatever the codes), 2 on bad usage, 3 when the library
// or a symbol cannot be loaded.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"

namespace {

void* open_library(const char* soname) {
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", soname, ::dlerror());
    std::exit(3);
  }
  return handle;
}

std::string real_path(void* handle) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return "?";
  return map->l_name;
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  void* p = ::dlsym(handle, name);
  if (p == nullptr) {
    std::fprintf(stderr, "dlsym %s: %s\n", name, ::dlerror());
    std::exit(3);
  }
  return reinterpret_cast<Fn>(p);
}

int smoke(void* lib) {
  using namespace preflight::cuda;
  auto report = [](const char* step, int code) {
    std::printf("smoke=%s %d\n", step, code);
    return 0;
  };
  if (const int r = symbol<PFN_cuInit>(lib, name_cuInit)(0)) return report("cuInit", r);
  CUdevice dev = 0;
  if (const int r = symbol<PFN_cuDeviceGet>(lib, name_cuDeviceGet)(&dev, 0)) return report("cuDeviceGet", r);
  CUcontext ctx = nullptr;
  if (const int r = symbol<PFN_cuDevicePrimaryCtxRetain>(lib, name_cuDevicePrimaryCtxRetain)(&ctx, dev))
    return report("cuDevicePrimaryCtxRetain", r);
  if (const int r = symbol<PFN_cuCtxSetCurrent>(lib, name_cuCtxSetCurrent)(ctx)) return report("cuCtxSetCurrent", r);
  constexpr std::size_t kWords = 256 * 1024;
  constexpr unsigned int kPattern = 0x5AA5F00Du;
  CUdeviceptr mem = 0;
  if (const int r = symbol<PFN_cuMemAlloc_v2>(lib, name_cuMemAlloc_v2)(&mem, kWords * 4))
    return report("cuMemAlloc", r);
  if (const int r = symbol<PFN_cuMemsetD32_v2>(lib, name_cuMemsetD32_v2)(mem, kPattern, kWords))
    return report("cuMemsetD32", r);
  std::vector<unsigned int> host(kWords, 0);
  if (const int r = symbol<PFN_cuMemcpyDtoH_v2>(lib, name_cuMemcpyDtoH_v2)(host.data(), mem, kWords * 4))
    return report("cuMemcpyDtoH", r);
  symbol<PFN_cuMemFree_v2>(lib, name_cuMemFree_v2)(mem);
  symbol<PFN_cuDevicePrimaryCtxRelease_v2>(lib, name_cuDevicePrimaryCtxRelease_v2)(dev);
  for (std::size_t i = 0; i < kWords; ++i) {
    if (host[i] != kPattern) {
      std::printf("smoke=verify word %zu is 0x%08X, wrote 0x%08X\n", i, host[i], kPattern);
      return 0;
    }
  }
  std::printf("smoke=ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s cuInit|nvmlInit|smoke\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "cuInit") {
    void* lib = open_library(preflight::cuda::soname);
    const int r = symbol<preflight::cuda::PFN_cuInit>(lib, preflight::cuda::name_cuInit)(0);
    std::printf("cuInit=%d lib=%s\n", r, real_path(lib).c_str());
    return 0;
  }
  if (mode == "nvmlInit") {
    void* lib = open_library(preflight::nvml::soname);
    const int r = symbol<preflight::nvml::PFN_nvmlInit_v2>(lib, preflight::nvml::name_nvmlInit_v2)();
    std::printf("nvmlInit=%d lib=%s\n", r, real_path(lib).c_str());
    return 0;
  }
  if (mode == "smoke") return smoke(open_library(preflight::cuda::soname));
  std::fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
