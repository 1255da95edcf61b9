// SPDX-License-Identifier: MIT
// Pieces of the affinity probe exposed for tests.
#pragma once

#include <string>

namespace preflight {

/// get_mempolicy's mode with the MPOL_F_* flags stripped: 0 "default", 1 "preferred", 2 "bind",
/// 3 "interleave", 4 "local", 5 "preferred_many", 6 "weighted_interleave", else "unknown(N)".
std::string mempolicy_mode_name(int mode);

}  // namespace preflight
