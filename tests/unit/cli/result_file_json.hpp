// SPDX-License-Identifier: MIT
// Everything a ResultFile (cli/merge.hpp) holds, as one JSON value: two readings of a file agree
// when these are equal. Shared by the unit tests and the merge_json fuzz target.
#pragma once

#include <nlohmann/json.hpp>

#include "cli/merge.hpp"

namespace preflight::testing {

inline nlohmann::json result_file_json(const ResultFile& file) {
  nlohmann::json results = nlohmann::json::array();
  for (const CheckResult& r : file.results) {
    nlohmann::json one = r;  // id, statuses, texts, evidence, finding and findings with their params
    one["area"] = r.area;
    one["finding_status"] = to_string(r.verdict.finding.status);
    results.push_back(std::move(one));
  }
  return {{"path", file.path},
          {"profile", to_string(file.profile)},
          {"world_size", file.world_size},
          {"ranks", file.ranks},
          {"results", std::move(results)},
          {"incidents", file.incidents},
          {"deadline_expired", file.deadline_expired}};
}

}  // namespace preflight::testing
