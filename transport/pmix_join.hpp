// SPDX-License-Identifier: MIT
// The join before MPI_Init, under a PMIx launcher (Open MPI's mpirun, `srun --mpi=pmix`).
//
// MPI_Init waits inside the launcher's fence for every rank of the job, with no deadline a rank can
// see: one rank that never starts (a node stuck in start-up, a slow NFS mount under the binary)
// holds every other rank there, and the run ends with the init watchdog, naming no one. So, before
// MPI_Init, every rank puts a PMIx key saying it started (its host and pid) and waits at a PMIx
// fence of its own, with a deadline. When the fence completes, every rank is there and MPI_Init
// will not wait for a missing one. When it does not, the lowest rank that started (rank 0 unless it
// is the one missing) asks PMIx for every rank's key — a rank that never started has none — and
// for the host the launcher placed each rank on, and writes the report; the others wait for the
// launcher to end the job.
//
// transport/pmix_join.cpp is the only file that includes <pmix.h>. It links the libpmix that the build
// found (pkg-config pmix); the MPI library must use that same libpmix (Debian's and most
// distributions' Open MPI do, through its pmix ext component). Without PMIx at build time, or
// without a PMIx server in the environment, the join is not used and MPI_Init runs under its
// watchdog alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.hpp"
#include "core/exit_code.hpp"
#include "core/job.hpp"
#include "transport/transport.hpp"

namespace preflight {

struct JoinOutcome {
  enum class State {
    NotUsed,     // no PMIx (at build time or in this environment): `why` says which
    NoServer,    // a launcher's PMIx server is named but does not answer (stale PMIX_* variables, a
                 // launcher that is gone): MPI_Init would abort the process, so it is not called
    Complete,    // every rank joined: MPI_Init follows
    Incomplete,  // the fence's deadline passed: some rank never started
  };
  State state = State::NotUsed;
  /// NoServer because this process could not open a socket (its own descriptor limit): the
  /// launcher and the other ranks may well be running.
  bool own_limits = false;
  std::string why;
  int rank = 0;
  int size = 1;
  std::string nspace;
  double waited_s = 0;  // time in the fence
  /// Incomplete: this rank writes the report (the lowest rank that joined).
  bool reporter = false;
  /// Incomplete, reporter only; Complete, rank 0 only (up to 4096 ranks): one per rank. A rank that joined is `heard`
  /// with its own host and pid; one that did not is not heard, with the host the launcher placed it on (empty when the
  /// launcher did not say).
  std::vector<RankStatus> ranks;
  /// PMIX_LOCAL_PEERS as the launcher gave it ("0,1,2,3": the ranks of the job on this node, what
  /// the MPI library's own locality is made of); empty when it did not.
  std::string local_peers;
  /// Complete, rank 0: the host the launcher placed each rank on, by rank ("" where it did not
  /// say): job data every client holds, read before MPI_Init, for naming a rank never heard from
  /// after it (core/job.hpp, place_unheard). Rank 1: rank 0's only (it reports should rank 0 die).
  std::vector<std::string> placement;
};

/// The ranks `text` (PMIX_LOCAL_PEERS: decimal ranks separated by commas) names, sorted, when it
/// names `rank` among ranks of a world of `size` (each 0..size-1, none twice); empty otherwise, and
/// the node's ranks are then found by MPI itself (pure; tested).
std::vector<int> parse_local_peers(std::string_view text, int rank, int size);

/// Empty when the environment is that of a PMIx client a launcher started: PMIX_NAMESPACE (1-255
/// printable characters), a decimal PMIX_RANK and a PMIX_SERVER_URI* to connect to; otherwise why
/// not. Nothing else reaches PMIx_Init: libpmix does not survive every value (stale or garbage
/// PMIX_* variables crash its progress thread), and without a server there is no one to join.
std::string pmix_client_environment(const EnvSnapshot& env);

/// The TCP address in a PMIX_SERVER_URI* value ("<nspace>.<rank>;tcp4://127.0.0.1:46591", or
/// tcp6://[::1]:PORT): host and port; nullopt for anything else (pure; tested).
struct PmixServerAddress {
  std::string uri;   // "tcp4://127.0.0.1:46591"
  std::string host;  // "127.0.0.1", "::1"
  int port = 0;
};
std::optional<PmixServerAddress> parse_pmix_server_uri(std::string_view value);

/// Why this process cannot reach the PMIx server its environment names, when PMIx_Init failed and
/// says only that: "this process cannot open a socket: Too many open files (EMFILE)", or "a
/// connection to tcp4://…: Connection refused (ECONNREFUSED)" (1 s at most); "" when a plain
/// connection succeeds or there is no TCP address to try.
std::string pmix_server_connect_failure(const EnvSnapshot& env);

/// Puts this rank's key and waits at the fence until `fence_deadline`; when it did not complete,
/// asks PMIx which ranks joined until `query_deadline`. The reporter returns then; another rank
/// goes on waiting at the fence until `patience` (a late rank may still complete it: Complete).
JoinOutcome pmix_join(const EnvSnapshot& env, TimePoint fence_deadline, TimePoint query_deadline, TimePoint patience);

/// After MPI_Init: this process's own PMIx reference is dropped (the MPI library holds its own).
void pmix_join_release();

/// Asks the launcher to end the whole job with `code` (PMIx_Abort: srun does not end a step on a
/// non-zero exit by itself), then exits with `code`, within a few seconds either way.
[[noreturn]] void pmix_join_abort(ExitCode code, const std::string& message);

/// The incident naming the ranks that never joined, with their hosts, for the report (pure; tested).
std::string describe_unjoined(const JoinOutcome& outcome, double deadline_s);

}  // namespace preflight
