// SPDX-License-Identifier: MIT
#pragma once

namespace preflight {
/// The whole program behind main(): parse, dispatch, map every outcome to an exit code (core/exit_code.hpp).
int app_main(int argc, char** argv);
}  // namespace preflight
