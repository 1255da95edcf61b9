// SPDX-License-Identifier: MIT
#include "core/probed.hpp"

#include <array>
#include <utility>

namespace preflight {
namespace {
constexpr std::array<std::pair<ProbeErrc, const char*>, 11> kNames{{
    {ProbeErrc::NotProbed, "not_probed"},
    {ProbeErrc::NotFound, "not_found"},
    {ProbeErrc::PermissionDenied, "permission_denied"},
    {ProbeErrc::Unreadable, "unreadable"},
    {ProbeErrc::ParseError, "parse_error"},
    {ProbeErrc::Unsupported, "unsupported"},
    {ProbeErrc::Timeout, "timeout"},
    {ProbeErrc::OutOfBudget, "out_of_budget"},
    {ProbeErrc::Crashed, "crashed"},
    {ProbeErrc::LibraryMissing, "library_missing"},
    {ProbeErrc::ApiError, "api_error"},
}};
}  // namespace

const char* to_string(ProbeErrc code) {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "not_probed";
}

ProbeErrc probe_errc_from_string(std::string_view text) {
  for (const auto& [c, name] : kNames) {
    if (text == name) return c;
  }
  return ProbeErrc::NotProbed;
}

}  // namespace preflight
