// SPDX-License-Identifier: MIT
// The deadlines of a job run's phases, as points in time, and how a message names one. Below the
// phases (job/phases.hpp) and the run (job/job_run.cpp), which both read them; the shares of
// --timeout they come from are core/deadlines.hpp's PhaseShares.
#pragma once

#include <chrono>
#include <string>

namespace preflight {

/// `s` seconds as the steady clock's duration (shares of --timeout are fractions of seconds).
inline std::chrono::steady_clock::duration seconds_of(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

/// Where each phase must end, as fractions of --timeout from the start of the run. Non-root ranks
/// wait `grace` longer than rank 0 at every step, so rank 0 always reports before anyone gives up.
struct PhaseDeadlines {
  std::chrono::steady_clock::time_point start, init, probe, reach, gather, barrier, allreduce, end;
  std::chrono::steady_clock::duration grace;
  static PhaseDeadlines from(std::chrono::steady_clock::time_point start, double timeout_s);

  /// What a rank waits beyond rank 0's deadline: nothing on rank 0, `grace` on the others.
  std::chrono::steady_clock::duration grace_for(bool root) const {
    return root ? std::chrono::steady_clock::duration::zero() : grace;
  }
  /// "7.5 s of the start"; when the launcher ended the job (SIGCONT/SIGTERM) before the deadline,
  /// that too, with when.
  std::string describe(std::chrono::steady_clock::time_point deadline) const;
};

}  // namespace preflight
