// SPDX-License-Identifier: MIT
// NCCL's interface and HCA list grammar (NCCL_SOCKET_IFNAME, NCCL_IB_HCA): parse_nccl_names,
// nccl_selects, nccl_prefix_traps. Input: the first line is the list, the other lines are names.
#include "core/nccl_names.hpp"
#include "core/text.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [value, rest] = fuzz::first_line(in);
  const NcclNameList list = parse_nccl_names(value);
  std::vector<std::string> names;
  for (const NcclNameEntry& e : list.entries) {
    FUZZ_CHECK(!e.name.empty());  // entries with no name are dropped
    FUZZ_CHECK(e.name.find(',') == std::string::npos && e.name.find(':') == std::string::npos);
    // Every entry matches itself: an include list selects it, an exclude list does not.
    FUZZ_CHECK(nccl_selects(list, e.name, e.port) == !list.exclude);
    names.push_back(e.name);
  }
  if (list.entries.empty()) FUZZ_CHECK(nccl_selects(list, "eth0") == !list.exclude);
  for (std::string_view n : split(rest, '\n')) {
    if (names.size() >= 64) break;  // a node has a few dozen interfaces and HCAs, not thousands
    names.emplace_back(n);
    (void)nccl_selects(list, n);
    (void)nccl_selects(list, n, 1);
  }
  const auto traps = nccl_prefix_traps(list, names);
  if (list.exact) FUZZ_CHECK(traps.empty());
  (void)parse_nccl_names(in);
  return 0;
}
