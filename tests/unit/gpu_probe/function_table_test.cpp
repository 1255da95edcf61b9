// SPDX-License-Identifier: MIT
// The function tables of gpu_probe/nvidia/*_api.hpp (nvml::NvmlFunctions, cuda::CudaFunctions,
// nccl::NcclFunctions), which the contained GPU helper resolves once per opened library
// (resolve_table in gpu_probe/dynlib.hpp, which forwards to Table::resolve): a member is null exactly
// when the library does not export its symbol, and each header's list macro names every function the
// header declares.
#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "test_paths.hpp"

#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"

namespace {

namespace nvml = preflight::nvml;
namespace cuda = preflight::cuda;
namespace nccl = preflight::nccl;

// Every entry of a list macro has its PFN_ type and its name_ constant, spelled as the entry.
#define PREFLIGHT_NVML_NAME_MATCHES(name) static_assert(std::string_view(nvml::name_##name) == #name);
#define PREFLIGHT_CUDA_NAME_MATCHES(name) static_assert(std::string_view(cuda::name_##name) == #name);
#define PREFLIGHT_NCCL_NAME_MATCHES(name) static_assert(std::string_view(nccl::name_##name) == #name);
PREFLIGHT_NVML_FUNCTIONS(PREFLIGHT_NVML_NAME_MATCHES)
PREFLIGHT_CUDA_FUNCTIONS(PREFLIGHT_CUDA_NAME_MATCHES)
PREFLIGHT_NCCL_FUNCTIONS(PREFLIGHT_NCCL_NAME_MATCHES)
#undef PREFLIGHT_NVML_NAME_MATCHES
#undef PREFLIGHT_CUDA_NAME_MATCHES
#undef PREFLIGHT_NCCL_NAME_MATCHES

#define PREFLIGHT_NAME_TEXT(name) #name,
const std::vector<std::string> kNvmlList = {PREFLIGHT_NVML_FUNCTIONS(PREFLIGHT_NAME_TEXT)};
const std::vector<std::string> kCudaList = {PREFLIGHT_CUDA_FUNCTIONS(PREFLIGHT_NAME_TEXT)};
const std::vector<std::string> kNcclList = {PREFLIGHT_NCCL_FUNCTIONS(PREFLIGHT_NAME_TEXT)};
#undef PREFLIGHT_NAME_TEXT

/// The table's members by name: whether each is set.
#define PREFLIGHT_MEMBER_SET(name) {#name, table.name != nullptr},
std::vector<std::pair<std::string, bool>> members(const nvml::NvmlFunctions& table) {
  return {PREFLIGHT_NVML_FUNCTIONS(PREFLIGHT_MEMBER_SET)};
}
std::vector<std::pair<std::string, bool>> members(const cuda::CudaFunctions& table) {
  return {PREFLIGHT_CUDA_FUNCTIONS(PREFLIGHT_MEMBER_SET)};
}
std::vector<std::pair<std::string, bool>> members(const nccl::NcclFunctions& table) {
  return {PREFLIGHT_NCCL_FUNCTIONS(PREFLIGHT_MEMBER_SET)};
}
#undef PREFLIGHT_MEMBER_SET

/// A dlopen()ed library with DynLib's get<F> (the helper's DynLib is not part of the test binary).
class DlLibrary {
 public:
  explicit DlLibrary(const char* name) : m_handle(::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
  ~DlLibrary() {
    if (m_handle != nullptr) ::dlclose(m_handle);
  }
  DlLibrary(const DlLibrary&) = delete;
  DlLibrary& operator=(const DlLibrary&) = delete;

  explicit operator bool() const { return m_handle != nullptr; }

  template <typename F>
  F get(const char* symbol) const {
    if (m_handle == nullptr) return nullptr;
    void* address = ::dlsym(m_handle, symbol);
    F fn = nullptr;
    if (address != nullptr) std::memcpy(&fn, &address, sizeof fn);
    return fn;
  }

 private:
  void* m_handle;
};

/// A library that exports exactly `exported` (at a dummy address, never called) and records what
/// was looked up.
class FakeLibrary {
 public:
  explicit FakeLibrary(std::set<std::string> exported) : m_exported(std::move(exported)) {}

  template <typename F>
  F get(const char* symbol) const {
    m_asked.emplace_back(symbol);
    if (m_exported.count(symbol) == 0) return nullptr;
    void* address = const_cast<int*>(&m_dummy);
    F fn = nullptr;
    std::memcpy(&fn, &address, sizeof fn);
    return fn;
  }
  const std::vector<std::string>& asked() const { return m_asked; }

 private:
  std::set<std::string> m_exported;
  mutable std::vector<std::string> m_asked;
  int m_dummy = 0;
};

/// Each member set exactly when its name is in `exported`.
template <typename Table>
void expect_set_exactly(const Table& table, const std::set<std::string>& exported) {
  for (const auto& [name, set] : members(table)) EXPECT_EQ(set, exported.count(name) == 1) << name;
}

/// The names of the name_ constants (or the PFN_ types) the header declares, read from the
/// repository's gpu_probe/nvidia/; empty when the file is not there.
std::set<std::string> declared(const char* header, const std::string& pattern) {
  const std::filesystem::path path =
      std::filesystem::path(preflight::test_paths::source_dir()) / "gpu_probe/nvidia" / header;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string> names;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  return names;
}

void expect_list_covers_header(const std::vector<std::string>& list, const char* header) {
  const std::set<std::string> listed(list.begin(), list.end());
  EXPECT_EQ(listed.size(), list.size()) << header << ": a function is listed twice";
  const std::set<std::string> names = declared(header, R"(inline constexpr char name_(\w+)\[\])");
  const std::set<std::string> types = declared(header, R"(using PFN_(\w+) =)");
  ASSERT_FALSE(names.empty()) << header << " declares no name_ constant, or is not in "
                              << preflight::test_paths::source_dir() << "/gpu_probe/nvidia";
  EXPECT_EQ(listed, names) << header << ": the list macro and the name_ constants differ";
  EXPECT_EQ(listed, types) << header << ": the list macro and the PFN_ types differ";
}

TEST(FunctionTable, DefaultIsAllNull) {
  expect_set_exactly(nvml::NvmlFunctions{}, {});
  expect_set_exactly(cuda::CudaFunctions{}, {});
  expect_set_exactly(nccl::NcclFunctions{}, {});
}

TEST(FunctionTable, LibcExportsNoneOfThem) {
  const DlLibrary libc("libc.so.6");
  ASSERT_TRUE(libc) << ::dlerror();
  expect_set_exactly(nvml::NvmlFunctions::resolve(libc), {});
  expect_set_exactly(cuda::CudaFunctions::resolve(libc), {});
  expect_set_exactly(nccl::NcclFunctions::resolve(libc), {});
}

TEST(FunctionTable, UnopenedLibraryGivesAllNull) {
  const DlLibrary missing("libpreflight-no-such-library.so.0");
  ASSERT_FALSE(missing);
  expect_set_exactly(nvml::NvmlFunctions::resolve(missing), {});
  expect_set_exactly(cuda::CudaFunctions::resolve(missing), {});
  expect_set_exactly(nccl::NcclFunctions::resolve(missing), {});
}

TEST(FunctionTable, OldLibraryLeavesItsMissingFunctionsNull) {
  // An NVML of before nvmlEventSetWait_v2 and the fabric calls; a libcuda without the _v2 fallbacks' new names.
  const std::set<std::string> nvml_exported = {"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2",
                                               "nvmlEventSetWait", "nvmlDeviceGetGpuFabricInfo"};
  const FakeLibrary nvml_lib(nvml_exported);
  const nvml::NvmlFunctions n = nvml::NvmlFunctions::resolve(nvml_lib);
  expect_set_exactly(n, nvml_exported);
  EXPECT_EQ(nvml_lib.asked(), kNvmlList) << "each function looked up once, by its exported name";
  EXPECT_NE(n.nvmlEventSetWait, nullptr);
  EXPECT_EQ(n.nvmlEventSetWait_v2, nullptr);

  const std::set<std::string> cuda_exported = {"cuInit", "cuDeviceGetUuid", "cuEventElapsedTime"};
  const FakeLibrary cuda_lib(cuda_exported);
  const cuda::CudaFunctions c = cuda::CudaFunctions::resolve(cuda_lib);
  expect_set_exactly(c, cuda_exported);
  EXPECT_EQ(cuda_lib.asked(), kCudaList);
  EXPECT_EQ(c.cuDeviceGetUuid_v2, nullptr);
  EXPECT_EQ(c.cuEventElapsedTime_v2, nullptr);

  const std::set<std::string> nccl_exported = {"ncclGetVersion", "ncclGetErrorString"};
  const FakeLibrary nccl_lib(nccl_exported);
  expect_set_exactly(nccl::NcclFunctions::resolve(nccl_lib), nccl_exported);
  EXPECT_EQ(nccl_lib.asked(), kNcclList);
}

TEST(FunctionTable, NvmlListCoversTheHeader) { expect_list_covers_header(kNvmlList, "nvml_api.hpp"); }
TEST(FunctionTable, CudaListCoversTheHeader) { expect_list_covers_header(kCudaList, "cuda_api.hpp"); }
TEST(FunctionTable, NcclListCoversTheHeader) { expect_list_covers_header(kNcclList, "nccl_api.hpp"); }

}  // namespace
