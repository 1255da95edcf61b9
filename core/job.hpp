// SPDX-License-Identifier: MIT
// The job as rank 0 sees it after the gather (or as `preflight merge` rebuilds it from files): every
// rank's facts, what each rank last said it reached, and how the collective phases went. The
// job-scope checks (launch.ranks, launch.gpu_binding, cluster.*, net.reachability, comm.*) are pure
// functions over it.
#pragma once

#include <map>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/facts.hpp"
#include "core/json_util.hpp"

namespace preflight {

/// The phases of a run, in order. Every rank tells rank 0 when it reaches one, before the risky
/// work of that phase starts, so a rank that never arrives is named with the last phase it reached.
enum class Phase { Init, Probe, Reach, Gather, Barrier, Allreduce, Report };
inline constexpr int kPhaseCount = 7;
const char* to_string(Phase p);  // "init", "probe", "reach", "gather", "barrier", "allreduce", "report"
std::optional<Phase> phase_from_string(std::string_view text);

/// What rank 0 knows about one rank of the world.
struct RankStatus {
  int rank = 0;
  std::string host;  // "" until the rank was heard from; for a rank never heard from, the host
                     // the launcher placed it on, when the launcher said (the PMIx join)
  int pid = 0;
  Phase last_phase = Phase::Init;
  bool heard = false;         // at least one phase notice arrived
  double silent_s = 0;        // seconds since its last notice when the report was made (ranks waiting
                              // in a phase send a heartbeat notice every half second: a silent rank is stuck)
  bool delivered = false;     // its payload arrived and decoded
  std::string payload_error;  // malformed, oversized or mismatched payload: what was wrong
  // Seen by rank 0's liveness watch (transport/liveness.hpp): "ended" (the rank's process is gone: its
  // connection closed), "unreachable" (its host stopped acknowledging), or "" (alive or not watched).
  std::string lost;
  double lost_at_s = 0;  // when rank 0 saw it, in seconds from the start of the run
  std::string parting;   // what the rank said before it ended, if it said anything
};

/// The XIDs NVML reported on one rank's GPU while that rank's part of a collective ran.
struct RankXidWatch {
  int rank = 0;  // the job's rank whose helper watched (in the node profile, the process's own rank)
  NvmlXidWatch watch;
};
PREFLIGHT_JSON_DECLARE(RankXidWatch)

/// One collective phase (barrier or all_reduce) as rank 0 saw it.
struct CommResult {
  bool attempted = false;           // false: not run; `note` says why (a rank missing before it, no MPI, ...)
  bool completed = false;           // every rank finished it before the deadline
  bool expired = false;             // the deadline passed first
  bool interrupted = false;         // with expired: the launcher ended the job (SIGTERM) before the deadline
  std::string transport;            // "mpi", "nccl"
  std::string note;                 // why not attempted, or what went wrong ("ncclCommInitRank: ...")
  bool blocked = false;             // the test the job needs could not run (GPUs exist, NCCL cannot): `note` says why
  bool undetermined = false;        // with blocked: what it needs was not found out in time (no fault)
  double seconds = 0;               // wall time of the phase on rank 0
  double deadline_s = 0;            // the phase's own budget
  std::vector<int> missing;         // ranks that did not arrive before the deadline
  std::vector<int> wrong;           // all_reduce: ranks whose result differed from the exact expectation
  std::vector<std::string> errors;  // per-rank errors, "rank 3 (gpu-b): ncclSystemError ..."
  // all_reduce only
  std::uint64_t bytes = 0;                // message size per rank
  int ranks = 0;                          // participants
  int repeats = 0;                        // timed iterations (best kept)
  double algbw_gbps = 0;                  // bytes / time, GB/s (1e9)
  double busbw_gbps = 0;                  // algbw * 2(n-1)/n
  std::vector<RankXidWatch> xid_watches;  // NCCL all_reduce: each helper's XID window on its GPU (gpu.xid)
};
PREFLIGHT_JSON_DECLARE(CommResult)

/// Rank 0's NCCL bootstrap address, as NCCL would pick it, with a port rank 0 listened on for the
/// reachability test.
struct ReachTarget {
  std::string interface;  // "eth0"
  std::string address;    // "192.0.2.2" (IPv6 without brackets)
  int port = 0;
};
PREFLIGHT_JSON_DECLARE(ReachTarget)

struct JobFacts {
  std::string source = "none";              // "mpi" (gathered live), "merge" (files), "none" (one process, no gather)
  int world_size = 1;                       // the transport's size (MPI_COMM_WORLD), or the ranks merged
  std::vector<RankFacts> ranks;             // the facts of every rank that delivered, ordered by rank
  std::vector<RankStatus> status;           // one per rank 0..world_size-1
  std::optional<ReachTarget> reach_target;  // nullopt: rank 0 had no address to offer (reason in reach_note)
  std::string reach_note;
  CommResult barrier;
  CommResult allreduce;
  std::vector<std::string> files;               // merge: the files read, in rank order
  std::map<std::string, double> phase_seconds;  // rank 0's time in each phase ("reach", "gather", ...)
  /// Rank 0 was told to end (the launcher's SIGTERM, or Open MPI's SIGCONT before it) this many
  /// seconds after the start, before its report: the launcher ended the job. nullopt: it was not.
  std::optional<double> launcher_ended_s;

  /// The facts of `rank`, or nullptr when it did not deliver.
  const RankFacts* facts_of(int rank) const;
  /// Ranks that did not deliver their facts.
  std::vector<int> undelivered() const;
  /// "rank 3 (gpu-b, pid 4242, last phase probe, silent 6.2 s)" for messages, from the status table.
  std::string describe_rank(int rank) const;
  /// Gives each rank never heard from, and of no known host, the host the launcher placed it on
  /// (`placement`, by rank, from the PMIx join): "rank 5 (never heard from; placed on node3)".
  void place_unheard(const std::vector<std::string>& placement);
  /// The ranks rank 0's liveness watch lost, told per host: a host all of whose ranks went is named
  /// as a host ("every process of node2 ended (ranks 2, 3) at 3.1 s, in phase barrier"), other
  /// ranks one by one. Empty when none was lost.
  std::string describe_lost() const;
  /// The ranks that were lost (status `lost` set), in rank order.
  std::vector<int> lost() const;
};

/// A one-process job (no launcher, no MPI, or a run that could not gather): `facts` alone, with
/// the world size the launcher claims.
JobFacts single_rank_job(const RankFacts& facts);

}  // namespace preflight
