// SPDX-License-Identifier: MIT
#include "core/meminfo.hpp"

#include <array>
#include <limits>
#include <utility>

#include "core/text.hpp"

namespace preflight {
namespace {

constexpr const char* kSource = "/proc/meminfo";

/// "   65843896 kB" -> bytes; nullopt unless it is a number with the kB unit that fits in 64 bits.
std::optional<std::uint64_t> parse_kb(std::string_view value) {
  const std::vector<std::string_view> f = split_ws(trim(value));
  if (f.size() != 2 || f[1] != "kB") return std::nullopt;
  const std::optional<std::uint64_t> kb = parse_uint(f[0]);
  if (!kb || *kb > std::numeric_limits<std::uint64_t>::max() / 1024) return std::nullopt;
  return *kb * 1024;
}

}  // namespace

Probed<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo info;
  const std::array<std::pair<std::string_view, std::uint64_t*>, 4> wanted{{
      {"MemTotal", &info.mem_total},
      {"MemAvailable", &info.mem_available},
      {"SwapTotal", &info.swap_total},
      {"SwapFree", &info.swap_free},
  }};
  std::array<bool, wanted.size()> seen{};
  for (std::string_view line : split(text, '\n')) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      if (key != wanted[i].first) continue;
      const std::optional<std::uint64_t> bytes = parse_kb(line.substr(colon + 1));
      if (!bytes) {
        return Probed<MemInfo>::error(ProbeErrc::ParseError, "not a size in kB: '" + printable(trim(line)) + "'",
                                      kSource);
      }
      *wanted[i].second = *bytes;
      seen[i] = true;
    }
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (!seen[i]) {
      std::string detail = "no " + std::string(wanted[i].first) + " line";
      if (wanted[i].first == "MemAvailable") detail += " (the kernel is older than Linux 3.14)";
      return Probed<MemInfo>::error(ProbeErrc::ParseError, detail, kSource);
    }
  }
  return Probed<MemInfo>::ok(info, kSource);
}

}  // namespace preflight
