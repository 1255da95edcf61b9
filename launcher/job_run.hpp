// SPDX-License-Identifier: MIT
// One run of `preflight run` across the job: start the transport (MPI under a launcher, else one
// process), then the phases probe → reach → gather → barrier → all_reduce → report, each with its
// own deadline inside --timeout. Rank 0 prints the report; at an expired deadline it names every
// rank that did not arrive (host, pid, last phase), prints what it has and ends the job with exit 4.
#pragma once

#include <chrono>
#include <functional>

#include "core/env.hpp"
#include "core/options.hpp"
#include "report/report.hpp"

namespace preflight {

class CompatMatrix;

/// Where each phase must end, as fractions of --timeout from the start of the run (the shares are
/// core/deadlines.hpp's PhaseShares). Non-root ranks
/// wait `grace` longer than rank 0 at every step, so rank 0 always reports before anyone gives up.
struct PhaseDeadlines {
  std::chrono::steady_clock::time_point init, probe, reach, gather, barrier, allreduce, end;
  std::chrono::steady_clock::duration grace;
  static PhaseDeadlines from(std::chrono::steady_clock::time_point start, double timeout_s);
};

/// What rank 0 does with the finished report and its exit code (prints it, writes the files):
/// returns the exit code the run ends with (5 when the report could not be written).
using EmitReport = std::function<int(const Report&, int code)>;

/// Runs the checks on this rank and, on rank 0, hands the finished report to `emit`. Returns the
/// exit code every rank ends with (SPEC §3), rank 0's after `emit`; after an expired deadline it
/// does not return (the job is aborted with exit code 4).
int run_job(const Options& options, std::chrono::steady_clock::time_point start, const EnvSnapshot& env,
            const CompatMatrix* matrix, const EmitReport& emit);

}  // namespace preflight
