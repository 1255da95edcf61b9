// SPDX-License-Identifier: MIT
// /proc/meminfo (proc(5)): one "Key:   value kB" line per counter.
#pragma once

#include <string_view>

#include "core/facts/memory.hpp"

namespace preflight {

/// MemTotal, MemAvailable, SwapTotal and SwapFree in bytes. Each must be present with a "kB" value:
/// a missing one (MemAvailable needs Linux >= 3.14) or a malformed one is a ParseError naming the
/// line. Other lines are not looked at.
Probed<MemInfo> parse_meminfo(std::string_view text);

}  // namespace preflight
