// SPDX-License-Identifier: MIT
// An NCCL all_reduce in contained helpers (preflight-gpu-probe nccl-id / nccl-allreduce), one
// helper per rank, for comm.allreduce. Pure of MPI: in a job the caller makes the id on one rank
// (nccl_unique_id), broadcasts it and the bootstrap root, and runs run_nccl_allreduce on every
// rank; in the node profile nccl_allreduce_local_gpus does all of it across the local GPUs.
//
// The bootstrap root: NCCL's unique id carries the address of a root that every rank's init
// connects to. Without NCCL_COMM_ID that root is a thread of the process that called
// ncclGetUniqueId — here a helper that exits at once — so the caller names the root instead
// (`root`, "ADDR:PORT", exported to every helper as NCCL_COMM_ID): rank 0's init starts it there.
// In a job that is rank 0's NCCL bootstrap address with a free port; on one node 127.0.0.1.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_util.hpp"

#include "core/job.hpp"
#include "core/probed.hpp"
#include "sys/contained.hpp"

namespace preflight {

/// Where the helper is and what its environment adds (tests: the fake libraries' directory).
struct NcclHelperSetup {
  std::string helper;                  ///< empty: helper_path("preflight-gpu-probe")
  std::vector<std::string> extra_env;  ///< "NAME=value" added to the helper's environment
};

struct NcclAllreduceRequest {
  std::string id_hex;    ///< from nccl_unique_id, the same on every rank
  std::string root;      ///< "ADDR:PORT" (NCCL_COMM_ID), the same on every rank; empty: inherited
  std::string nccl_lib;  ///< the libnccl the job loads (--nccl-lib); empty: the soname
  int rank = 0;
  int nranks = 1;
  int device = 0;  ///< CUDA ordinal in this process's view
  std::uint64_t bytes = std::uint64_t{64} << 20;
  int repeats = 5;  ///< timed iterations after one warm-up; the best is kept
  std::chrono::milliseconds deadline{std::chrono::seconds(30)};  ///< the whole helper, abort included
  NcclHelperSetup setup;
  /// Readable: stop the helper now (ContainedRequest::cancel_fd); -1: none. The node's helpers
  /// share one, so that one that cannot join makes the others stop waiting for it.
  int cancel_fd = -1;
};

/// What one rank's helper reported, whatever became of it.
struct NcclRankOutcome {
  int rank = 0;
  int device = 0;
  bool ok = false;         ///< the all_reduce completed and this rank's result was exact
  bool expired = false;    ///< a step did not finish before the helper's deadline (or the helper was killed at ours)
  bool crashed = false;    ///< the helper died of a signal
  bool wrong = false;      ///< the all_reduce completed with a wrong result on this rank
  bool aborted = false;    ///< the helper called ncclCommAbort (and it returned)
  bool cancelled = false;  ///< preflight stopped the helper early: a peer never joined, so it could not complete
  std::string step;        ///< where it failed: "init", "allreduce", "async", "verify", "dlopen", "cuda", ...
  std::string error;       ///< the helper's message, with NCCL's error string
  std::string nccl_error;  ///< "ncclRemoteError" when NCCL returned a code
  // verify
  std::int64_t wrong_index = -1;
  std::int64_t wrong_value = 0;
  std::int64_t expected_value = 0;
  std::uint64_t wrong_elements = 0;
  // timing (ok or wrong)
  std::uint64_t bytes = 0;
  int repeats = 0;
  double seconds = 0;     ///< the best all_reduce time
  double algbw_gbps = 0;  ///< bytes / seconds / 1e9
  double busbw_gbps = 0;  ///< algbw * 2(n-1)/n
  // the helper
  std::string lib;  ///< the libnccl file it loaded
  int nccl_version = 0;
  std::string last_step;   ///< the last progress step it reached
  double elapsed_s = 0;    ///< wall time of the helper
  std::string helper;      ///< run_contained's describe()
  NvmlXidWatch xid_watch;  ///< the XIDs NVML reported on its GPU meanwhile (work empty: the helper never said)
};
PREFLIGHT_JSON_DECLARE(NcclRankOutcome)

/// The helper's own deadline inside `deadline`: it aborts the communicator itself and reports,
/// with the rest (20% of it, at least 0.2 s; core/deadlines.hpp) left for ncclCommAbort and the exit.
std::chrono::milliseconds nccl_helper_deadline(std::chrono::milliseconds deadline);

/// A root for one node: "127.0.0.1:<a port free now>" (bound, read, closed).
Probed<std::string> nccl_local_root();

/// `preflight-gpu-probe nccl-id`: a unique id (256 hex digits) made with `nccl_lib` (empty: the
/// soname) for the bootstrap root `root` (empty: NCCL_COMM_ID from the environment; without
/// either it is an error, see above).
Probed<std::string> nccl_unique_id(const std::string& nccl_lib, std::chrono::milliseconds deadline,
                                   const std::string& root = {}, const NcclHelperSetup& setup = {});

/// Reads a nccl-allreduce helper's JSON Lines, whatever became of it (for tests and the caller).
NcclRankOutcome parse_nccl_rank_outcome(const ContainedResult& result, int rank, int device);

/// One rank's helper, under `request.deadline` (the helper's own deadline is inside it).
NcclRankOutcome run_nccl_allreduce(const NcclAllreduceRequest& request);

/// Did this rank's helper fail (or hang) before its NCCL init began (it could not start, crashed,
/// could not load NCCL or set up its GPU)? The other ranks then wait in init for a peer that never
/// comes: that rank is the cause, they are not.
bool never_joined(const NcclRankOutcome& outcome);

/// The ranks' outcomes as comm.allreduce's CommResult: completed when every rank is ok; expired
/// and `missing` for ranks that did not finish; `wrong` for ranks with a wrong result; one error
/// line per failed rank; algbw/busbw of the slowest rank (the collective is as fast as it). Where
/// some rank never joined, the ranks that waited for it (expired or cancelled after their init
/// began) are neither expired nor missing: their error line says whom they waited for.
CommResult combine_nccl_outcomes(const std::vector<NcclRankOutcome>& outcomes, int nranks, std::uint64_t bytes,
                                 int repeats, double seconds, double deadline_s);

/// The node profile: one helper per local GPU (devices 0..gpus-1), all in one communicator,
/// run concurrently, rooted on 127.0.0.1. `deadline` covers the id and the all_reduce.
CommResult nccl_allreduce_local_gpus(int gpus, std::uint64_t bytes, int repeats, const std::string& nccl_lib,
                                     std::chrono::milliseconds deadline, const NcclHelperSetup& setup = {});

}  // namespace preflight
