// SPDX-License-Identifier: MIT
// The optional parts of a finding's message. A finding's parameters are data (a rank, a path, a
// value as the user wrote it); a part of a sentence that is there only sometimes (" (NVML sees 8)",
// "; the job needs a GPU") is a template parameter: Verdict::of splices it into the message, where
// its own {name}s take the finding's data parameters, and takes it out of the parameters.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/verdict.hpp"

namespace preflight {

/// `part` (a template over the finding's parameters, e.g. " (NVML sees {nvml_gpus})") where
/// `present`, else nothing. Words of the check only: a user's value goes in a data parameter.
inline nlohmann::json part_if(bool present, std::string part) {
  return template_param(present ? std::move(part) : std::string());
}

}  // namespace preflight
