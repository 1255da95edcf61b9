// SPDX-License-Identifier: MIT
// The phases of a job run that wait on other ranks — the gather of every rank's facts, the
// barrier, the all_reduce's plan, its MPI round and its per-rank records — each over the Transport
// it is given, each returning what happened: done, or not done by its deadline with what rank 0
// saw. None of them gives up, reports or ends the job: that is the run's decision
// (job/job_run.cpp), so that a test can hand a phase a fake world (tests/unit/job/fake_world.hpp)
// with silent, slow, dead and lying ranks and read its outcome.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/facts.hpp"
#include "core/job.hpp"
#include "job/nccl_allreduce.hpp"
#include "report/report.hpp"
#include "transport/transport.hpp"

namespace preflight {

/// A rank waiting in a phase sends a heartbeat every half second: this long without one, it is stuck.
inline constexpr double kSilentSeconds = 1.5;

/// The ranks other than rank 0 that did not reach `phase`, went silent in it or were lost, in rank
/// order: whom to name when the phase's deadline passes.
std::vector<int> ranks_behind(const std::vector<RankStatus>& status, Phase phase);

/// The gather: every rank's facts, verdicts and incidents at rank 0.
struct GatherOutcome {
  bool sent = true;                    // other ranks: rank 0 took this rank's payload before the deadline
  std::vector<RankFacts> ranks;        // rank 0: the facts of every rank that delivered (its own too), in rank order
  std::vector<CheckResult> results;    // rank 0: their verdicts, its own first
  std::vector<std::string> incidents;  // rank 0: the incidents the other ranks' payloads carried
  bool remote_expired = false;         // rank 0: some rank's own probe deadline expired
  std::vector<int> lost;               // rank 0: ranks that delivered nothing and sent nothing malformed
};

/// Other ranks send `payload` (transport/payload.hpp) by `deadline`. Rank 0 collects until every rank
/// delivered or the deadline passes, marking each rank's `delivered` or `payload_error` in `status`
/// (index = rank; its own entry is marked delivered).
GatherOutcome gather_phase(Transport& transport, const std::string& payload, const RankFacts& own_facts,
                           const std::vector<CheckResult>& own_results, std::vector<RankStatus>& status,
                           TimePoint deadline);

/// The barrier across all ranks.
struct BarrierOutcome {
  bool completed = false;
  double seconds = 0;        // how long this rank waited
  std::string peer_error;    // the transport said why it failed (a peer hung up): not a deadline
  bool interrupted = false;  // the wait was cut short (the launcher ending the job, a rank lost)
};
BarrierOutcome barrier_phase(Transport& transport, TimePoint deadline);

/// Which all_reduce the job runs, decided by rank 0 (job/allreduce_plan.hpp) and sent to every rank.
struct AllreducePlan {
  enum class Mode { Skipped, Mpi, Nccl, None };
  Mode mode = Mode::None;
  std::uint64_t bytes = 0;
  std::string id;     // Nccl: ncclGetUniqueId's bytes in hex
  std::string root;   // Nccl: "ADDR:PORT" of NCCL's root
  std::string why;    // Mpi: why host memory ("no rank has a GPU: ...")
  std::string error;  // None: why no all_reduce can run
  bool undetermined = false;  // None: a fact it needs was not found out in time (a probe's deadline), no fault
};
/// The plan on the wire (JSON); a text that is not a plan decodes as Mode::None with the reason.
std::string encode_plan(const AllreducePlan& plan);
AllreducePlan decode_plan(const std::string& text);

/// The exact integers of the all_reduce self-check: element 0 counts the ranks, element 1 sums
/// their numbers (a duplicate or missing rank changes it), the rest a pattern with a known sum.
std::int64_t allreduce_pattern(std::size_t i, int rank);
std::int64_t allreduce_expected_sum(std::size_t i, int size);

/// One rank's part of an MPI all_reduce of `bytes` of int64 in host memory: a warm-up, then
/// `timed` iterations, every element checked against the exact sum.
NcclRankOutcome mpi_allreduce_round(Transport& transport, std::uint64_t bytes, TimePoint deadline, int timed = 3);

/// A rank's all_reduce outcome as the fixed-size record the gather to rank 0 takes (its JSON padded
/// with spaces; long messages are cut to fit), and back. A record that does not parse is an
/// outcome that failed at step "gather" saying so.
inline constexpr std::size_t kAllreduceRecordBytes = 4096;
std::string to_record(NcclRankOutcome outcome);
NcclRankOutcome from_record(const std::string& record, int rank);

}  // namespace preflight
