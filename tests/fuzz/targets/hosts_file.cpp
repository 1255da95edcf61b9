// SPDX-License-Identifier: MIT
// /etc/hosts: hosts_file_lookup for the names the net probe looks up. Input: the first line is the
// name, the rest the file; the whole input is also looked up for fixed names.
#include "fuzz_common.hpp"
#include "probes/net_probe.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);
  for (const std::string& a : hosts_file_lookup(rest, first)) FUZZ_CHECK(!a.empty());
  (void)hosts_file_lookup(in, "localhost");
  (void)hosts_file_lookup(in, "gpu-a");
  return 0;
}
