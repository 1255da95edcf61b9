// SPDX-License-Identifier: MIT
// The command line and the INI config file (Boost.Program_options lives only in cli.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/options.hpp"

namespace preflight {

enum class Command { Run, List, Explain, Merge, Version, Help };

struct Cli {
  Command command = Command::Run;
  Options options;
  std::vector<std::string> args;  // explain: the check id; merge: the result files
};

/// Bad option, bad value, unreadable or malformed config file: exit 2, nothing checked.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Cli parse_cli(const std::vector<std::string>& argv);
std::string help_text();

/// "7B", "7e9", "1.5T", "70000000000": a parameter count (decimal suffixes K, M, B/G, T).
std::optional<std::uint64_t> parse_count(std::string_view text);

}  // namespace preflight
