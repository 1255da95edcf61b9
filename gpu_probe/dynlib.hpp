// SPDX-License-Identifier: MIT
// A dlopen()ed library for the contained GPU helper: opened by soname or path through the normal
// loader search, never closed (driver libraries are not meant to be unloaded; the helper exits
// soon), with the real path of the file the loader picked.
#pragma once

#include <cstring>
#include <string>

namespace preflight::helper {

class DynLib {
 public:
  /// dlopen(name, RTLD_NOW | RTLD_LOCAL). On failure handle() is null and error() holds dlerror().
  static DynLib open(const std::string& name);

  explicit operator bool() const { return m_handle != nullptr; }
  void* handle() const { return m_handle; }
  const std::string& error() const { return m_error; }
  /// The real path of the loaded file (dlinfo RTLD_DI_LINKMAP, then realpath); the requested name if
  /// that fails.
  const std::string& path() const { return m_path; }

  /// The function `symbol` as F, or null when the library does not export it.
  template <typename F>
  F get(const char* symbol) const {
    if (m_handle == nullptr) return nullptr;
    void* address = raw(symbol);
    F fn = nullptr;
    static_assert(sizeof fn == sizeof address);
    if (address != nullptr) std::memcpy(&fn, &address, sizeof fn);
    return fn;
  }

 private:
  void* raw(const char* symbol) const;
  void* m_handle = nullptr;
  std::string m_error;
  std::string m_path;
};

/// A function table of gpu_probe/nvidia (nvml::NvmlFunctions, cuda::CudaFunctions, nccl::NcclFunctions) resolved
/// from `lib` in one pass, right after it is opened: each member null when the library does not export it, all of
/// them null when `lib` did not open.
template <typename Table>
Table resolve_table(const DynLib& lib) {
  return Table::resolve(lib);
}

}  // namespace preflight::helper
