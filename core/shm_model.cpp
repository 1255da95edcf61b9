// SPDX-License-Identifier: MIT
#include "core/shm_model.hpp"

#include <algorithm>

#include "core/env_grammar.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

/// The value NCCL will use for an integer variable, or its default.
std::int64_t nccl_int(const EnvSnapshot& env, std::string_view name, std::int64_t fallback) {
  const auto value = env.get(name);
  return value ? nccl_int_value(*value).value_or(fallback) : fallback;
}

}  // namespace

ShmNeed shm_need(const Placement& placement, const Options& options, const EnvSnapshot& env) {
  ShmNeed need;
  need.local_ranks = std::max(1, placement.local_ranks);
  // Unknown node count counts as multi-node: the worst case for the node being checked.
  need.network_transport = placement.nodes.value_or(0) != 1;
  // SHM transport segments live in /dev/shm unless NCCL can use cuMem host allocations (NCCL ≥ 2.24
  // with a CUDA 12.6+ driver, and get_mempolicy allowed in the container); without facts about the
  // GPU stack, assume it cannot. Only ranks that share a node use it.
  need.shm_transport = need.local_ranks > 1 && nccl_int(env, "NCCL_SHM_DISABLE", 0) != 1 &&
                       nccl_int(env, "NCCL_CUMEM_HOST_ENABLE", -1) != 1;
  const std::int64_t buffsize = nccl_int(env, "NCCL_BUFFSIZE", static_cast<std::int64_t>(kNcclDefaultBuffSize));
  const std::uint64_t segment =
      kNcclShmSegmentFixedBytes + (buffsize > 0 ? static_cast<std::uint64_t>(buffsize) : kNcclDefaultBuffSize);

  const auto comms = static_cast<std::uint64_t>(std::max(1, options.nccl_communicators));
  need.proxy_per_rank = need.network_transport ? kNcclProxyPoolBytes * comms : 0;
  need.shm_transport_per_rank = need.shm_transport ? segment * kNcclShmSegmentsPerRank * comms : 0;
  need.dataloader_per_rank = options.shm_dataloader_bytes;
  need.per_rank = need.proxy_per_rank + need.shm_transport_per_rank + need.dataloader_per_rank;
  need.node_total = need.per_rank * static_cast<std::uint64_t>(need.local_ranks);

  need.formula = std::to_string(need.local_ranks) + " local ranks × (proxy pool " + format_bytes(need.proxy_per_rank) +
                 " + SHM transport " + format_bytes(need.shm_transport_per_rank) + " + DataLoader " +
                 format_bytes(need.dataloader_per_rank) + ") = " + format_bytes(need.node_total);
  return need;
}

std::uint64_t recommended_shm_bytes(std::uint64_t need) {
  constexpr std::uint64_t kGiB = 1ull << 30;
  const std::uint64_t padded = need + need / 2;
  return std::max<std::uint64_t>(kGiB, (padded + kGiB - 1) / kGiB * kGiB);
}

}  // namespace preflight
