// SPDX-License-Identifier: MIT
// The launchers' variables (Open MPI, Slurm, PMIx, Hydra, MVAPICH2, torchrun): detect_launchers,
// placement_from, parse_tasks_per_node (SLURM_TASKS_PER_NODE), and shm_need over the same
// environment. Input: "NAME=value" lines.
#include <nlohmann/json.hpp>

#include "core/launch.hpp"
#include "core/shm_model.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

namespace {
void check_claimed(const std::optional<Claimed>& c) {
  if (c) FUZZ_CHECK(c->value >= 0 && !c->variable.empty());  // only non-negative integers are claims
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const EnvSnapshot env(fuzz::env_lines(in));
  const LaunchView view = detect_launchers(env);
  for (const LauncherClaim& c : view.launchers) {
    for (const auto* f : {&c.rank, &c.size, &c.local_rank, &c.local_size, &c.node_rank, &c.nodes}) check_claimed(*f);
    nlohmann::json j;
    to_json(j, c);
  }
  Options options;
  const Placement p = placement_from(view, options);
  (void)shm_need(p, options, env);
  for (const auto& [name, value] : env.all()) {
    if (const auto counts = parse_tasks_per_node(value)) {
      for (std::int64_t n : *counts) FUZZ_CHECK(n >= 0);
    }
  }
  return 0;
}
