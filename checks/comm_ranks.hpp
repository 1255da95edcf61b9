// SPDX-License-Identifier: MIT
// Shared by comm.barrier and comm.allreduce: which of the ranks that did not arrive are stuck (silent,
// or stopped in a phase before the collective) and which are alive and waiting in it, and what to
// look at on the host of a stuck rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/finding_parts.hpp"
#include "core/job.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"

namespace preflight::comm {

/// A rank waiting in a phase sends a heartbeat every half second; silent longer than this: stuck.
inline constexpr double kSilentStuckS = 1.5;

inline const RankStatus* status_of(const JobFacts& j, int rank) {
  for (const RankStatus& s : j.status) {
    if (s.rank == rank) return &s;
  }
  return nullptr;
}

struct Partition {
  std::vector<int> stuck;  // never heard, silent, or stopped before `phase`
  std::vector<int> alive;  // reached `phase` and still sending heartbeats
};

inline Partition partition(const JobFacts& j, const std::vector<int>& ranks, Phase phase) {
  Partition p;
  for (int r : ranks) {
    const RankStatus* s = status_of(j, r);
    const bool stuck = s == nullptr || !s->heard || !s->lost.empty() || s->silent_s > kSilentStuckS ||
                       static_cast<int>(s->last_phase) < static_cast<int>(phase);
    (stuck ? p.stuck : p.alive).push_back(r);
  }
  return p;
}

inline std::string describe(const JobFacts& j, const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (int r : ranks) parts.push_back(j.describe_rank(r));
  return join(parts, "; ");
}

/// What to look at on the host of a rank that stopped in `s.last_phase`.
inline std::string look_at(const JobFacts& j, int rank) {
  const RankStatus* s = status_of(j, rank);
  if (s == nullptr || !s->heard) {
    const std::string placed = s != nullptr && !s->host.empty() ? " (placed on " + s->host + ")" : std::string();
    return "rank " + std::to_string(rank) + placed +
           " was never heard from: check that the launcher started it (the mpirun/srun output, " +
           "`squeue -s`, the node's health) and that MPI can reach its host";
  }
  const std::string where =
      "rank " + std::to_string(rank) + " on " + (s->host.empty() ? std::string("its host") : s->host);
  if (s->lost == "ended") {
    return where + " ended in the " + to_string(s->last_phase) +
           " (its connection to rank 0 closed: the process died or was killed): the launcher's output names its exit "
           "or signal; on " +
           (s->host.empty() ? std::string("its host") : s->host) +
           ", `journalctl -k | grep -iE 'oom|killed process|segfault'`; a whole host gone: its console or BMC, `sinfo "
           "-R`";
  }
  if (s->lost == "unreachable") {
    return where + " stopped acknowledging rank 0's TCP connection in the " + to_string(s->last_phase) +
           ": its host is down or its network is cut (`ping` it from rank 0's host, its link state, its console or "
           "BMC)";
  }
  const std::string bt = "`gdb -p " + std::to_string(s->pid) + " -batch -ex 'thread apply all bt'` and `cat /proc/" +
                         std::to_string(s->pid) + "/stack` there";
  switch (s->last_phase) {
    case Phase::Init:
    case Phase::Probe:
      return where + " stopped while probing the node (GPU driver, topology, DNS): " + bt +
             "; a process in state D inside the NVIDIA driver points at the GPU (`dmesg | grep -i xid`, `nvidia-smi "
             "-q`)";
    case Phase::Reach: return where + " stopped in the TCP reachability test: " + bt + "; see net.reachability";
    case Phase::Gather:
      return where + " stopped sending its facts to rank 0 (MPI between its host and rank 0's): " + bt;
    case Phase::Barrier:
    case Phase::Allreduce:
      return where + " stopped in the " + to_string(s->last_phase) +
             " (MPI or NCCL between its host and the others): " + bt;
    case Phase::Report: return where + " had finished and waits for the report: " + bt;
  }
  return where + ": " + bt;
}

/// A finding's {look_at}: look_at() for the first `most` ranks (the remedy stays readable with many),
/// spliced into its fix as a template parameter (the words are the fix, not data), and the ranks it
/// names as data: `look_at_ranks`, each with its host, pid, the phase it was last heard in, and what
/// rank 0's liveness watch saw ("ended", "unreachable").
inline void add_look_at(nlohmann::json& params, const JobFacts& j, const std::vector<int>& ranks,
                        std::size_t most = 4) {
  std::vector<std::string> words;
  nlohmann::json named = nlohmann::json::array();
  for (std::size_t k = 0; k < ranks.size() && k < most; ++k) {
    words.push_back(look_at(j, ranks[k]));
    nlohmann::json r = {{"rank", ranks[k]}};
    if (const RankStatus* s = status_of(j, ranks[k])) {
      r["host"] = s->host;
      r["heard"] = s->heard;
      if (s->heard) {
        r["pid"] = s->pid;
        r["phase"] = to_string(s->last_phase);
      }
      if (!s->lost.empty()) r["lost"] = s->lost;
    }
    named.push_back(std::move(r));
  }
  std::string text = join(words, ". ");
  if (ranks.size() > most) text += ". The same for the other " + std::to_string(ranks.size() - most) + " ranks";
  params["look_at"] = template_param(std::move(text));
  params["look_at_ranks"] = std::move(named);
}

/// The launcher claims more ranks than preflight could connect (srun without --mpi=pmix, an mpirun of
/// another MPI than preflight's): the story launch.ranks tells, for the collectives that could not run.
/// The two ways it happens, as message templates over unconnected()'s parameters.
#define PREFLIGHT_COMM_NOT_CONNECTED                                                                           \
  "the launcher ({launcher}) claims {world} ranks, but preflight ran as a single process: its ranks were not " \
  "connected to each other (e.g. srun without --mpi=pmix); see launch.ranks"
#define PREFLIGHT_COMM_MPI_WORLD_OF_ONE                                                                           \
  "MPI started as a world of 1 while {variable}={size} ({launcher}): the ranks were not connected to each other " \
  "(e.g. srun without --mpi=pmix); see launch.ranks"
#define PREFLIGHT_COMM_CONNECT_FIX                                                                                 \
  "Start preflight so its ranks connect: `srun --mpi=pmix …` (see `srun --mpi=list`), or the mpirun of the MPI " \
  "preflight was built with."

struct Unconnected {
  bool mpi_world_of_one = false;  // PREFLIGHT_COMM_MPI_WORLD_OF_ONE, else PREFLIGHT_COMM_NOT_CONNECTED
  nlohmann::json params;          // the template's parameters
};

/// The ranks a launcher claims that preflight could not connect, or nullopt. Only a launcher that
/// started this process counts (LaunchView::active, and the world size the placement took from it):
/// variables left in the environment (OMPI_COMM_WORLD_* without mpirun's PMIx variables, a Slurm
/// batch script's) make no job, so this process alone is a world of one and the collectives SKIP.
inline std::optional<Unconnected> unconnected(const JobFacts& j) {
  if (j.ranks.empty()) return std::nullopt;
  const RankFacts& lead = j.ranks.front();
  if (j.source == "none" && j.world_size > 1) {
    const std::string launcher = lead.placement.launcher.empty() ? std::string("?") : lead.placement.launcher;
    return Unconnected{false, {{"launcher", launcher}, {"world", j.world_size}}};
  }
  if (j.source == "mpi" && j.world_size == 1) {
    const LaunchView view = detect_launchers(lead.env);
    if (const LauncherClaim* active = view.active(); active != nullptr && active->size && active->size->value > 1) {
      return Unconnected{
          true, {{"variable", active->size->variable}, {"size", active->size->value}, {"launcher", active->launcher}}};
    }
  }
  return std::nullopt;
}

}  // namespace preflight::comm
