// SPDX-License-Identifier: MIT
// Running every check over fuzzed facts, for the targets that fuzz what the checks read (the
// environment, the matrix files). A check is called directly, not through run_check(), so an
// exception escaping a check is a crash here instead of an UNKNOWN verdict.
#pragma once

#include "checks/check.hpp"
#include "job_fixture.hpp"

namespace preflight::fuzz {

/// Every check in one profile (`which` picks node, job or image, so a fuzz input's size spreads the
/// runs over all three): rank- and node-scope ones over the job's first rank, job-scope ones over
/// the job.
inline void run_all_checks(const JobFacts& job, const Options& options, const CompatMatrix* matrix = nullptr,
                           std::size_t which = 0) {
  static const RankFacts kNone;
  static constexpr Profile kProfiles[] = {Profile::Node, Profile::Job, Profile::Image};
  const Profile p = kProfiles[which % 3];
  const RankFacts& first = job.ranks.empty() ? kNone : job.ranks.front();
  for (const CheckSpec* spec : all_checks()) {
    const CheckContext ctx{first, options, p, matrix, spec->scope == Scope::Job ? &job : nullptr};
    (void)spec->run(ctx);
  }
}

}  // namespace preflight::fuzz
