// SPDX-License-Identifier: MIT
// One run of `preflight run` across the job: start the transport (MPI under a launcher, else one
// process), then the phases probe → reach → gather → barrier → all_reduce → report, each with its
// own deadline inside --timeout. Rank 0 prints the report; at an expired deadline it names every
// rank that did not arrive (host, pid, last phase), prints what it has and ends the job with exit 4.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/env.hpp"
#include "core/options.hpp"
#include "job/phase_deadlines.hpp"
#include "report/report.hpp"

namespace preflight {

class CompatMatrix;

/// What rank 0 does with the finished report and its exit code (prints it, writes the files):
/// returns the exit code the run ends with (5 when the report could not be written).
using EmitReport = std::function<int(const Report&, int code)>;

/// Rank 0's progress display (the command line's progress line): told the phase and what runs in it,
/// stopped before the report or any message is printed.
class JobProgress {
 public:
  virtual ~JobProgress() = default;
  virtual void phase(const std::string& name) = 0;
  virtual void detail(const std::string& what) = 0;
  virtual void stop() = 0;
};

/// What the job run hands back to the command line; the job run itself prints and writes nothing.
struct JobHooks {
  EmitReport emit;  // rank 0: the finished report
  /// --json-per-rank: writes one rank's own report; returns "" or, when the path was refused (a
  /// link or file another user planted), why; throws std::runtime_error when the write failed.
  /// Empty: not wanted.
  std::function<std::string(const Report&)> write_rank_file;
  /// Rank 0: a progress display for `world` ranks, `arrived` telling how many reached the phase
  /// (called from another thread); empty or returning null: none.
  std::function<std::unique_ptr<JobProgress>(int world, std::function<int()> arrived)> progress;
};

/// Runs the checks on this rank and, on rank 0, hands the finished report to `hooks.emit`. Returns
/// the exit code every rank ends with (report/report.hpp's ExitCode), rank 0's after `emit`; after
/// an expired deadline it does not return (the job is aborted with exit code 4).
int run_job(const Options& options, std::chrono::steady_clock::time_point start, const EnvSnapshot& env,
            const CompatMatrix* matrix, const JobHooks& hooks);

}  // namespace preflight
