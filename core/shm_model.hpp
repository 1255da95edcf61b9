// SPDX-License-Identifier: MIT
// How much /dev/shm the ranks of one node need (NCCL's segments: its proxy ops pool, NCCL's
// src/proxy.cc, and the SHM transport's buffers, src/transport/shm.cc; plus a DataLoader budget).
// Shared by the shm probe (it sizes the allocation test) and the shm.capacity check (it judges the result).
#pragma once

#include <cstdint>
#include <string>

#include "core/env.hpp"
#include "core/facts.hpp"
#include "core/options.hpp"

namespace preflight {

/// sizeof(struct ncclProxyOpsPool) for NCCL ≥ 2.26 on x86-64: 232-byte ncclProxyOp ×
/// MAX_OPS_PER_PEER (2·64·2·8) × NCCL_MAX_LOCAL_RANKS (72). One pool per rank per communicator
/// whose connections go through the network proxy.
inline constexpr std::uint64_t kNcclProxyPoolBytes = 232ull * 2048 * 72;
/// One SHM-transport segment with default buffers: ncclRecvMem 4 KiB + LL 512 KiB + LL128
/// 120·640·8·8 B + Simple NCCL_BUFFSIZE (4 MiB) = 9,637,888 B (the size in NCCL's own error reports).
inline constexpr std::uint64_t kNcclShmSegmentFixedBytes = 4096ull + 524288ull + 4915200ull;
inline constexpr std::uint64_t kNcclDefaultBuffSize = 4ull << 20;
/// SHM connections each rank receives on: ring neighbour + tree link, on each of 2 channels.
inline constexpr int kNcclShmSegmentsPerRank = 4;
/// NCCL's documentation recommends at least this much /dev/shm for containers (--shm-size=1g).
inline constexpr std::uint64_t kNcclRecommendedShmBytes = 1ull << 30;

struct ShmNeed {
  int local_ranks = 1;
  bool network_transport = false;  // proxy ops pools
  bool shm_transport = false;      // SHM segments in /dev/shm (cuMem host allocations unavailable)
  std::uint64_t proxy_per_rank = 0;
  std::uint64_t shm_transport_per_rank = 0;
  std::uint64_t dataloader_per_rank = 0;
  std::uint64_t per_rank = 0;
  std::uint64_t node_total = 0;
  std::string formula;  // the arithmetic, for evidence and explain
};

ShmNeed shm_need(const Placement& placement, const Options& options, const EnvSnapshot& env);

/// A --shm-size to recommend for a need: 1.5× rounded up to whole GiB, at least 1 GiB.
std::uint64_t recommended_shm_bytes(std::uint64_t need);

}  // namespace preflight
