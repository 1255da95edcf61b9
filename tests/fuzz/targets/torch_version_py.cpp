// SPDX-License-Identifier: MIT
// torch/version.py as PyTorch's wheels write it: parse_torch_version_py. A CUDA build's cuda value
// is a dotted version; __version__ is never empty.
#include "core/cuda_discovery.hpp"
#include "core/version.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Probed<TorchVersionPy> t = parse_torch_version_py(fuzz::text(data, size));
  if (const TorchVersionPy* v = t.value()) {
    FUZZ_CHECK(!v->version.empty());
    if (!v->cuda.empty()) FUZZ_CHECK(Version::parse(v->cuda).has_value());
  } else {
    FUZZ_CHECK(!t.why().empty());
  }
  return 0;
}
