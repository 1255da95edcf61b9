// SPDX-License-Identifier: MIT
// NVIDIA_REQUIRE_CUDA (and the other NVIDIA_REQUIRE_* variables) evaluated as the NVIDIA Container
// Toolkit does (its "Specialized configurations" page): white space separates groups that are ORed,
// a comma joins the constraints of one group, which are ANDed. Constraints: cuda (the host driver's CUDA version),
// driver (the host driver version), arch (the GPU's compute capability), brand (tesla, geforce, ...);
// operators >=, <=, >, <, = (also ==, !=). Pure: the caller supplies what it knows of the host.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/version.hpp"

namespace preflight {

enum class RequireStatus {
  Satisfied,     // some group holds (or the text is empty: nothing is required)
  NotSatisfied,  // every group has a constraint that does not hold
  Unknown,       // no group holds for sure, and some group needs a host property not supplied
  Malformed,     // a token is not a constraint; `token` names it
};
const char* to_string(RequireStatus s);

struct RequireResult {
  RequireStatus status = RequireStatus::Malformed;
  std::string token;   // Malformed: the offending token
  std::string group;   // Satisfied: the first group that holds
  std::string detail;  // one line for a verdict message
};

/// driver_version: "535.104.05"; cuda_version_of_driver: "12.2" (cuDriverGetVersion); brand:
/// NVML's brand in lower case ("tesla", "nvidia", "geforce"), empty if unknown; arch: the compute
/// capability of the GPU ("9.0"). A property that is not supplied makes its constraints unknown
/// (three-valued logic: a group with a false constraint is false whatever else it needs).
RequireResult evaluate_nvidia_require(std::string_view text, const std::optional<Version>& driver_version,
                                      const std::optional<Version>& cuda_version_of_driver, std::string_view brand,
                                      const std::optional<Version>& arch = std::nullopt);

}  // namespace preflight
