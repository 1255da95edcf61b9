// SPDX-License-Identifier: MIT
// What a checkpoint is and who saves it: 2 B/param of bf16/fp16 weights and 12 B/param of
// optimizer state (fp32 master weights + Adam m and v), split over tensor/pipeline-parallel shards
// and ZeRO stages by the frameworks' save rules. Shared by host.memory (the host memory the ranks
// of a node hold while they save) and host.disk (the bytes they write). The model and its sources
// are in host.memory's explain text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/facts.hpp"
#include "core/options.hpp"

namespace preflight {

inline constexpr double kCheckpointWeightBytes = 2;      // bf16/fp16 weights, per parameter
inline constexpr double kCheckpointOptimizerBytes = 12;  // fp32 master weights + Adam m and v, per parameter

/// A byte count as a whole number: rounded up, 0 for negatives, UINT64_MAX where it does not fit.
std::uint64_t saturate_bytes(double bytes);

/// "7B", "1.3B", "125M": parameter counts as people write them.
std::string format_params(std::uint64_t n);

/// The job's shape and what its ranks save at a checkpoint.
struct CheckpointPlan {
  int local_ranks = 1;
  int world_size = 1;
  bool world_known = false;  // from the launcher or --expect-world-size, not only this node's ranks
  int tp = 1, pp = 1;        // --tensor-parallel, --pipeline-parallel
  bool model_parallel = false;
  std::optional<std::uint64_t> params;
  int zero_stage = 0;
  bool stage_defaulted = false;  // --model-params without --zero-stage: ZeRO-0 assumed

  int mp() const { return tp * pp; }
  bool divides() const { return world_size % mp() == 0; }
  int dp() const;
  /// Parameters one model-parallel rank holds: its tensor slice of its pipeline stage.
  double shard() const;

  /// The most ranks of one node that are data-parallel rank 0 (the model-state savers), in
  /// Megatron-LM's rank order (tensor fastest, then data, then pipeline: "tp-dp-pp").
  int savers_per_node() const;
  /// Bytes a model-state saver and any other rank save, for `stage`.
  double saver_bytes(int stage) const;
  double other_bytes(int stage) const;
  /// The ranks of a node that save model states (every rank under ZeRO-3).
  int savers(int stage) const { return stage == 3 ? local_ranks : savers_per_node(); }
  /// What the ranks of the busiest node save at one checkpoint, for `stage`.
  double node_bytes(int stage) const;
  /// The whole job's checkpoint: every parameter's weights and optimizer state once, P × (2 + 12) B,
  /// whatever the stage (the stages only move who writes which part).
  double job_bytes() const;
  /// node_bytes() as arithmetic: "1 × 7B × (2 + 12) B", "8 × 70B × 14/64 B".
  std::string node_formula() const;
};

/// The plan for this node: local ranks from the placement, the world from the launcher or
/// --expect-world-size (alone and without it: the smallest world that holds this node and one
/// model replica), the model from --model-params, --zero-stage, --tensor-parallel, --pipeline-parallel.
CheckpointPlan checkpoint_plan(const Placement& placement, const Options& options);

}  // namespace preflight
