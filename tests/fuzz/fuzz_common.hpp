// SPDX-License-Identifier: MIT
// What the fuzz targets share: the input as text, a selector byte, and an invariant check that
// aborts (libFuzzer records the input as a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace preflight::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// The first line and the rest: "a\nb\nc" -> {"a", "b\nc"}; no newline -> {all, ""}.
inline std::pair<std::string_view, std::string_view> first_line(std::string_view s) {
  const std::size_t nl = s.find('\n');
  if (nl == std::string_view::npos) return {s, {}};
  return {s.substr(0, nl), s.substr(nl + 1)};
}

/// "NAME=value" lines as a variable map (the first '=' splits; a line without one is a name with an
/// empty value), as the environment of a process would hold them.
inline std::map<std::string, std::string> env_lines(std::string_view s) {
  std::map<std::string, std::string> vars;
  while (!s.empty()) {
    const std::size_t nl = s.find('\n');
    const std::string_view line = s.substr(0, nl);
    s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      vars[std::string(line)] = "";
    else
      vars[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return vars;
}

}  // namespace preflight::fuzz
