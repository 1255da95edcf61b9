// SPDX-License-Identifier: MIT
// Fault injection for preflight's own tests (a probe that hangs, a rank stopped or killed in a
// phase, a broken payload). The `preflight` binary never reads it: no reader is installed there,
// and the variables' names are not in it. Only the test binary `preflight-faults`
// (tests/faults/main.cpp) installs the reader that takes them from the environment, before it
// calls app_main; so a stray variable in a user's environment cannot change a verdict.
#pragma once

#include <string>

#include "core/env.hpp"
#include "core/job.hpp"

namespace preflight {

struct TestFaults {
  std::string hang_probe;  // this probe sleeps forever (the deadline tests)
  int stop_rank = -1;      // this rank stops itself (SIGSTOP) right after announcing stop_phase
  Phase stop_phase = Phase::Init;
  int kill_rank = -1;  // this rank kills itself (SIGKILL) right after announcing kill_phase
  Phase kill_phase = Phase::Init;
  // This rank (its PMIx rank) stops itself, or is killed, after the join and right before
  // MPI_Init: the other ranks wait in MPI_Init (PHASE "mpi_init" in the variables below).
  int stop_before_mpi_init = -1;
  int kill_before_mpi_init = -1;
  int bad_rank = -1;                 // this rank sends a broken payload of bad_kind
  std::string bad_kind;              // garbage, oversized, truncated, wrong-rank
  bool shared_memory_split = false;  // the node's ranks from MPI_COMM_TYPE_SHARED, not the launcher's peers
};

using TestFaultsReader = TestFaults (*)(const EnvSnapshot& env);

/// Installs the reader test_faults() uses; only the test binary calls it.
void install_test_faults(TestFaultsReader reader);

/// The faults asked for: none unless a reader was installed.
TestFaults test_faults(const EnvSnapshot& env);

}  // namespace preflight
