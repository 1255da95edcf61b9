// SPDX-License-Identifier: MIT
// Every deadline of a run as a share of its budget, --timeout: every phase has its own deadline
// inside it (ARCHITECTURE.md, "Deadlines"). The shares live here and nowhere else; nothing has a
// fixed cap, so a longer --timeout gives every phase and every helper proportionally longer.
//
// Phases (where each ends, measured from the start of the run):
//   init 30%, probe 50%, reach 55%, gather 65%, barrier 75%, all_reduce 90%, end 100%;
//   non-root ranks wait a grace of 10% (at least 2 s) longer at every step.
// Contained helpers inside the probe phase (each its share of --timeout, run one after another):
//   GPU driver helper (NVML, cuInit, device query) 40% (a healthy first cuInit of 20 s fits the
//   default --timeout 60), smoke test 15%, NCCL library probe 5%,
//   peer copies 15% (each copy at most half of it), name lookups (MASTER_ADDR, hostname) 10%,
//   the job's interpreter asked for its sys.path (--python EXE) 10%.
//   A helper that hangs uses its share; the others normally take a fraction of theirs.
//   The smoke test and the peer copies start a new process that initialises CUDA again, so they
//   also get the cuInit time the driver helper measured (with persistence mode off only the hold
//   helper, the driver's client from beside the driver helper through the all_reduce, keeps that
//   from being paid again; should it fail, the allowance covers it). A helper never runs past the probe
//   phase: its deadline is cut to what is left of the phase less 5% of --timeout (at least 0.1 s),
//   so the probes after it still report; and it is never below 0.2 s.
// The node all_reduce helpers get what is left of the all_reduce phase; inside it, each helper
// aborts its communicator itself at 80% of its deadline (the rest is for the abort and report).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/probed.hpp"

namespace preflight {

struct PhaseShares {
  static constexpr double init = 0.30;
  static constexpr double probe = 0.50;
  static constexpr double reach = 0.55;
  static constexpr double gather = 0.65;
  static constexpr double barrier = 0.75;
  static constexpr double allreduce = 0.90;
  static constexpr double grace = 0.10;  // at least min_grace_seconds
  static constexpr double min_grace_seconds = 2.0;
};

enum class Helper { GpuDriver, GpuSmoke, Nccl, GpuP2p, GpuHealth, NameLookup, Python };

/// The share of --timeout a helper gets (0.40 for the GPU driver helper).
double helper_share(Helper helper);
/// "the GPU driver helper (NVML, cuInit, device query)".
std::string_view helper_name(Helper helper);

/// Share of the probe phase's remainder kept for the probes after a helper, and the floors.
inline constexpr double kHelperReserveShare = 0.05;
inline constexpr std::chrono::milliseconds kHelperReserveMin{100};
inline constexpr std::chrono::milliseconds kHelperMin{200};
/// A node all_reduce helper aborts its communicator itself at this share of its deadline.
inline constexpr double kNcclHelperOwnShare = 0.80;

/// One helper's deadline and how it was derived, for the messages when it expires.
struct HelperDeadline {
  Helper helper = Helper::GpuDriver;
  std::chrono::milliseconds limit{0};
  double timeout_s = 0;    // --timeout
  double share = 0;        // helper_share(helper)
  double allowance_s = 0;  // added for a measured cuInit
  bool cut = false;        // cut to what was left of the probe phase
  double own_s = 0;        // its own deadline: share of --timeout plus the allowance
  double used_s = 0;       // the probe phase's seconds gone when it started (from the start of the run)

  double seconds() const { return std::chrono::duration<double>(limit).count(); }
  /// "its deadline of 24.0 s (40% of --timeout 60 s)", with "plus the 3.1 s cuInit took in the
  /// driver helper" or "what was left of the probe phase" where that applies.
  std::string describe() const;
  /// The message for an expired deadline: which deadline, after how long, and the option that
  /// raises it: "the GPU driver helper (NVML, cuInit, device query) did not finish within its
  /// deadline of 4.0 s (40% of --timeout 10 s) and was killed after 4.0 s: raise --timeout to
  /// give it longer (--timeout 40 gives it 10.0 s)".
  std::string expired(double after_s) const;
  /// How an expiry is recorded: OutOfBudget when the helper got less than its own share (cut to
  /// what was left of the probe phase: preflight's budget, never a verdict on the GPU), Timeout
  /// when it had its whole own deadline and still did not finish.
  ProbeErrc expiry_code() const { return cut ? ProbeErrc::OutOfBudget : ProbeErrc::Timeout; }
  /// The smallest --timeout (whole seconds) at which this helper gets its whole own deadline (its
  /// share plus the allowance) before the probe phase ends, when what ran before it takes as long.
  double timeout_that_fits() const;
};

/// The deadline of `helper` at `timeout_s`, with `left` of the probe phase remaining (nullopt-like
/// max() when the phase has no end) and `allowance_s` of measured initialisation added.
HelperDeadline helper_deadline(Helper helper, double timeout_s, std::chrono::milliseconds left, double allowance_s = 0);

/// The deadline a node all_reduce helper applies to itself inside the deadline it runs under.
std::chrono::milliseconds nccl_own_deadline(std::chrono::milliseconds deadline);

}  // namespace preflight
