// SPDX-License-Identifier: MIT
// The command line and the INI config file (Boost.Program_options lives only in cli.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"

namespace preflight {

enum class Command { Run, List, Explain, Merge, Capture, Version, Help };

struct Cli {
  Command command = Command::Run;
  Options options;
  std::vector<std::string> args;  // explain: the check id; merge: the result files; capture: DIR
  std::string tar_file;           // capture --tar FILE
};

/// Bad option, bad value, unreadable or malformed config file: exit 2, nothing checked.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The longest --timeout accepted (24 h): the budget's shares stay well inside what a deadline can hold.
inline constexpr double kMaxTimeoutSeconds = 86400;

Cli parse_cli(const std::vector<std::string>& argv);
std::string help_text();

/// "7B", "7e9", "1.5T", "70000000000": a parameter count (decimal suffixes K, M, B/G, T).
std::optional<std::uint64_t> parse_count(std::string_view text);

/// A --target-gpu entry as users write it, normalised to "M.m": "9.0", "9.0a", "sm_90", "sm_90a",
/// "compute_90", "90", "8.6+PTX", "10.0", "100", "sm_100f", "120" (any case). nullopt for anything
/// else ("none" is handled by the caller).
std::optional<std::string> parse_target_gpu(std::string_view text);

/// A --target-driver value: 1 to 3 dot-separated numbers with a non-zero major ("535", "535.104",
/// "535.104.05").
bool is_target_driver(std::string_view text);

}  // namespace preflight
