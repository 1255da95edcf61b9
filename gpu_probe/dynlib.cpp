// SPDX-License-Identifier: MIT
#include "gpu_probe/dynlib.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>

namespace preflight::helper {

DynLib DynLib::open(const std::string& name) {
  DynLib lib;
  ::dlerror();
  lib.m_handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.m_handle == nullptr) {
    const char* why = ::dlerror();
    lib.m_error = why != nullptr ? why : name + ": dlopen failed";
    return lib;
  }
  lib.m_path = name;
  struct link_map* map = nullptr;
  if (::dlinfo(lib.m_handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    lib.m_path = map->l_name;
  }
  char resolved[PATH_MAX];
  if (::realpath(lib.m_path.c_str(), resolved) != nullptr) lib.m_path = resolved;
  return lib;
}

void* DynLib::raw(const char* symbol) const { return ::dlsym(m_handle, symbol); }

}  // namespace preflight::helper
