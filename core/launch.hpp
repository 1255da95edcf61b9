// SPDX-License-Identifier: MIT
// What the launchers in the environment say about this process: Open MPI, Slurm, PMIx,
// MPICH/Hydra (and Intel MPI), MVAPICH2, torchrun. Pure functions over an EnvSnapshot, shared by
// the placement probe and the launch.env check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/env.hpp"
#include "core/facts.hpp"
#include "core/options.hpp"

namespace preflight {

/// One number a launcher claims, with the variable it was read from (for messages: "RANK=0").
struct Claimed {
  std::int64_t value = 0;
  std::string variable;
};

/// How a claim relates to the launcher that started this process (the first claim that is not Stale).
enum class ClaimRole {
  Active,  // the innermost launcher: it started this process
  Outer,   // started the active launcher (srun starting torchrun): describes the agent, not this process
  Stale,   // an enclosing allocation's variables (Slurm's batch step under mpirun, or the batch script itself): not
           // about this process
  Peer,    // a second launcher at the same level (PMI_RANK next to OMPI_COMM_WORLD_RANK): must agree
};
const char* to_string(ClaimRole role);

/// One launcher's claim about this process. A field is nullopt when the launcher does not set it
/// (or set it to something that is not a non-negative integer: then `errors` says so).
struct LauncherClaim {
  std::string launcher;  // "torchrun", "openmpi", "hydra", "mvapich2", "slurm", "pmix"; "framework"
  ClaimRole role = ClaimRole::Active;
  std::optional<Claimed> rank, size, local_rank, local_size, node_rank, nodes;
  std::vector<std::string> variables;  // every variable it was read from, "NAME=value"
  std::vector<std::string> errors;     // "OMPI_COMM_WORLD_RANK='x' is not a non-negative integer"
  /// Why no launch of this launcher started this process, though its variables are set: Slurm's
  /// batch script ("no SLURM_STEP_ID: the job's batch script"; the claim is the allocation's), or
  /// Open MPI's variables without the PMIx ones every mpirun gives its processes (left in the
  /// environment). Such a claim is never the active one.
  std::string outside_step;
};

struct LaunchView {
  std::vector<LauncherClaim> launchers;  // innermost (the one that started this process) first
  /// RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE as the framework (torch.distributed) reads them.
  LauncherClaim framework;
  /// The launcher that started this process; nullptr when none did (alone, or in a Slurm batch
  /// script, whose variables describe the allocation).
  const LauncherClaim* active() const {
    for (const LauncherClaim& c : launchers) {
      if (c.role == ClaimRole::Active) return &c;
    }
    return nullptr;
  }
};

LaunchView detect_launchers(const EnvSnapshot& env);

/// Placement from the launchers and the options (--ranks-per-node, --expect-nodes win).
Placement placement_from(const LaunchView& view, const Options& options);

/// Slurm's tasks-per-node list, expanded: "8(x2),4" -> {8, 8, 4}. nullopt when malformed or when
/// it expands to more than kMaxTasksPerNodeEntries nodes.
inline constexpr std::size_t kMaxTasksPerNodeEntries = 1'000'000;
std::optional<std::vector<std::int64_t>> parse_tasks_per_node(std::string_view text);

/// Evidence form: {"launcher", "role", "rank", "size", ..., "variables", "errors"}.
void to_json(nlohmann::json& j, const LauncherClaim& claim);

}  // namespace preflight
