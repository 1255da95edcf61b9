// SPDX-License-Identifier: MIT
// preflight-gpu-probe `nccl`: which libnccl the loader gives us, its version, and the CUDA it was
// built for. Only ncclGetVersion is called (it does not touch CUDA); no communicator is created.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_text.hpp"
#include "gpu_probe/dynlib.hpp"
#include "gpu_probe/gpu_probe.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"

namespace preflight::helper {
namespace {

/// Scans the library file for "NCCL version <version>+cudaA.B" in 4 MiB chunks (the file is
/// hundreds of MiB), preferring the string with the version ncclGetVersion reported.
std::string cuda_build_of(const std::string& path, const std::string& version) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return {};
  const std::string exact = "NCCL version " + version + "+cuda";
  constexpr std::size_t kChunk = std::size_t{4} << 20;
  constexpr std::size_t kOverlap = 256;
  std::string window;
  std::vector<char> chunk(kChunk);
  std::string fallback;
  while (true) {
    const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), f);
    if (n == 0) break;
    window.append(chunk.data(), n);
    if (!version.empty()) {
      if (const std::size_t pos = window.find(exact); pos != std::string::npos) {
        std::string found = gpu_text::find_nccl_cuda_build(std::string_view(window).substr(pos), version);
        if (!found.empty()) {
          std::fclose(f);
          return found;
        }
      }
    }
    if (fallback.empty()) fallback = gpu_text::find_nccl_cuda_build(window);
    if (window.size() > kOverlap) window.erase(0, window.size() - kOverlap);
  }
  std::fclose(f);
  return fallback;
}

}  // namespace

Probed<NcclLibrary> run_nccl(const std::string& lib_path) {
  const std::string requested = lib_path.empty() ? std::string(nccl::soname) : lib_path;
  const DynLib lib = DynLib::open(requested);
  const nccl::NcclFunctions fn = resolve_table<nccl::NcclFunctions>(lib);
  if (!lib) return Probed<NcclLibrary>::error(ProbeErrc::LibraryMissing, lib.error(), requested);
  const auto get_version = fn.ncclGetVersion;
  if (get_version == nullptr) {
    return Probed<NcclLibrary>::error(ProbeErrc::ApiError, "ncclGetVersion not exported by " + lib.path(), lib.path());
  }
  int code = 0;
  if (const nccl::ncclResult_t rc = get_version(&code); rc != nccl::ncclSuccess) {
    std::string why = "ncclGetVersion: ncclResult_t " + std::to_string(static_cast<int>(rc));
    if (const auto error_string = fn.ncclGetErrorString) {
      if (const char* text = error_string(rc); text != nullptr) why += std::string(" (") + text + ")";
    }
    return Probed<NcclLibrary>::error(ProbeErrc::ApiError, why, lib.path());
  }
  NcclLibrary out;
  out.path = lib.path();
  out.source = lib_path.empty() ? "loader" : "";
  out.version_code = code;
  out.version = gpu_text::decode_nccl_version(code);
  out.cuda_build = cuda_build_of(lib.path(), out.version);
  return Probed<NcclLibrary>::ok(std::move(out), "ncclGetVersion in " + lib.path());
}

}  // namespace preflight::helper
