// SPDX-License-Identifier: MIT
// Driver and library text: parse_kernel_module_version (/proc/driver/nvidia/version,
// /sys/module/nvidia/version), is_driver_version, find_nccl_cuda_build (the bytes of libnccl.so),
// decode_nccl_version and format_cuda_version on the input's integers.
#include <cstring>

#include "core/gpu_text.hpp"
#include "core/version.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);
  if (const auto v = gpu_text::parse_kernel_module_version(in)) {
    FUZZ_CHECK(gpu_text::is_driver_version(*v));  // "2 or 3 dot-separated numbers"
  }
  (void)gpu_text::find_nccl_cuda_build(in);
  (void)gpu_text::find_nccl_cuda_build(rest, first);
  int code = 0;
  std::memcpy(&code, data, std::min(size, sizeof code));
  (void)gpu_text::decode_nccl_version(code);
  (void)gpu_text::format_cuda_version(code);
  return 0;
}
