// SPDX-License-Identifier: MIT
#pragma once

namespace preflight {
/// The whole program behind main(): parse, dispatch, map every outcome to SPEC §3's exit codes.
int app_main(int argc, char** argv);
}  // namespace preflight
