// SPDX-License-Identifier: MIT
// How a job's ranks connect, decided before anything else runs: MPI when a launcher started them
// (or --mpi on), after the PMIx join under a PMIx launcher; this rank alone otherwise, or when MPI
// could not start (with the incident saying why). The calls it makes are passed in, so the decision
// is tested without MPI or a launcher (tests/unit/job/transport_start_test.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/env.hpp"
#include "job/phase_deadlines.hpp"
#include "transport/pmix_join.hpp"
#include "transport/transport.hpp"

namespace preflight {

struct TransportStart {
  /// MPI's, or the one-process stand-in's; null only when the join was Incomplete (some rank never
  /// started: the run reports that itself, or waits for the rank that does).
  std::unique_ptr<Transport> transport;
  bool mpi = false;      // the ranks are connected by MPI
  JoinOutcome join;      // the PMIx join's outcome (NotUsed when none was made)
  std::string incident;  // MPI was wanted and did not start: "MPI could not start (why): this rank ran alone"
  /// This rank runs alone while the launcher that started it, and the job's other ranks, may be
  /// running (MPI_Init failed after the PMIx join, or this process could not even reach the PMIx
  /// server): it must not end before the run's deadline, or the launcher ends the job before the
  /// rank that reports does. False for a launcher that is gone (stale PMIX_* variables).
  bool alone_in_a_live_job = false;
};

/// The calls the start makes; real() gives preflight's own (transport/transport.hpp, pmix_join.hpp,
/// liveness.hpp).
struct TransportCalls {
  std::function<bool(const EnvSnapshot&, std::string& why)> launch_detected;
  /// The PMIx join with its fence deadline, query deadline and patience.
  std::function<JoinOutcome(const EnvSnapshot&, TimePoint, TimePoint, TimePoint)> join;
  std::function<void()> release_join;
  /// Called before MPI opens its sockets (the liveness watch's descriptor).
  std::function<void()> before_mpi;
  /// init_mpi_transport: `local_peers` is the join's (JoinOutcome::local_peers; empty without one).
  std::function<std::unique_ptr<Transport>(TimePoint deadline, bool singleton, const std::string& local_peers,
                                           std::string& error)>
      init_mpi;
  std::function<std::unique_ptr<Transport>()> local;
  /// What MPI_Init's watchdog does at its deadline (set_init_expired_handler), with the join that
  /// came before it; it must end the process. Empty: the watchdog's own line and exit 4.
  std::function<void(const JoinOutcome&)> init_expired;
  /// Called on rank 0 of an MPI job (the termination handler: the launcher's SIGCONT/SIGTERM).
  std::function<void()> on_mpi_root;
  static TransportCalls real();
};

/// `mpi_option`: --mpi ("auto", "on" or "off"); `timeout_s`: --timeout (the join's window is 5% of
/// it, 0.3 to 2 s, before the init deadline). After a join that completed, MPI_Init gets at least
/// `grace` more: every rank is there.
TransportStart start_transport(const std::string& mpi_option, double timeout_s, const EnvSnapshot& env,
                               const PhaseDeadlines& deadlines, const TransportCalls& calls);

}  // namespace preflight
