// SPDX-License-Identifier: MIT
#include "core/checkpoint_model.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/text.hpp"

namespace preflight {

std::uint64_t saturate_bytes(double bytes) {
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(std::ceil(std::max(bytes, 0.0)));
}

std::string format_params(std::uint64_t n) {
  static constexpr std::pair<double, const char*> kScales[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& [scale, suffix] : kScales) {
    if (static_cast<double>(n) >= scale) {
      std::string s = fixed(static_cast<double>(n) / scale, 1);
      if (s.ends_with(".0")) s.resize(s.size() - 2);
      return s + suffix;
    }
  }
  return std::to_string(n);
}

int CheckpointPlan::dp() const { return std::max(1, world_size / mp()); }

double CheckpointPlan::shard() const { return params ? static_cast<double>(*params) / mp() : 0; }

int CheckpointPlan::savers_per_node() const {
  const int nodes = (world_size + local_ranks - 1) / local_ranks;
  int most = 0;
  for (int node = 0; node < nodes; ++node) {
    int count = 0;
    for (int r = node * local_ranks; r < std::min(world_size, (node + 1) * local_ranks); ++r) {
      if ((r / tp) % dp() == 0) ++count;
    }
    most = std::max(most, count);
    if (most == local_ranks) break;
  }
  return most;
}

double CheckpointPlan::saver_bytes(int stage) const {
  if (!params) return 0;
  if (stage == 0) return shard() * (kCheckpointWeightBytes + kCheckpointOptimizerBytes);
  if (stage < 3) return shard() * kCheckpointWeightBytes + shard() * kCheckpointOptimizerBytes / dp();
  return shard() * (kCheckpointWeightBytes + kCheckpointOptimizerBytes) / dp();
}

double CheckpointPlan::other_bytes(int stage) const {
  if (!params || stage == 0) return 0;
  return stage < 3 ? shard() * kCheckpointOptimizerBytes / dp() : saver_bytes(stage);
}

double CheckpointPlan::node_bytes(int stage) const {
  const int s = savers(stage);
  return s * saver_bytes(stage) + (local_ranks - s) * other_bytes(stage);
}

double CheckpointPlan::job_bytes() const {
  return params ? static_cast<double>(*params) * (kCheckpointWeightBytes + kCheckpointOptimizerBytes) : 0;
}

std::string CheckpointPlan::node_formula() const {
  if (!params) return "0 B";
  const std::string m = mp() > 1 ? "/" + std::to_string(mp()) : std::string();
  const std::string p = format_params(*params);
  const std::string w = std::to_string(world_size);
  const std::string l = std::to_string(local_ranks);
  const std::string s = std::to_string(savers(zero_stage));
  if (zero_stage == 0) return s + " × " + p + m + " × (2 + 12) B";
  if (zero_stage < 3) return s + " × " + p + m + " × 2 B + " + l + " × " + p + " × 12/" + w + " B";
  return l + " × " + p + " × 14/" + w + " B";
}

CheckpointPlan checkpoint_plan(const Placement& placement, const Options& options) {
  CheckpointPlan plan;
  plan.local_ranks = std::max(1, placement.local_ranks);
  plan.tp = options.tensor_parallel.value_or(1);
  plan.pp = options.pipeline_parallel.value_or(1);
  plan.model_parallel = plan.mp() > 1;
  plan.world_known = placement.world_size > 1 || options.expect_world_size.has_value();
  // The world holds at least this node's ranks, even when preflight runs alone with --ranks-per-node.
  plan.world_size = std::max({plan.local_ranks, placement.world_size, options.expect_world_size.value_or(1)});
  // Alone, without --expect-world-size: the smallest world that holds this node and one model replica.
  if (!plan.world_known && !plan.divides()) plan.world_size = (plan.world_size + plan.mp() - 1) / plan.mp() * plan.mp();
  plan.params = options.model_params;
  plan.zero_stage = options.zero_stage.value_or(0);
  plan.stage_defaulted = plan.params && !options.zero_stage;
  return plan;
}

}  // namespace preflight
