// SPDX-License-Identifier: MIT
// /proc/self/limits and /proc/self/status: parse_limit_row (every row the limits probe reads) and
// parse_cap_ipc_lock (CapEff).
#include "fuzz_common.hpp"
#include "probes/limits_probe.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);
  (void)parse_limit_row(in, "Max locked memory", "bytes", "/proc/self/limits");
  (void)parse_limit_row(in, "Max open files", "files", "/proc/self/limits");
  (void)parse_limit_row(in, "Max processes", "processes", "/proc/self/limits");
  (void)parse_limit_row(in, "Max stack size", "bytes", "/proc/self/limits");
  (void)parse_limit_row(rest, first, "bytes", "/proc/self/limits");
  (void)parse_cap_ipc_lock(in, "/proc/self/status");
  return 0;
}
