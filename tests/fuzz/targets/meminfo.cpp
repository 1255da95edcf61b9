// SPDX-License-Identifier: MIT
// /proc/meminfo: parse_meminfo.
#include "core/meminfo.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Probed<MemInfo> m = parse_meminfo(fuzz::text(data, size));
  if (!m.ok()) FUZZ_CHECK(!m.why().empty());
  return 0;
}
