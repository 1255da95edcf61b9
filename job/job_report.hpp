// SPDX-License-Identifier: MIT
// From facts to a report, split the way a job runs: every rank judges its own facts with the rank-
// and node-scope checks (node-scope only on one rank per host), rank 0 (or `preflight merge`)
// groups what the ranks judged and runs the job-scope checks over the gathered job.
#pragma once

#include <string>
#include <vector>

#include "core/job.hpp"
#include "core/options.hpp"
#include "report/report.hpp"

namespace preflight {

class CompatMatrix;

/// The rank- and node-scope checks selected by --only/--skip, judged over one rank's facts. Node-
/// scope checks only when `node_leader` (the first rank of its host): the others would repeat them.
std::vector<CheckResult> judge_rank(const Options& options, Profile profile, const RankFacts& facts, bool node_leader,
                                    const CompatMatrix* matrix);

/// Rank 0's report: the per-rank results (node-scope ones widened to every rank of their host, then
/// grouped) and the job-scope checks judged over `job`. `deadline_expired` and `incidents` as in
/// Report. The first delivered rank's facts stand for `CheckContext::facts` of the job checks.
Report assemble_report(const Options& options, Profile profile, JobFacts job, std::vector<CheckResult> per_rank,
                       const CompatMatrix* matrix);

}  // namespace preflight
