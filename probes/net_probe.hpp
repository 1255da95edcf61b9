// SPDX-License-Identifier: MIT
// Parts of the net probe that tests reach directly: the /etc/hosts reader (the bounded name lookup is
// the Os seam's: sys/os.hpp).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"
#include "sys/os.hpp"

namespace preflight {

/// The addresses /etc/hosts text gives `name` (case-insensitive), in file order.
std::vector<std::string> hosts_file_lookup(std::string_view hosts_text, std::string_view name);

}  // namespace preflight
