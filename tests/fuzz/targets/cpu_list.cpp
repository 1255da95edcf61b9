// SPDX-License-Identifier: MIT
// The kernel's CPU and node list and mask formats (/sys/devices/system/node/node*/cpulist,
// cpumap, Cpus_allowed_list, local_cpulist): parse_cpu_list and parse_cpu_mask. A parsed set is
// sorted and unique, and cpu_list() prints it in a form parse_cpu_list reads back to the same set.
#include <algorithm>

#include "core/text.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

namespace {

void check_set(const std::vector<int>& v) {
  if (!v.empty()) FUZZ_CHECK(v.front() >= 0 && v.back() <= (1 << 20) - 1);
  // The kernel's lists go up to 2^20 CPUs; checking a million-entry set under the sanitizers
  // takes seconds, so the whole-set properties are checked on the sets of real machines' sizes.
  if (v.size() > 8192) return;
  FUZZ_CHECK(std::is_sorted(v.begin(), v.end()));
  FUZZ_CHECK(std::adjacent_find(v.begin(), v.end()) == v.end());
  const std::optional<std::vector<int>> again = parse_cpu_list(cpu_list(v));
  FUZZ_CHECK(again && *again == v);
  (void)range_list(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  if (const auto list = parse_cpu_list(in)) check_set(*list);
  if (const auto mask = parse_cpu_mask(in)) check_set(*mask);
  return 0;
}
