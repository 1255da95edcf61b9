// SPDX-License-Identifier: MIT
#include "core/launch.hpp"
#include "probes/probe.hpp"

namespace preflight {

void probe_placement(const ProbeContext& ctx, RankFacts& facts) {
  // Set before the probes by the job run: MPI's view when MPI runs, and a launcher found gone or
  // out of this process's reach.
  const std::optional<MpiView> mpi = facts.placement.mpi;
  std::string launcher_gone = std::move(facts.placement.launcher_gone);
  std::string launcher_unreachable = std::move(facts.placement.launcher_unreachable);
  facts.placement = placement_from(detect_launchers(ctx.env), ctx.options);
  facts.placement.launcher_gone = std::move(launcher_gone);
  facts.placement.launcher_unreachable = std::move(launcher_unreachable);
  if (!mpi) return;
  // MPI's view is the truth of where this process sits; the variables stay in the environment
  // facts for launch.env to compare with it.
  facts.placement.mpi = mpi;
  facts.placement.rank = mpi->rank;
  facts.placement.world_size = mpi->size;
  facts.placement.local_rank = mpi->local_rank;
  facts.placement.local_ranks = mpi->local_size;
  if (!ctx.options.expect_nodes) facts.placement.nodes = mpi->nodes;
  facts.placement.source = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)";
  if (facts.placement.launcher == "none") facts.placement.launcher = mpi->singleton ? "mpi-singleton" : "mpi";
}

}  // namespace preflight
