// SPDX-License-Identifier: MIT
// preflight-faults: the preflight binary with the test faults read from the environment, for the
// deadline, fault-matrix and MPI tests. Never installed.
//   PREFLIGHT_TEST_HANG_PROBE=NAME     that probe hangs
//   PREFLIGHT_TEST_STOP=RANK:PHASE     that rank stops (SIGSTOP) right after it announced PHASE
//   PREFLIGHT_TEST_KILL=RANK:PHASE     that rank is killed (SIGKILL) right after it announced PHASE
//                                      (PHASE mpi_init, for either: after the join, before MPI_Init)
//   PREFLIGHT_TEST_BAD_PAYLOAD=RANK:KIND  that rank sends a broken payload (garbage, oversized,
//                                      truncated, wrong-rank)
//   PREFLIGHT_TEST_SHARED_MEMORY_SPLIT=1  the node's ranks come from MPI_COMM_TYPE_SHARED, as under
//                                      a launcher without PMIx, instead of the launcher's local peers
#include <string>

#include "cli/app.hpp"
#include "core/text.hpp"
#include "job/test_faults.hpp"

namespace preflight {
namespace {

/// "RANK:WHAT" into rank and what; false when the variable is unset or malformed.
bool rank_and(const EnvSnapshot& env, const char* name, int& rank, std::string& what) {
  const std::string v = env.get(name).value_or("");
  const auto colon = v.find(':');
  if (colon == std::string::npos) return false;
  const auto r = parse_int(std::string_view(v).substr(0, colon));
  if (!r) return false;
  rank = static_cast<int>(*r);
  what = v.substr(colon + 1);
  return true;
}

TestFaults faults_from_environment(const EnvSnapshot& env) {
  TestFaults f;
  f.hang_probe = env.get("PREFLIGHT_TEST_HANG_PROBE").value_or("");
  std::string phase;
  int rank = -1;
  if (rank_and(env, "PREFLIGHT_TEST_STOP", rank, phase)) {
    if (phase == "mpi_init") f.stop_before_mpi_init = rank;
    if (const auto p = phase_from_string(phase)) {
      f.stop_rank = rank;
      f.stop_phase = *p;
    }
  }
  if (rank_and(env, "PREFLIGHT_TEST_KILL", rank, phase)) {
    if (phase == "mpi_init") f.kill_before_mpi_init = rank;
    if (const auto p = phase_from_string(phase)) {
      f.kill_rank = rank;
      f.kill_phase = *p;
    }
  }
  rank_and(env, "PREFLIGHT_TEST_BAD_PAYLOAD", f.bad_rank, f.bad_kind);
  f.shared_memory_split = env.get("PREFLIGHT_TEST_SHARED_MEMORY_SPLIT").value_or("") == "1";
  return f;
}

}  // namespace
}  // namespace preflight

int main(int argc, char** argv) {
  preflight::install_test_faults(&preflight::faults_from_environment);
  return preflight::app_main(argc, argv);
}
