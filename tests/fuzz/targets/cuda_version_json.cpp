// SPDX-License-Identifier: MIT
// The CUDA toolkit's version files: parse_cuda_version_json (/usr/local/cuda/version.json) and
// parse_cuda_version_txt (version.txt). A version they return is a dotted version.
#include "core/cuda_discovery.hpp"
#include "core/version.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const Probed<std::string> json = parse_cuda_version_json(in);
  if (const std::string* v = json.value())
    FUZZ_CHECK(Version::parse(*v).has_value());
  else
    FUZZ_CHECK(!json.why().empty());
  const Probed<std::string> txt = parse_cuda_version_txt(in);
  if (const std::string* v = txt.value()) FUZZ_CHECK(Version::parse(*v).has_value());
  return 0;
}
