// SPDX-License-Identifier: MIT
// How the ranks of a job talk to each other during a run. MPI is the one real implementation
// (transport/mpi_transport.cpp, the only file that includes <mpi.h>); a one-process stand-in serves runs
// without a launcher. Every call that waits for other ranks takes a deadline and returns when it
// passes: nothing here blocks forever.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/exit_code.hpp"
#include "core/facts.hpp"
#include "core/job.hpp"

namespace preflight {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// MPI's view of this process (local rank and size from the shared-memory split, nodes, library).
  virtual MpiView view() const = 0;

  /// Tells rank 0 that this rank reached `phase`, before the phase's risky work starts. Never
  /// blocks; on rank 0 it records its own status.
  virtual void announce(Phase phase) = 0;
  /// Rank 0: what every rank last said (index = rank), after taking in the notices that arrived.
  /// Other ranks: empty.
  virtual std::vector<RankStatus> statuses() = 0;
  /// Rank 0: the ranks (rank 0 included) that reached its current phase — in the gather, that
  /// delivered their facts — as of the notices taken in so far. Safe to call from any thread (the
  /// progress line reads it). Other ranks: 0.
  virtual int ranks_arrived() const = 0;

  /// Rank 0's `data` to every rank. Returns what arrived (rank 0: its own data), nullopt at the deadline.
  virtual std::optional<std::string> broadcast(const std::string& data, TimePoint deadline) = 0;

  /// The `data` of this host's local rank 0 (the node's leader) to the other ranks of the host
  /// (view().local_rank/local_size). Returns what arrived (the leader: its own data), nullopt at
  /// the deadline.
  virtual std::optional<std::string> node_broadcast(const std::string& data, TimePoint deadline) = 0;

  /// Non-root ranks: send `bytes` to rank 0; false when it was not taken before the deadline.
  virtual bool send_payload(const std::string& bytes, TimePoint deadline) = 0;
  /// Rank 0: receives every other rank's payload until all arrived or the deadline passes;
  /// `arrived(rank, bytes, announced_size)` for each (a payload over `max_bytes` arrives empty with
  /// its announced size).
  virtual void collect_payloads(
      TimePoint deadline, std::size_t max_bytes,
      const std::function<void(int rank, std::string bytes, std::size_t announced)>& arrived) = 0;

  /// A barrier across all ranks; false at the deadline.
  virtual bool barrier(TimePoint deadline) = 0;
  /// Why the last collective or send failed before its deadline, when the transport said so (a
  /// peer that hung up): empty when it simply did not complete in time.
  virtual std::string last_error() const { return {}; }
  /// Element-wise sum across all ranks, in place; false at the deadline.
  virtual bool allreduce_sum(std::vector<std::int64_t>& values, TimePoint deadline) = 0;
  /// Every rank's `record` (all the same size) at rank 0, in rank order; other ranks get an empty
  /// vector. nullopt at the deadline.
  virtual std::optional<std::vector<std::string>> gather(const std::string& record, TimePoint deadline) = 0;

  /// Ends every rank of the job with `code` (after a deadline expired). Does not return.
  [[noreturn]] virtual void abort(ExitCode code) = 0;
  /// Orderly end after a complete run. Never called after a deadline expired.
  virtual void finalize() = 0;
};

/// Rank 0 of a job: SIGCONT, SIGTERM or SIGINT (the launcher ending the job because one of its
/// processes died, or Ctrl-C) makes every wait return at once, so the report naming the missing ranks still
/// prints before the launcher's SIGKILL.
void install_termination_handler();
/// Any other rank: SIGTERM ends the process as before, unless `survive()` (called in the signal
/// handler: async-signal-safe only) says otherwise; then it is noted as for rank 0 and the rank
/// goes on (rank 0's process is gone and this rank reports in its place).
void install_rank_termination_handler(bool (*survive)());
bool termination_requested();
/// Rank 0: another rank's process ended, or its host stopped acknowledging (transport/liveness.hpp).
/// Set from the watching thread.
void note_rank_lost();
/// The liveness watch's quiet() (empty: none), asked by rank_lost() on the thread that calls MPI.
void set_liveness_check(std::function<bool()> quiet);
bool rank_lost();
/// Either: a wait on other ranks returns at once, for the report to say what happened.
bool wait_interrupted();

/// The stand-in for a single process: rank 0 of 1; every collective completes at once.
std::unique_ptr<Transport> make_local_transport();

/// Whether the environment says an MPI launcher (mpirun/mpiexec, or srun with a PMI/PMIx plugin)
/// started this process, so that MPI_Init will find its peers: PMIX_RANK, or OMPI_COMM_WORLD_SIZE
/// with the PMIx variables mpirun gives every process it starts (without them the OMPI_* variables
/// were left in the environment). `why` names the variables seen.
bool mpi_launch_detected(const EnvSnapshot& env, std::string& why);

/// MPI_Init_thread with a deadline: when MPI_Init does not return in time, a watchdog prints what
/// happened to stderr and ends the process with exit code 4. `singleton`: initialise without a
/// launcher. `local_peers`: the launcher's PMIx local peers (JoinOutcome::local_peers), which give
/// the node's ranks without a communicator to create (MPI_Comm_split_type agrees on a context id
/// with every rank in several rounds: 0.4-0.5 s of 16 ranks on 4 emulated hosts); when empty or not
/// of this world, MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds them. On failure returns nullptr
/// with the reason in `error`.
std::unique_ptr<Transport> init_mpi_transport(TimePoint deadline, bool singleton, const std::string& local_peers,
                                              std::string& error);

/// What init_mpi_transport's watchdog does at its deadline instead of its line and exit 4: the
/// handler runs in the watchdog's own thread while MPI_Init still waits in the main thread, and
/// must end the process (it writes the report of a job whose MPI initialisation never finished).
/// Empty: the line and exit 4.
void set_init_expired_handler(std::function<void()> handler);

}  // namespace preflight
