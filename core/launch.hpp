// SPDX-License-Identifier: MIT
// What the launchers in the environment say about this process: Open MPI, Slurm, PMIx,
// MPICH/Hydra, torchrun. Pure functions over an EnvSnapshot, shared by the placement probe and
// the launch.env check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/facts.hpp"
#include "core/options.hpp"

namespace preflight {

/// One launcher's claim about this process. A field is nullopt when the launcher does not set
/// it; `errors` lists variables that are set but are not integers (the raw text kept).
struct LauncherClaim {
  std::string launcher;  // "openmpi", "slurm", "pmix", "hydra", "torchrun"
  std::optional<long long> rank, size, local_rank, local_size, node_rank, nodes;
  std::vector<std::string> variables;  // the variables it came from, "NAME=value"
  std::vector<std::string> errors;     // "OMPI_COMM_WORLD_RANK='x' is not an integer"
};

struct LaunchView {
  std::vector<LauncherClaim> launchers;  // innermost (the one that started this process) first
  /// RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE as the framework (torch.distributed) reads them.
  LauncherClaim framework;
  const LauncherClaim* active() const { return launchers.empty() ? nullptr : &launchers.front(); }
};

LaunchView detect_launchers(const EnvSnapshot& env);

/// Placement from the launchers and the options (--ranks-per-node, --expect-nodes win).
Placement placement_from(const LaunchView& view, const Options& options);

}  // namespace preflight
