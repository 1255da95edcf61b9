// SPDX-License-Identifier: MIT
// Pure parsers behind probe_limits (probes/limits_probe.cpp), exposed for the unit tests.
#pragma once

#include <string>
#include <string_view>

#include "core/facts/limits.hpp"

namespace preflight {

/// One row of /proc/self/limits, e.g. name "Max locked memory", unit "bytes":
///   "Max locked memory         8388608              unlimited            bytes"
/// "unlimited" becomes nullopt. A missing row, a value that is not a number or another unit is a
/// ParseError.
Probed<Rlimit> parse_limit_row(std::string_view limits_text, std::string_view name, std::string_view unit,
                               const std::string& source);

/// CAP_IPC_LOCK (bit 14) of the "CapEff:" line of /proc/self/status.
Probed<bool> parse_cap_ipc_lock(std::string_view status_text, const std::string& source);

}  // namespace preflight
